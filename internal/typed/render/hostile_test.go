package render

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lockstep-dev/lockstep/internal/broker/osbapi"
	"github.com/lockstep-dev/lockstep/internal/validate/schema"
)

func serviceWith(create string) *osbapi.Service {
	return &osbapi.Service{ID: "h", Name: "hostile", Plans: []osbapi.Plan{{ID: "p", Name: "p",
		Schemas: &osbapi.Schemas{ServiceInstance: &osbapi.ServiceInstanceSchemas{Create: &osbapi.InputParameters{Parameters: json.RawMessage(create)}}}}}}
}

// deep nests objects n levels deep.
func deep(n int) string {
	return strings.Repeat(`{"type":"object","properties":{"a":`, n) + `{"type":"string"}` + strings.Repeat(`}}`, n)
}

// wide has n properties.
func wide(n int) string {
	props := make([]string, n)
	for i := range props {
		props[i] = fmt.Sprintf(`"p%d":{"type":"string","description":"%s"}`, i, strings.Repeat("x", 400))
	}
	return `{"type":"object","properties":{` + strings.Join(props, ",") + `}}`
}

// numbers lists 0 to n-1.
func numbers(n int) string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprint(i)
	}
	return strings.Join(out, ",")
}

// fanOut has definitions that each refer to the next twice: a path count
// that doubles with every level, without a cycle.
func fanOut(n int) string {
	defs := make([]string, n)
	for i := range n - 1 {
		defs[i] = fmt.Sprintf(`"d%d":{"type":"object","properties":{"l":{"$ref":"#/definitions/d%d"},"r":{"$ref":"#/definitions/d%d"}}}`, i, i+1, i+1)
	}
	defs[n-1] = fmt.Sprintf(`"d%d":{"type":"string"}`, n-1)
	return `{"type":"object","definitions":{` + strings.Join(defs, ",") + `},"properties":{"root":{"$ref":"#/definitions/d0"}}}`
}

// TestHostileSchemas renders schemas made to be costly or broken: each
// gives a CRD the API server takes and a report that says what happened,
// in bounded time, never a panic.
func TestHostileSchemas(t *testing.T) {
	for _, tc := range []struct {
		name, create string
		fallback     bool
		report       string // in Problems, Dropped or Fallback
	}{
		{name: "deeply nested", create: deep(200), report: "deeper than 24 levels"},
		{name: "very deeply nested", create: deep(5000), fallback: true, report: "no plan has a schema lockstep can use"},
		{name: "many properties", create: wide(3000), fallback: true, report: "more than the 2000 a kind takes"},
		{name: "large descriptions", create: wide(1900), fallback: true, report: "KiB"},
		{name: "exponential references", create: fanOut(40), report: "references one inside the other"},
		{name: "recursive root", create: `{"type":"object","properties":{"self":{"$ref":"#"}}}`, report: "recursion"},
		{name: "mutual recursion", create: `{"type":"object","definitions":{"a":{"type":"object","properties":{"b":{"$ref":"#/definitions/b"}}},"b":{"type":"array","items":{"$ref":"#/definitions/a"}}},"properties":{"x":{"$ref":"#/definitions/a"}}}`, report: "recursion"},
		{name: "not JSON", create: `{"type":`, fallback: true, report: "not valid JSON"},
		{name: "not a schema", create: `{"type":"objekt"}`, fallback: true, report: "not a valid JSON Schema"},
		{name: "remote reference", create: `{"$ref":"https://example.com/schema.json"}`, fallback: true, report: "outside the schema"},
		{name: "false root", create: `false`, fallback: true, report: "object the kind can type"},
		{name: "huge enum", create: `{"type":"object","properties":{"e":{"type":"integer","enum":[` + numbers(1500) + `]}}}`, report: "more than 1000 values"},
		{name: "huge numbers", create: `{"type":"object","properties":{"n":{"type":"number","minimum":-1e400,"maximum":1e400,"enum":[1e99999]}}}`, report: "beyond the range"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			start := time.Now()
			crd, r, err := Render("b", serviceWith(tc.create), Options{})
			elapsed := time.Since(start)
			require.NoError(t, err)
			assert.Empty(t, Validate(crd), "the API server would refuse the CRD")
			assert.Equal(t, tc.fallback, r.Fallback != "", "fallback: %q", r.Fallback)
			all := strings.Join(r.Problems, "\n") + "\n" + r.Fallback
			for _, d := range r.Dropped {
				all += "\n" + d.String()
			}
			assert.Contains(t, all, tc.report)
			assert.Less(t, elapsed, 30*time.Second, "rendering took too long")
		})
	}
}

func TestSensitive(t *testing.T) {
	create := `{"$schema":"http://json-schema.org/draft-07/schema#","type":"object","definitions":{"cred":{"type":"object","properties":{"secret":{"type":"string","writeOnly":true}}}},
		"properties":{"password":{"type":"string","format":"password"},"users":{"type":"array","items":{"type":"object","properties":{"pw":{"type":"string","writeOnly":true}}}},
		"tokens":{"type":"object","additionalProperties":{"type":"string","format":"password"}},"auth":{"$ref":"#/definitions/cred"},"x.y":{"writeOnly":true},"plain":{"type":"string"}}}`
	update := `{"$schema":"http://json-schema.org/draft-07/schema#","type":"object","properties":{"rotate":{"type":"string","writeOnly":true}}}`
	ps, err := schema.Compile(json.RawMessage(create), json.RawMessage(update), nil)
	require.NoError(t, err)
	assert.Equal(t, []string{"[x.y]", "auth.secret", "password", "rotate", "tokens.*", "users[*].pw"}, Sensitive(ps))
}
