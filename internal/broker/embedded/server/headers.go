package server

import (
	"crypto/subtle"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/lockstep-dev/lockstep/internal/broker/embedded/store"
	"github.com/lockstep-dev/lockstep/internal/broker/osbapi"
)

// minMinor is the oldest 2.x the broker accepts: it needs asynchronous
// bindings and the GET endpoints (2.14).
const minMinor = 14

// checkVersion accepts 2.14 and later 2.x versions.
func checkVersion(v string) error {
	major, minor, ok := strings.Cut(strings.TrimSpace(v), ".")
	maj, err1 := strconv.Atoi(major)
	mnr, err2 := strconv.Atoi(minor)
	switch {
	case v == "":
		return fmt.Errorf("the %s header is required: this broker implements OSB %s and accepts 2.%d or later", osbapi.HeaderAPIVersion, osbapi.APIVersion, minMinor)
	case !ok || err1 != nil || err2 != nil:
		return fmt.Errorf("%s %q is not MAJOR.MINOR: this broker implements OSB %s and accepts 2.%d or later", osbapi.HeaderAPIVersion, v, osbapi.APIVersion, minMinor)
	case maj != 2 || mnr < minMinor:
		return fmt.Errorf("%s %s is not supported: this broker implements OSB %s and accepts 2.%d or later", osbapi.HeaderAPIVersion, v, osbapi.APIVersion, minMinor)
	}
	return nil
}

// parseIdentity parses "<platform> <base64 JSON object>"; an absent header
// is a nil identity.
func parseIdentity(h string) (*store.Identity, error) {
	if h == "" {
		return nil, nil
	}
	bad := func(why string) error {
		return fmt.Errorf("%s must be \"<platform> <base64 of a JSON object>\": %s", osbapi.HeaderOriginatingIdentity, why)
	}
	platform, value, ok := strings.Cut(strings.TrimSpace(h), " ")
	if !ok || platform == "" || strings.TrimSpace(value) == "" {
		return nil, bad("platform or value missing")
	}
	value = strings.TrimSpace(value)
	raw, err := base64.StdEncoding.DecodeString(value)
	if err != nil {
		if raw, err = base64.RawStdEncoding.DecodeString(value); err != nil {
			return nil, bad("the value is not base64")
		}
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(raw, &obj); err != nil || obj == nil {
		return nil, bad("the decoded value is not a JSON object")
	}
	compact, err := json.Marshal(obj)
	if err != nil {
		return nil, bad(err.Error())
	}
	return &store.Identity{Platform: platform, Value: compact}, nil
}

// authorized checks basic authentication in constant time.
func authorized(r *http.Request, username, password string) bool {
	u, p, ok := r.BasicAuth()
	if !ok {
		return false
	}
	uok := subtle.ConstantTimeCompare([]byte(u), []byte(username)) == 1
	pok := subtle.ConstantTimeCompare([]byte(p), []byte(password)) == 1
	return uok && pok
}
