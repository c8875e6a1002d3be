package parametersfrom

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
	"sync/atomic"
)

// A digest is what lockstep keeps of parameters that came from Secrets:
// enough to tell whether a broker holds the same parameters, nothing of
// their values. It is an HMAC-SHA256 of the parameters in a canonical form
// (compact, object keys sorted, numbers as written) under a key only
// lockstep holds (in a Secret of its namespace, see keys.go), written
// "hmac-sha256:<key id>:<hex>": whoever may read an instance, its status
// or its operation records, but not the Secret, cannot test guesses of a
// password against it, as they could against a plain hash. The key's id
// beside the digest lets a digest made under an older key be verified
// after the key is rotated, so that a rotation makes nothing look
// drifted.
//
// A digest written before digests were keyed (a plain SHA-256, 64 hex
// digits) is verified as one (so that an upgrade makes nothing look
// drifted either), and counts as stale: resync writes it again under the
// current key once the broker is found to hold what it says.

// digestPrefix starts a keyed digest.
const digestPrefix = "hmac-sha256:"

// Keys are the keys of digests, by id, and the id of the current one,
// which new digests are made with.
type Keys struct {
	current string
	byID    map[string][]byte
}

// minKeyBytes is the shortest key accepted: 32 bytes, SHA-256's block of
// entropy.
const minKeyBytes = 32

// NewKeys checks and returns a key set.
func NewKeys(current string, byID map[string][]byte) (*Keys, error) {
	if _, ok := byID[current]; !ok {
		return nil, fmt.Errorf("the current key %q is not among the keys", current)
	}
	for id, k := range byID {
		if err := checkKeyID(id); err != nil {
			return nil, err
		}
		if len(k) < minKeyBytes {
			return nil, fmt.Errorf("key %q has %d bytes; a digest key has at least %d", id, len(k), minKeyBytes)
		}
	}
	return &Keys{current: current, byID: byID}, nil
}

// checkKeyID refuses ids that would not read back from a digest.
func checkKeyID(id string) error {
	if id == "" || len(id) > 32 || strings.ContainsAny(id, ": ") || id == currentField {
		return fmt.Errorf("key id %q: an id is 1 to 32 characters, without ':' or spaces, and not %q", id, currentField)
	}
	return nil
}

// Current is the id of the current key.
func (k *Keys) Current() string { return k.current }

// keys are the process's keys: lockstep sets them at start from its
// Secret (UseKeys) and keeps them current. Until then (in tests) they are
// a random key of the process's own.
var keys atomic.Pointer[Keys]

func init() {
	k := make([]byte, minKeyBytes)
	if _, err := rand.Read(k); err != nil {
		panic(err)
	}
	keys.Store(&Keys{current: "process", byID: map[string][]byte{"process": k}})
}

// UseKeys makes k the keys of every digest made and verified from now on,
// and returns the keys it replaces.
func UseKeys(k *Keys) *Keys { return keys.Swap(k) }

// Digest is the digest of a parameters object under the current key. No
// parameters (nil, empty, null) are {}.
func Digest(raw []byte) (string, error) {
	canonical, err := canonicalForm(raw)
	if err != nil {
		return "", err
	}
	k := keys.Load()
	return digestPrefix + k.current + ":" + hex.EncodeToString(mac(k.byID[k.current], canonical)), nil
}

// Verdict is what Verify finds.
type Verdict int

const (
	// Same: the digest is of these parameters.
	Same Verdict = iota
	// Different: the digest is of other parameters.
	Different
	// Unknown: the digest's key is not among the keys (removed since),
	// or the digest is not one lockstep made.
	Unknown
)

// Verify tells whether digest is of the parameters raw, under whichever
// of the keys it names.
func Verify(digest string, raw []byte) (Verdict, error) {
	canonical, err := canonicalForm(raw)
	if err != nil {
		return Unknown, err
	}
	id, sum, keyed := strings.Cut(strings.TrimPrefix(digest, digestPrefix), ":")
	var want []byte
	switch {
	case strings.HasPrefix(digest, digestPrefix) && keyed:
		key, ok := keys.Load().byID[id]
		if !ok {
			return Unknown, nil
		}
		want = mac(key, canonical)
	case isLegacy(digest):
		plain := sha256.Sum256(canonical)
		want, sum = plain[:], digest
	default:
		return Unknown, nil
	}
	got, err := hex.DecodeString(sum)
	if err != nil || len(got) != len(want) {
		return Unknown, nil
	}
	if hmac.Equal(got, want) {
		return Same, nil
	}
	return Different, nil
}

// Stale reports whether digest was made under another key than the
// current one, or before digests were keyed.
func Stale(digest string) bool {
	return digest != "" && !strings.HasPrefix(digest, digestPrefix+keys.Load().current+":")
}

// Rekey is digest made again of raw under the current key when it is
// stale and verifies against raw, and digest as it is otherwise.
func Rekey(digest string, raw []byte) string {
	if !Stale(digest) {
		return digest
	}
	if verdict, err := Verify(digest, raw); err != nil || verdict != Same {
		return digest
	}
	fresh, err := Digest(raw)
	if err != nil {
		return digest
	}
	return fresh
}

// isLegacy reports a plain SHA-256 digest, as lockstep wrote them before
// they were keyed.
func isLegacy(digest string) bool {
	if len(digest) != 2*sha256.Size {
		return false
	}
	_, err := hex.DecodeString(digest)
	return err == nil
}

func mac(key, canonical []byte) []byte {
	h := hmac.New(sha256.New, key)
	h.Write(canonical)
	return h.Sum(nil)
}

// canonicalForm is a parameters object as digests are made of it.
func canonicalForm(raw []byte) ([]byte, error) {
	obj, ok := decodeObject(raw)
	if !ok {
		return nil, fmt.Errorf("the parameters are not a JSON object")
	}
	if obj == nil {
		obj = map[string]any{}
	}
	return encode(obj)
}
