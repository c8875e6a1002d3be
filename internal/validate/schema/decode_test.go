package schema

import (
	"bytes"
	"encoding/json"
	"io"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lockstep-dev/lockstep/test/fuzzrun"
)

// stdDecode decodes as encoding/json does with UseNumber, the behaviour
// decodeJSON copies.
func stdDecode(data []byte) (any, error) {
	d := json.NewDecoder(bytes.NewReader(data))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return nil, err
	}
	if _, err := d.Token(); err != io.EOF {
		return nil, io.ErrUnexpectedEOF // anything: data after the value
	}
	return v, nil
}

// decodeCases are inputs where a hand-written decoder tends to go wrong.
var decodeCases = []string{
	`{}`, `[]`, `""`, `0`, `-0`, `1.5e+10`, `-1.25E-3`, `true`, `false`, `null`,
	` {"a" : [1, 2 , {"b":null}] } `, "\t\n\r{\"a\":1}\n",
	`{"a":1,"a":2}`, `{"":""}`,
	`"\"\\\/\b\f\n\r\t"`, `"\u00e9\u20AC"`, `"\ud83d\ude00"`, `"\ud83d"`, `"\ude00"`, `"\ud83dx"`, `"\ud83d\u0041"`,
	`"\ud83d\u12"`, `"\uZZZZ"`, `"\u12"`, `"\x"`, "\"a\x01\"", "\"\xff\xfe\"", "\"caf\xc3\xa9\"", "\"\xef\xbf\xbd\"",
	`01`, `-`, `-a`, `1.`, `.5`, `1e`, `1e+`, `+1`, `1.5.5`, `0x10`, `Infinity`, `NaN`,
	`tru`, `nul`, `falsey`, `[1,]`, `[,1]`, `{"a":1,}`, `{,}`, `{"a" 1}`, `{a:1}`, `{"a":}`, `[`, `{`, `{"a"`, `"abc`,
	`[1 2]`, `{"a":1 "b":2}`, `{} {}`, `[] x`, ``, ` `, `{"a":[1,{"b":[true,false,null,"x"]}]}`,
	strings.Repeat("[", 100) + strings.Repeat("]", 100),
}

func TestDecodeJSONMatchesEncodingJSON(t *testing.T) {
	for _, in := range decodeCases {
		t.Run(in, func(t *testing.T) {
			want, wantErr := stdDecode([]byte(in))
			got, _, err := decodeJSON([]byte(in))
			if wantErr != nil {
				assert.Error(t, err, "encoding/json: %v", wantErr)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, want, got)
		})
	}
}

func TestDecodeJSONDepth(t *testing.T) {
	ok := strings.Repeat("[", maxDecodeDepth) + strings.Repeat("]", maxDecodeDepth)
	_, beyond, err := decodeJSON([]byte(ok))
	require.NoError(t, err)
	assert.True(t, beyond, "deeper than maxNesting")

	_, _, err = decodeJSON([]byte(strings.Repeat("[", maxDecodeDepth+1) + strings.Repeat("]", maxDecodeDepth+1)))
	assert.ErrorContains(t, err, "exceeded max depth")

	_, beyond, err = decodeJSON([]byte(strings.Repeat(`{"a":`, maxNesting) + `1` + strings.Repeat("}", maxNesting)))
	require.NoError(t, err)
	assert.False(t, beyond, "exactly maxNesting levels")
}

func TestDecodeJSONNumberLimits(t *testing.T) {
	for in, want := range map[string]bool{
		`[1, 2.5, -3e10]`:           false,
		`[1e10000, 1e-10000]`:       false,
		`[1e10001]`:                 true,
		`[1E-10001]`:                true,
		`[1e+99999999999999999999]`: true,
		`[` + strings.Repeat("9", maxNumberLength) + `]`:   false,
		`[` + strings.Repeat("9", maxNumberLength+1) + `]`: true,
	} {
		_, beyond, err := decodeJSON([]byte(in))
		require.NoError(t, err, in)
		assert.Equal(t, want, beyond, in)
	}
}

func TestDecodeJSONErrors(t *testing.T) {
	for in, want := range map[string]string{
		`{"a" 1}`: `invalid character '1' after object key (at byte 5)`,
		`[1,]`:    `invalid character ']' looking for the beginning of a value (at byte 3)`,
		`{"a":1`:  `unexpected end of JSON input`,
		"\"a\x01": `invalid character '\x01' in string literal (at byte 2)`,
		`"\q"`:    `invalid character 'q' in string escape code (at byte 2)`,
		`'a'`:     `invalid character '\'' looking for the beginning of a value (at byte 0)`,
		"\xff":    `invalid character '\xff' looking for the beginning of a value (at byte 0)`,
	} {
		_, _, err := decodeJSON([]byte(in))
		assert.EqualError(t, err, want, in)
	}
}

// decodeTarget checks decodeJSON against encoding/json on any input.
var decodeTarget = fuzzrun.Target{Name: "FuzzDecodeJSON", Inputs: 4000}

func init() {
	for _, in := range decodeCases {
		decodeTarget.Seeds = append(decodeTarget.Seeds, [][]byte{[]byte(in)})
	}
}

func FuzzDecodeJSON(f *testing.F) {
	fuzzrun.Add(f, decodeTarget)
	f.Fuzz(checkDecodeJSON)
}

func TestDecodeJSONRandomized(t *testing.T) {
	fuzzrun.Run(t, decodeTarget, func(t *testing.T, in [][]byte) { checkDecodeJSON(t, in[0]) })
}

func checkDecodeJSON(t *testing.T, data []byte) {
	want, wantErr := stdDecode(data)
	got, _, err := decodeJSON(data)
	if (wantErr == nil) != (err == nil) {
		t.Fatalf("encoding/json error %v, decodeJSON error %v", wantErr, err)
	}
	if err == nil {
		assert.Equal(t, want, got)
	}
}
