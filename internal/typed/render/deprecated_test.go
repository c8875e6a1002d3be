package render

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	"github.com/lockstep-dev/lockstep/internal/broker/osbapi"
)

// schemaOf reads a CRD schema written as JSON.
func schemaOf(t *testing.T, raw string) *apiextensionsv1.JSONSchemaProps {
	t.Helper()
	var s apiextensionsv1.JSONSchemaProps
	require.NoError(t, json.Unmarshal([]byte(raw), &s), raw)
	return &s
}

// Keep keeps, at any depth, what objects set that the old schema has and
// the new one does not, and nothing else; Loses says when there can be
// any; what Keep returns is a CRD schema the API server takes.
func TestKeep(t *testing.T) {
	const (
		backup   = `{"type":"object","properties":{"backup":{"type":"object","description":"Backups.","properties":{"window":{"type":"string","description":"When."},"keep":{"type":"integer"}}}}}`
		noWindow = `{"type":"object","properties":{"backup":{"type":"object","description":"Backups.","properties":{"keep":{"type":"integer"}}}}}`
		nodes    = `{"type":"object","properties":{"nodes":{"type":"array","items":{"type":"object","properties":{"name":{"type":"string"},"zone":{"type":"string","description":"Zone."}}}}}}`
		noZone   = `{"type":"object","properties":{"nodes":{"type":"array","items":{"type":"object","properties":{"name":{"type":"string"}}}}}}`
		labels   = `{"type":"object","properties":{"labels":{"type":"object","additionalProperties":{"type":"object","properties":{"owner":{"type":"string"},"team":{"type":"string"}}}}}}`
		noOwner  = `{"type":"object","properties":{"labels":{"type":"object","additionalProperties":{"type":"object","properties":{"team":{"type":"string"}}}}}}`
	)
	for _, tc := range []struct {
		name, was, now string
		values         []string
		// want is the schema Keep returns, DeprecatedPrefix written "~";
		// empty: now as it is.
		want string
		kept []string
		// retyped, when set, is where Keep finds a change of type that
		// would prune what objects set (a *RetypedError).
		retyped []string
		loses   bool
	}{{
		name: "a top-level property objects set is kept",
		was:  `{"type":"object","properties":{"size":{"type":"integer"},"tier":{"type":"string","description":"Tier."}}}`,
		now:  `{"type":"object","properties":{"size":{"type":"integer"}}}`, values: []string{`{"tier":"gold"}`, `{"size":1}`},
		want: `{"type":"object","properties":{"size":{"type":"integer"},"tier":{"type":"string","description":"~Tier."}}}`,
		kept: []string{"tier"}, loses: true,
	}, {
		name: "a nested property objects set is kept",
		was:  backup, now: noWindow, values: []string{`{"backup":{"window":"02:00","keep":3}}`},
		want: `{"type":"object","properties":{"backup":{"type":"object","description":"Backups.","properties":{"keep":{"type":"integer"},"window":{"type":"string","description":"~When."}}}}}`,
		kept: []string{"backup.window"}, loses: true,
	}, {
		name: "a nested property no object sets goes",
		was:  backup, now: noWindow, values: []string{`{"backup":{"keep":3}}`, `{}`}, loses: true,
	}, {
		name: "a dropped parent is kept whole",
		was:  backup, now: `{"type":"object","properties":{"size":{"type":"integer"}}}`, values: []string{`{"backup":{"window":"02:00"}}`, `{"backup":{"window":"03:00"}}`},
		want: `{"type":"object","properties":{"size":{"type":"integer"},"backup":{"type":"object","description":"~Backups.","properties":{"window":{"type":"string","description":"When."},"keep":{"type":"integer"}}}}}`,
		kept: []string{"backup"}, loses: true,
	}, {
		name: "a property of an array's items is kept in the items",
		was:  nodes, now: noZone, values: []string{`{"nodes":[{"name":"a"},{"name":"b","zone":"eu"}]}`},
		want: `{"type":"object","properties":{"nodes":{"type":"array","items":{"type":"object","properties":{"name":{"type":"string"},"zone":{"type":"string","description":"~Zone."}}}}}}`,
		kept: []string{"nodes[*].zone"}, loses: true,
	}, {
		name: "a property of a map's values is kept in the values",
		was:  labels, now: noOwner, values: []string{`{"labels":{"a":{"team":"x"},"b":{"owner":"y"}}}`},
		want: `{"type":"object","properties":{"labels":{"type":"object","additionalProperties":{"type":"object","properties":{"team":{"type":"string"},"owner":{"type":"string","description":"~"}}}}}}`,
		kept: []string{"labels.*.owner"}, loses: true,
	}, {
		name: "below a value left free nothing is pruned, and nothing kept",
		was:  backup, now: `{"type":"object","properties":{"backup":{"x-kubernetes-preserve-unknown-fields":true}}}`,
		values: []string{`{"backup":{"window":"02:00"}}`},
	}, {
		name: "an object that keeps unknown fields still shows what objects set",
		was:  backup, now: `{"type":"object","properties":{"backup":{"type":"object","x-kubernetes-preserve-unknown-fields":true,"properties":{"keep":{"type":"integer"}}}}}`,
		values: []string{`{"backup":{"window":"02:00"}}`},
		want:   `{"type":"object","properties":{"backup":{"type":"object","x-kubernetes-preserve-unknown-fields":true,"properties":{"keep":{"type":"integer"},"window":{"type":"string","description":"~When."}}}}}`,
		kept:   []string{"backup.window"}, loses: true,
	}, {
		name: "parameters that become free JSON still show what objects set",
		was:  backup, now: `{"type":"object","x-kubernetes-preserve-unknown-fields":true}`, values: []string{`{"backup":{"window":"02:00"}}`},
		want: `{"type":"object","x-kubernetes-preserve-unknown-fields":true,"properties":{"backup":{"type":"object","description":"~Backups.","properties":{"window":{"type":"string","description":"When."},"keep":{"type":"integer"}}}}}`,
		kept: []string{"backup"}, loses: true,
	}, {
		name:   "unknown fields kept before and now are not shown",
		was:    `{"type":"object","properties":{"backup":{"type":"object","x-kubernetes-preserve-unknown-fields":true}}}`,
		now:    `{"type":"object","properties":{"backup":{"type":"object","x-kubernetes-preserve-unknown-fields":true,"properties":{"keep":{"type":"integer"}}}}}`,
		values: []string{`{"backup":{"window":"02:00"}}`},
	}, {
		name: "what a parent kept as unknown fields is kept as any value",
		was:  `{"type":"object","properties":{"backup":{"type":"object","x-kubernetes-preserve-unknown-fields":true}}}`, now: noWindow,
		values: []string{`{"backup":{"window":"02:00","keep":1}}`},
		want:   `{"type":"object","properties":{"backup":{"type":"object","description":"Backups.","properties":{"keep":{"type":"integer"},"window":{"x-kubernetes-preserve-unknown-fields":true,"description":"~"}}}}}`,
		kept:   []string{"backup.window"}, loses: true,
	}, {
		name: "what the old schema pruned already is not kept",
		was:  noWindow, now: noWindow, values: []string{`{"backup":{"window":"02:00"}}`},
	}, {
		name: "a kept property stays marked once",
		was:  `{"type":"object","properties":{"tier":{"type":"string","description":"Deprecated: no plan of the service has it any more; kept while objects set it. Tier."}}}`,
		now:  `{"type":"object"}`, values: []string{`{"tier":"gold"}`},
		want: `{"type":"object","properties":{"tier":{"type":"string","description":"~Tier."}}}`,
		kept: []string{"tier"}, loses: true,
	}, {
		name: "an object that becomes a string is held",
		was:  backup, now: `{"type":"object","properties":{"backup":{"type":"string"}}}`, values: []string{`{"backup":{"window":"02:00"}}`, `{}`},
		retyped: []string{"backup"}, loses: true,
	}, {
		name: "an object no object sets may become a string",
		was:  backup, now: `{"type":"object","properties":{"backup":{"type":"string"}}}`, values: []string{`{"backup":{}}`, `{}`}, loses: true,
	}, {
		name: "an array of objects that becomes a string is held",
		was:  nodes, now: `{"type":"object","properties":{"nodes":{"type":"string"}}}`, values: []string{`{"nodes":[{"name":"a"}]}`},
		retyped: []string{"nodes[*]"}, loses: true,
	}, {
		name: "an array of objects that becomes an array of strings is held",
		was:  nodes, now: `{"type":"object","properties":{"nodes":{"type":"array","items":{"type":"string"}}}}`, values: []string{`{"nodes":[{"name":"a"}]}`},
		retyped: []string{"nodes[*]"}, loses: true,
	}, {
		name: "a map of objects that becomes a map of strings is held, with what else is kept",
		was:  `{"type":"object","properties":{"tier":{"type":"string"},"labels":{"type":"object","additionalProperties":{"type":"object","properties":{"owner":{"type":"string"}}}}}}`,
		now:  `{"type":"object","properties":{"labels":{"type":"object","additionalProperties":{"type":"string"}}}}`, values: []string{`{"tier":"gold","labels":{"a":{"owner":"x"},"b":{}}}`},
		kept: []string{"tier"}, retyped: []string{"labels.*"}, loses: true,
	}, {
		name: "an array of strings that becomes a string loses nothing",
		was:  `{"type":"object","properties":{"zones":{"type":"array","items":{"type":"string"}}}}`,
		now:  `{"type":"object","properties":{"zones":{"type":"string"}}}`, values: []string{`{"zones":["eu","us"]}`}, loses: true,
	}, {
		name: "a scalar of another type loses nothing",
		was:  `{"type":"object","properties":{"size":{"type":"integer"}}}`,
		now:  `{"type":"object","properties":{"size":{"type":"string"}}}`, values: []string{`{"size":3}`},
	}, {
		name: "names that need brackets",
		was:  `{"type":"object","properties":{"a.b":{"type":"object","properties":{"c":{"type":"string"}}}}}`,
		now:  `{"type":"object","properties":{"a.b":{"type":"object"}}}`, values: []string{`{"a.b":{"c":"x"}}`},
		want: `{"type":"object","properties":{"a.b":{"type":"object","properties":{"c":{"type":"string","description":"~"}}}}}`,
		kept: []string{"[a.b].c"}, loses: true,
	}} {
		t.Run(tc.name, func(t *testing.T) {
			was, now := schemaOf(t, tc.was), schemaOf(t, tc.now)
			before := now.DeepCopy()
			assert.Equal(t, tc.loses, Loses(was, now))
			var values []any
			for _, v := range tc.values {
				var value any
				require.NoError(t, json.Unmarshal([]byte(v), &value))
				values = append(values, value)
			}
			got, kept, err := Keep(was, now, values)
			assert.Equal(t, tc.kept, kept)
			assert.Equal(t, before, now, "now is not changed")
			if tc.retyped != nil {
				var retyped *RetypedError
				require.ErrorAs(t, err, &retyped)
				assert.Equal(t, tc.retyped, retyped.Paths)
				return
			}
			require.NoError(t, err)
			want := tc.want
			if want == "" {
				want = tc.now
			}
			raw, err := json.Marshal(got)
			require.NoError(t, err)
			assert.JSONEq(t, want, strings.ReplaceAll(string(raw), DeprecatedPrefix, "~"))

			crd, _, err := Render("acme", &osbapi.Service{ID: "pg-id", Name: "pg", Plans: []osbapi.Plan{{ID: "small-id", Name: "small"}}}, Options{})
			require.NoError(t, err)
			spec := crd.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"]
			spec.Properties["parameters"] = *got
			crd.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"] = spec
			assert.Empty(t, Validate(crd), "the API server takes the CRD")
		})
	}
}

