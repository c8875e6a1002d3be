package admission

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestMembers(t *testing.T) {
	tests := []struct {
		name string
		raw  string
		want map[string]string // name (as written) → raw value
		err  string
	}{
		{name: "empty object", raw: ` { } `, want: map[string]string{}},
		{name: "every kind of value", raw: `{"s":"a\"}b","n":-1.5e3,"t":true,"z":null,"o":{"x":[1,{"y":"]"}]},"a":[]}`,
			want: map[string]string{"s": `"a\"}b"`, "n": `-1.5e3`, "t": `true`, "z": `null`, "o": `{"x":[1,{"y":"]"}]}`, "a": `[]`}},
		{name: "whitespace everywhere", raw: "{\n\t\"a\" : 1 ,\r\n \"b\":\"c\"\n}", want: map[string]string{"a": `1`, "b": `"c"`}},
		{name: "escaped name", raw: `{"sp\u0065c":1}`, want: map[string]string{`sp\u0065c`: `1`}},
		{name: "cut in a value", raw: `{"spec":`, err: "unexpected end"},
		{name: "cut in a string", raw: `{"spec":"abc`, err: "unexpected end"},
		{name: "cut in an object", raw: `{"spec":{"a":[1,2}`, err: "unexpected end"},
		{name: "cut after a member", raw: `{"a":1`, err: "unexpected end"},
		{name: "not an object", raw: `[1]`, err: "not a JSON object"},
		{name: "empty input", raw: ``, err: "not a JSON object"},
		{name: "missing value", raw: `{"a":,"b":1}`, err: "where a value belongs"},
		{name: "junk after a member", raw: `{"a":1 "b":2}`, err: "after an object member"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := map[string]string{}
			err := members([]byte(tt.raw), func(m member) bool {
				got[string(m.Name)] = string(m.Value)
				assert.Equal(t, m.Start, len(tt.raw[:m.Start]), "start")
				assert.Equal(t, byte('"'), tt.raw[m.Start], "a member starts with its name's quote")
				assert.Equal(t, string(m.Value), tt.raw[m.End-len(m.Value):m.End], "a member ends with its value")
				return true
			})
			if tt.err != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tt.err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
		})
	}
}

func TestMembersStopsWhenAsked(t *testing.T) {
	var seen []string
	require.NoError(t, members([]byte(`{"a":1,"b":2,"c":3}`), func(m member) bool {
		seen = append(seen, string(m.Name))
		return string(m.Name) != "b"
	}))
	assert.Equal(t, []string{"a", "b"}, seen)
}

func TestWithoutMember(t *testing.T) {
	tests := []struct{ name, raw, want string }{
		{"first of several", `{"managedFields":[{"a":"}"}],"name":"db","uid":"u"}`, `{"name":"db","uid":"u"}`},
		{"in the middle", `{"name":"db", "managedFields" : [] , "uid":"u"}`, `{"name":"db","uid":"u"}`},
		{"last", `{"name":"db","managedFields":[{"f":{}}]}`, `{"name":"db"}`},
		{"last, with whitespace", "{\"name\":\"db\" ,\n \"managedFields\":[] \n}", "{\"name\":\"db\"}"},
		{"the only member", `{"managedFields":[]}`, `{}`},
		{"spelled with an escape", `{"name":"db","m\u0061nagedFields":7}`, `{"name":"db"}`},
		{"twice", `{"managedFields":[],"name":"db", "uid":"u","managedFields":7}`, `{"name":"db","uid":"u"}`},
		{"only members of that name", `{"managedFields":1,"managedFields":2}`, `{}`},
		{"absent", `{"name":"db"}`, `{"name":"db"}`},
		{"only as a nested name", `{"labels":{"managedFields":"x"}}`, `{"labels":{"managedFields":"x"}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := withoutMember([]byte(tt.raw), "managedFields")
			require.NoError(t, err)
			assert.Equal(t, tt.want, string(got))
			assert.True(t, json.Valid(got), "still JSON")
		})
	}
}

func TestSplitDecodesEscapedNames(t *testing.T) {
	o, err := split([]byte(`{"sp\u0065c":{"planName":"small"},"metadata":{"name":"db"}}`), "object")
	require.NoError(t, err)
	assert.JSONEq(t, `{"planName":"small"}`, string(o.Spec.last), "a name spelled with an escape is the same name")
	_, meta, err := o.meta("object")
	require.NoError(t, err)
	assert.Equal(t, "db", meta.Name)

	_, err = split([]byte(`{"spec":{"planName":`), "object")
	assert.ErrorContains(t, err, "decoding the object in the admission request")
}
