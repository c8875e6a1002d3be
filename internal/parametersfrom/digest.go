package parametersfrom

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
)

// Digest is the SHA-256 of a parameters object in a canonical form
// (compact, object keys sorted, numbers as written), hex encoded. It is
// what lockstep keeps of parameters that came from Secrets: enough to tell
// whether a broker holds the same parameters, nothing of their values.
// No parameters (nil, empty, null) are {}.
func Digest(raw []byte) (string, error) {
	obj, ok := decodeObject(raw)
	if !ok {
		return "", fmt.Errorf("the parameters are not a JSON object")
	}
	if obj == nil {
		obj = map[string]any{}
	}
	canonical, err := encode(obj)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(canonical)
	return hex.EncodeToString(sum[:]), nil
}