// What Keep returns stays within the limits of a rendering.
func TestKeepLimits(t *testing.T) {
	deep := `{"type":"string"}`
	value := `"x"`
	for range maxDepth + 2 {
		deep = `{"type":"object","properties":{"a":` + deep + `}}`
		value = `{"a":` + value + `}`
	}
	var v any
	require.NoError(t, json.Unmarshal([]byte(value), &v))
	_, kept, err := Keep(schemaOf(t, deep), schemaOf(t, `{"type":"object"}`), []any{v})
	assert.Equal(t, []string{"a"}, kept)
	require.Error(t, err)
	assert.Contains(t, err.Error(), fmt.Sprintf("values would nest %d levels deep, more than the %d a kind takes", maxDepth+2, maxDepth+1))

	props := map[string]apiextensionsv1.JSONSchemaProps{}
	for i := range maxProperties {
		props[fmt.Sprintf("p%d", i)] = apiextensionsv1.JSONSchemaProps{Type: "string"}
	}
	now := &apiextensionsv1.JSONSchemaProps{Type: "object", Properties: props}
	_, _, err = Keep(schemaOf(t, `{"type":"object","properties":{"gone":{"type":"string"}}}`), now, []any{map[string]any{"gone": "x"}})
	require.Error(t, err)
	assert.Contains(t, err.Error(), fmt.Sprintf("the schema would have %d properties, more than the %d a kind takes", maxProperties+1, maxProperties))
}
