package parametersfrom

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// testKeys makes keys of the given ids (each key its id repeated to 32
// bytes) with current first, the keys of digests until the test ends.
func testKeys(t *testing.T, current string, others ...string) *Keys {
	t.Helper()
	byID := map[string][]byte{}
	for _, id := range append([]string{current}, others...) {
		byID[id] = []byte(strings.Repeat(id, minKeyBytes/len(id)+1))
	}
	k, err := NewKeys(current, byID)
	require.NoError(t, err)
	prev := UseKeys(k)
	t.Cleanup(func() { UseKeys(prev) })
	return k
}

// legacy is a digest as lockstep made them before they were keyed.
func legacy(canonical string) string {
	sum := sha256.Sum256([]byte(canonical))
	return hex.EncodeToString(sum[:])
}

func TestDigest(t *testing.T) {
	testKeys(t, "k1")
	a, err := Digest([]byte(`{"b": 1, "a": {"y": "x", "x": [1, 2]}}`))
	require.NoError(t, err)
	b, err := Digest([]byte(`{"a":{"x":[1,2],"y":"x"},"b":1}`))
	require.NoError(t, err)
	assert.Equal(t, a, b, "key order and spacing do not matter")
	assert.True(t, strings.HasPrefix(a, "hmac-sha256:k1:"), "the digest names its key: %s", a)
	c, err := Digest([]byte(`{"a":{"x":[1,2],"y":"x"},"b":2}`))
	require.NoError(t, err)
	assert.NotEqual(t, a, c)
	empty, err := Digest(nil)
	require.NoError(t, err)
	braces, err := Digest([]byte(`{}`))
	require.NoError(t, err)
	assert.Equal(t, empty, braces, "no parameters are {}")
	_, err = Digest([]byte(`[1]`))
	assert.Error(t, err)
}

// A digest cannot be reproduced from the parameters without the key: not
// as a plain hash, not under another key; with the key, it is the
// HMAC-SHA256 of the parameters' canonical form.
func TestDigestNeedsTheKey(t *testing.T) {
	const params = `{"password":"hunter2","size":2}`
	k := testKeys(t, "k1")
	d, err := Digest([]byte(params))
	require.NoError(t, err)
	sum := strings.TrimPrefix(d, "hmac-sha256:k1:")
	assert.NotEqual(t, legacy(params), sum, "not the plain SHA-256 a reader of status could test guesses against")
	assert.NotContains(t, d, legacy(params))

	mac := hmac.New(sha256.New, k.byID["k1"])
	mac.Write([]byte(params))
	assert.Equal(t, hex.EncodeToString(mac.Sum(nil)), sum, "the HMAC under lockstep's key")

	testKeys(t, "k1-other") // the same parameters elsewhere, under another key
	other, err := Digest([]byte(params))
	require.NoError(t, err)
	assert.NotEqual(t, sum, strings.TrimPrefix(other, "hmac-sha256:k1-other:"))
}

func TestVerify(t *testing.T) {
	const params, otherParams = `{"password":"hunter2","size":2}`, `{"password":"guess","size":2}`
	testKeys(t, "old")
	underOld, err := Digest([]byte(params))
	require.NoError(t, err)
	testKeys(t, "gone")
	underGone, err := Digest([]byte(params))
	require.NoError(t, err)
	testKeys(t, "new", "old") // rotated: "old" kept, "gone" removed
	underNew, err := Digest([]byte(params))
	require.NoError(t, err)

	tests := []struct {
		name   string
		digest string
		params string
		want   Verdict
	}{
		{name: "under the current key, same", digest: underNew, params: params, want: Same},
		{name: "under the current key, other parameters", digest: underNew, params: otherParams, want: Different},
		{name: "under an older key kept, same", digest: underOld, params: params, want: Same},
		{name: "under an older key kept, other parameters", digest: underOld, params: otherParams, want: Different},
		{name: "under a key removed", digest: underGone, params: params, want: Unknown},
		{name: "from before digests were keyed, same", digest: legacy(params), params: params, want: Same},
		{name: "from before digests were keyed, other parameters", digest: legacy(params), params: otherParams, want: Different},
		{name: "not a digest", digest: "abc", params: params, want: Unknown},
		{name: "a keyed digest cut short", digest: underNew[:len(underNew)-2], params: params, want: Unknown},
		{name: "a keyed digest not in hex", digest: "hmac-sha256:new:" + strings.Repeat("z", 64), params: params, want: Unknown},
		{name: "no key id", digest: "hmac-sha256:" + strings.Repeat("a", 64), params: params, want: Unknown},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Verify(tt.digest, []byte(tt.params))
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
		})
	}
	_, err = Verify(underNew, []byte(`[1]`))
	assert.Error(t, err, "parameters that are no object")
}

func TestStaleAndRekey(t *testing.T) {
	const params, otherParams = `{"password":"hunter2","size":2}`, `{"password":"guess","size":2}`
	testKeys(t, "old")
	underOld, err := Digest([]byte(params))
	require.NoError(t, err)
	testKeys(t, "gone")
	underGone, err := Digest([]byte(params))
	require.NoError(t, err)
	testKeys(t, "new", "old")
	underNew, err := Digest([]byte(params))
	require.NoError(t, err)

	tests := []struct {
		name      string
		digest    string
		params    string
		wantStale bool
		want      string // "" : the digest as it was
	}{
		{name: "current", digest: underNew, params: params},
		{name: "none", digest: "", params: params},
		{name: "older key, verified", digest: underOld, params: params, wantStale: true, want: underNew},
		{name: "older key, other parameters", digest: underOld, params: otherParams, wantStale: true},
		{name: "from before digests were keyed, verified", digest: legacy(params), params: params, wantStale: true, want: underNew},
		{name: "from before digests were keyed, other parameters", digest: legacy(params), params: otherParams, wantStale: true},
		{name: "key removed: cannot be verified", digest: underGone, params: params, wantStale: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.wantStale, Stale(tt.digest))
			want := tt.want
			if want == "" {
				want = tt.digest
			}
			assert.Equal(t, want, Rekey(tt.digest, []byte(tt.params)))
		})
	}
}

func TestNewKeys(t *testing.T) {
	key := []byte(strings.Repeat("k", minKeyBytes))
	tests := []struct {
		name    string
		current string
		byID    map[string][]byte
		wantErr string
	}{
		{name: "one key", current: "1", byID: map[string][]byte{"1": key}},
		{name: "rotated", current: "2", byID: map[string][]byte{"1": key, "2": key}},
		{name: "current missing", current: "3", byID: map[string][]byte{"1": key}, wantErr: `the current key "3" is not among the keys`},
		{name: "no current", current: "", byID: map[string][]byte{"1": key}, wantErr: `the current key "" is not among the keys`},
		{name: "short key", current: "1", byID: map[string][]byte{"1": key[:31]}, wantErr: `key "1" has 31 bytes; a digest key has at least 32`},
		{name: "id with a colon", current: "a:b", byID: map[string][]byte{"a:b": key}, wantErr: `key id "a:b"`},
		{name: "id too long", current: strings.Repeat("i", 33), byID: map[string][]byte{strings.Repeat("i", 33): key}, wantErr: "1 to 32 characters"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			k, err := NewKeys(tt.current, tt.byID)
			if tt.wantErr == "" {
				require.NoError(t, err)
				assert.Equal(t, tt.current, k.Current())
				return
			}
			require.Error(t, err)
			assert.Contains(t, err.Error(), tt.wantErr)
			assert.NotContains(t, err.Error(), string(key[:31]), "never a key")
		})
	}
}
