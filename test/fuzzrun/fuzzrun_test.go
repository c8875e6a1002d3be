package fuzzrun

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestCorpusFilesRoundTrip(t *testing.T) {
	t.Chdir(t.TempDir())
	args := [][]byte{[]byte(`{"a":"\u00e9"}`), {0, 0xff, '\n', '"'}, nil}
	name, err := save("FuzzX", args)
	require.NoError(t, err)
	assert.Equal(t, filepath.Join("testdata", "fuzz", "FuzzX"), filepath.Dir(name))

	got, err := readCorpus(filepath.Join("testdata", "fuzz", "FuzzX"))
	require.NoError(t, err)
	require.Len(t, got, 1)
	assert.Equal(t, [][]byte{args[0], args[1], {}}, got[0])
}

func TestParseCorpusFileReadsWhatGoWrites(t *testing.T) {
	got, err := parseCorpusFile([]byte("go test fuzz v1\n[]byte(\"a\\x00\")\nstring(`raw`)\n"))
	require.NoError(t, err)
	assert.Equal(t, [][]byte{[]byte("a\x00"), []byte("raw")}, got)

	for _, bad := range []string{"", "go test fuzz v1\n", "go test fuzz v2\n[]byte(\"\")", "go test fuzz v1\nint(1)"} {
		_, err := parseCorpusFile([]byte(bad))
		assert.Error(t, err, "%q", bad)
	}
}

func TestRunTriesTheSameInputsEveryTime(t *testing.T) {
	t.Chdir(t.TempDir())
	require.NoError(t, os.MkdirAll(filepath.Join("testdata", "fuzz", "FuzzX"), 0o755))
	_, err := save("FuzzX", [][]byte{[]byte(`{"saved":true}`), []byte("b")})
	require.NoError(t, err)
	tg := Target{Name: "FuzzX", Seeds: [][][]byte{{[]byte(`{"a":[1,2]}`), []byte("x")}}, Inputs: 200}
	var first, second [][][]byte
	Run(t, tg, func(_ *testing.T, args [][]byte) { first = append(first, args) })
	Run(t, tg, func(_ *testing.T, args [][]byte) { second = append(second, args) })
	require.Len(t, first, 202, "the seed, the saved input, then the randomized ones")
	assert.Equal(t, first, second)
	assert.Equal(t, []byte(`{"saved":true}`), first[1][0])
	changed := 0
	for _, in := range first[2:] {
		require.Len(t, in, 2, "every input has the target's arguments")
		if string(in[0]) != `{"a":[1,2]}` {
			changed++
		}
	}
	assert.Greater(t, changed, 150, "most inputs differ from their seed")
}

func TestChoices(t *testing.T) {
	c := Choices{Data: []byte{7, 2}}
	assert.Equal(t, 1, c.Pick(3))
	assert.Equal(t, 2, c.Next())
	assert.Equal(t, 0, c.Pick(5), "the first choice once the bytes run out")
}
