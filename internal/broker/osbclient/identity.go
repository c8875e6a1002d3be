package osbclient

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	"github.com/lockstep-dev/lockstep/internal/broker/osbapi"
)

// Identity is the Kubernetes user on whose behalf a request is made, as OSB's
// Kubernetes profile defines the originating identity.
type Identity struct {
	Username string              `json:"username"`
	UID      string              `json:"uid"`
	Groups   []string            `json:"groups"`
	Extra    map[string][]string `json:"extra"`
}

// IsZero reports whether id names nobody.
func (id Identity) IsZero() bool {
	return id.Username == "" && id.UID == "" && len(id.Groups) == 0 && len(id.Extra) == 0
}

// HeaderValue returns the value of X-Broker-API-Originating-Identity for id:
// "kubernetes " followed by the base64 of its JSON.
func (id Identity) HeaderValue() (string, error) {
	if id.Groups == nil {
		id.Groups = []string{}
	}
	if id.Extra == nil {
		id.Extra = map[string][]string{}
	}
	raw, err := json.Marshal(id)
	if err != nil {
		return "", fmt.Errorf("encode originating identity: %w", err)
	}
	return osbapi.KubernetesPlatform + " " + base64.StdEncoding.EncodeToString(raw), nil
}

// RequestMeta travels with every call: who asked and which operation the
// request belongs to.
type RequestMeta struct {
	// Identity is the originating user. When zero, the originating identity
	// header is omitted.
	Identity Identity
	// RequestID identifies the request (lockstep uses its operation id).
	// When empty, the request identity header is omitted.
	RequestID string
}

func (m RequestMeta) apply(h http.Header) error {
	h.Set(osbapi.HeaderAPIVersion, osbapi.APIVersion)
	if !m.Identity.IsZero() {
		v, err := m.Identity.HeaderValue()
		if err != nil {
			return err
		}
		h.Set(osbapi.HeaderOriginatingIdentity, v)
	}
	if m.RequestID != "" {
		if strings.IndexFunc(m.RequestID, isControl) >= 0 {
			return fmt.Errorf("%w: request id %q contains control characters, which cannot go into a header", ErrInvalidRequest, m.RequestID)
		}
		h.Set(osbapi.HeaderRequestIdentity, m.RequestID)
	}
	return nil
}

func isControl(r rune) bool { return r < 0x20 || r == 0x7f }

// ParseIdentity reads a X-Broker-API-Originating-Identity value of the
// Kubernetes profile ("kubernetes <base64 of the JSON>"), the inverse of
// HeaderValue.
func ParseIdentity(header string) (Identity, error) {
	platform, value, ok := strings.Cut(strings.TrimSpace(header), " ")
	if !ok || platform != osbapi.KubernetesPlatform {
		return Identity{}, fmt.Errorf("originating identity %q is not %q followed by a value", header, osbapi.KubernetesPlatform)
	}
	raw, err := base64.StdEncoding.DecodeString(strings.TrimSpace(value))
	if err != nil {
		return Identity{}, fmt.Errorf("originating identity: the value is not base64: %w", err)
	}
	var id Identity
	if err := json.Unmarshal(raw, &id); err != nil {
		return Identity{}, fmt.Errorf("originating identity: the value is not a JSON user: %w", err)
	}
	return id, nil
}
