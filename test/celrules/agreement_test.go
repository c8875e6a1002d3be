package celrules

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/lockstep-dev/lockstep/api/v1alpha1"
	"github.com/lockstep-dev/lockstep/internal/app"
	"github.com/lockstep-dev/lockstep/internal/validate"
	"github.com/lockstep-dev/lockstep/internal/validate/celrules"
)

// crds reads the CRD manifests in deploy/crds.
func crds(t *testing.T) []apiextensionsv1.CustomResourceDefinition {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(env.root, "deploy", "crds", "lockstep.dev_*.yaml"))
	require.NoError(t, err)
	require.NotEmpty(t, files)
	var out []apiextensionsv1.CustomResourceDefinition
	for _, f := range files {
		raw, err := os.ReadFile(f)
		require.NoError(t, err)
		var crd apiextensionsv1.CustomResourceDefinition
		require.NoError(t, yaml.Unmarshal(raw, &crd), f)
		out = append(out, crd)
	}
	return out
}

// pair is an update to try: the object before and after.
type pair struct {
	name     string
	old, new map[string]any
}

func TestRulesAgreeWithTheEngine(t *testing.T) {
	ns := "agreement"
	require.NoError(t, env.client.Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}))
	types := app.Scheme().AllKnownTypes()
	checked := 0
	for _, crd := range crds(t) {
		for _, version := range crd.Spec.Versions {
			gvk := schema.GroupVersionKind{Group: crd.Spec.Group, Version: version.Name, Kind: crd.Spec.Names.Kind}
			goType, ok := types[gvk]
			require.True(t, ok, "no Go type for %s", gvk)
			root := version.Schema.OpenAPIV3Schema
			policy, err := validate.Compile(goType)
			require.NoError(t, err)
			rules, left, err := celrules.For(goType, gvk.Kind, root)
			require.NoError(t, err)
			ruled := map[string]bool{}
			for _, r := range rules {
				ruled[r.Path] = true
			}
			engineOnly := map[string]string{}
			for _, l := range left {
				engineOnly[l.Path] = l.Why
			}
			namespace := ""
			if crd.Spec.Scope == apiextensionsv1.NamespaceScoped {
				namespace = ns
			}
			base := map[string]any{
				"apiVersion": gvk.GroupVersion().String(),
				"kind":       gvk.Kind,
				"metadata":   map[string]any{"generateName": "pair-", "namespace": namespace},
				"spec":       sample(ptr(root.Properties["spec"]), 0),
			}
			t.Run(gvk.Kind, func(t *testing.T) {
				for _, r := range policy.Rules() {
					if r.Kind != validate.CreateOnly {
						continue
					}
					leaf := schemaAt(root, r.Path)
					require.NotNil(t, leaf, "the schema has no %s", r.Path)
					for _, p := range pairs(base, r.Path, leaf) {
						t.Run(r.Path+"/"+p.name, func(t *testing.T) {
							engine := refusedByEngine(t, policy, goType, p, r.Path)
							api, ran := refusedByAPI(t, p, r.Path)
							if !ran {
								t.Skip("the schema refuses the old object, or the update on its own (a required field removed, a value not in an enum): the rules do not run")
							}
							checked++
							if ruled[r.Path] {
								assert.Equal(t, engine, api, "engine refuses: %v, API server refuses: %v\nold: %v\nnew: %v", engine, api, p.old["spec"], p.new["spec"])
								return
							}
							why, ok := engineOnly[r.Path]
							require.True(t, ok, "%s has neither a rule nor a reason to have none", r.Path)
							assert.False(t, api, "%s has no rule (%s), yet the API server refused it", r.Path, why)
						})
					}
				}
			})
		}
	}
	assert.Greater(t, checked, 50, "the pairs reached the API server")
}

// TestStatusIsDroppedOnCreate shows why read-only status fields need no
// rule: the engine refuses them on create, and the API server does not
// keep them.
func TestStatusIsDroppedOnCreate(t *testing.T) {
	ctx := context.Background()
	require.NoError(t, client.IgnoreAlreadyExists(env.client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "status"}})))
	obj := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "lockstep.dev/v1alpha1",
		"kind":       "ServiceInstance",
		"metadata":   map[string]any{"name": "db", "namespace": "status"},
		"spec":       map[string]any{"serviceName": "db", "planName": "small"},
		"status":     map[string]any{"dashboardURL": "https://example.com", "observedGeneration": int64(3)},
	}}
	typed := decode(t, reflect.TypeFor[v1alpha1.ServiceInstance](), obj.Object).(*v1alpha1.ServiceInstance)
	assert.NotEmpty(t, validate.ValidateCreate(typed), "the engine refuses a read-only field on create")

	require.NoError(t, env.client.Create(ctx, obj))
	got := &unstructured.Unstructured{}
	got.SetGroupVersionKind(obj.GroupVersionKind())
	require.NoError(t, env.client.Get(ctx, client.ObjectKey{Namespace: "status", Name: "db"}, got))
	_, found := got.Object["status"]
	assert.False(t, found, "the API server keeps no status from a create: %v", got.Object["status"])
}

// refusedByEngine reports whether the field-policy engine refuses the pair
// at path (or inside it).
func refusedByEngine(t *testing.T, policy *validate.Policy, goType reflect.Type, p pair, path string) bool {
	t.Helper()
	errs := policy.ValidateUpdate(decode(t, goType, p.old), decode(t, goType, p.new))
	for _, e := range errs {
		if e.Field == path || strings.HasPrefix(e.Field, path+".") || strings.HasPrefix(e.Field, path+"[") {
			return true
		}
	}
	return false
}

// decode turns a JSON document into a *goType.
func decode(t *testing.T, goType reflect.Type, doc map[string]any) any {
	t.Helper()
	raw, err := json.Marshal(doc)
	require.NoError(t, err)
	v := reflect.New(goType)
	require.NoError(t, json.Unmarshal(raw, v.Interface()))
	return v.Interface()
}

// refusedByAPI creates p.old and updates it to p.new through the API
// server, and reports whether the rule of the field at path refused the
// update. ran is false when the schema refuses p.old, or refuses the
// update on its own grounds (a required field removed, a value not in an
// enum), which keeps the API server from running the rules at all.
func refusedByAPI(t *testing.T, p pair, path string) (refused, ran bool) {
	t.Helper()
	ctx := context.Background()
	obj := &unstructured.Unstructured{Object: runtime.DeepCopyJSON(p.old)}
	if err := env.client.Create(ctx, obj); err != nil {
		require.True(t, apierrors.IsInvalid(err), "create: %v", err)
		return false, false
	}
	defer func() { assert.NoError(t, env.client.Delete(ctx, obj)) }()
	upd := &unstructured.Unstructured{Object: runtime.DeepCopyJSON(p.new)}
	upd.SetName(obj.GetName())
	upd.SetResourceVersion(obj.GetResourceVersion())
	err := env.client.Update(ctx, upd)
	if err == nil {
		return false, true
	}
	require.True(t, apierrors.IsInvalid(err), "update: %v", err)
	var status apierrors.APIStatus
	require.ErrorAs(t, err, &status)
	for _, c := range status.Status().Details.Causes {
		if strings.Contains(c.Message, "create-only field") {
			assert.Equal(t, path, c.Field, "the refusal names the field")
			return true, true
		}
	}
	t.Logf("the schema refuses the update on its own: %v", err)
	return false, false
}

// pairs are the updates tried for the create-only field at path, whose
// schema is leaf: unchanged, changed, removed, set, zero against absent,
// and changes inside the field.
func pairs(base map[string]any, path string, leaf *apiextensionsv1.JSONSchemaProps) []pair {
	segs := strings.Split(path, ".")
	mk := func(name string, old, new func(map[string]any)) pair {
		p := pair{name: name, old: runtime.DeepCopyJSON(base), new: runtime.DeepCopyJSON(base)}
		if old != nil {
			old(p.old)
		}
		if new != nil {
			new(p.new)
		}
		return p
	}
	put := func(v any) func(map[string]any) {
		return func(obj map[string]any) { setAt(obj, segs, runtime.DeepCopyJSONValue(v)) }
	}
	drop := func(obj map[string]any) { unstructured.RemoveNestedField(obj, segs...) }
	out := []pair{
		mk("unchanged", nil, nil),
		mk("changed", nil, put(sample(leaf, 1))),
		mk("removed", nil, drop),
		mk("set", drop, nil),
	}
	if z, ok := zero(leaf); ok {
		out = append(out,
			mk("zero, was absent", drop, put(z)),
			mk("absent, was zero", put(z), drop),
			mk("set, was zero", put(z), nil),
			mk("zero, was set", nil, put(z)))
	}
	switch {
	case leaf.Type == "object" && len(leaf.Properties) > 0:
		for _, name := range slices.Sorted(maps.Keys(leaf.Properties)) {
			sub := leaf.Properties[name]
			inner := append(slices.Clone(segs), name)
			out = append(out,
				mk(name+" changed", nil, func(obj map[string]any) { setAt(obj, inner, sample(&sub, 1)) }),
				mk(name+" removed", nil, func(obj map[string]any) { unstructured.RemoveNestedField(obj, inner...) }))
			if z, ok := zero(&sub); ok {
				out = append(out,
					mk(name+" zero, was absent", func(obj map[string]any) { unstructured.RemoveNestedField(obj, inner...) },
						func(obj map[string]any) { setAt(obj, inner, z) }))
			}
		}
	case leaf.Type == "array" && leaf.Items != nil && leaf.Items.Schema != nil:
		items := leaf.Items.Schema
		out = append(out,
			mk("element added", nil, put([]any{sample(items, 0), sample(items, 1)})),
			mk("elements reordered", put([]any{sample(items, 0), sample(items, 1)}), put([]any{sample(items, 1), sample(items, 0)})))
	}
	return out
}

// sample builds a value of schema s that the schema accepts; variants
// differ in every leaf.
func sample(s *apiextensionsv1.JSONSchemaProps, variant int) any {
	if len(s.Enum) > 0 {
		var v any
		if err := json.Unmarshal(s.Enum[variant%len(s.Enum)].Raw, &v); err == nil {
			return v
		}
	}
	switch s.Type {
	case "string":
		switch {
		case s.Format == "date-time":
			return fmt.Sprintf("2026-01-0%dT00:00:00Z", variant+1)
		case s.Format == "byte":
			return []string{"YQ==", "Yg=="}[variant%2]
		case strings.Contains(s.Pattern, "https?"):
			return fmt.Sprintf("https://broker-%d.example", variant)
		case s.Pattern == "^[A-Z][A-Za-z0-9]*$": // a kind's name
			return fmt.Sprintf("Kind%d", variant)
		}
		return fmt.Sprintf("value-%d", variant)
	case "integer":
		return int64(variant + 1)
	case "number":
		return float64(variant) + 0.5
	case "boolean":
		return variant%2 == 0
	case "array":
		if s.Items == nil || s.Items.Schema == nil {
			return []any{}
		}
		return []any{sample(s.Items.Schema, variant)}
	case "object":
		switch {
		case s.AdditionalProperties != nil && s.AdditionalProperties.Schema != nil:
			return map[string]any{fmt.Sprintf("key-%d", variant): sample(s.AdditionalProperties.Schema, variant)}
		case len(s.Properties) > 0:
			obj := map[string]any{}
			for name, p := range s.Properties {
				obj[name] = sample(&p, variant)
			}
			return obj
		}
	}
	return map[string]any{"value": int64(variant)} // raw JSON
}

// zero is the zero value of a scalar, list or map schema, which the engine
// takes for absent.
func zero(s *apiextensionsv1.JSONSchemaProps) (any, bool) {
	switch s.Type {
	case "string":
		return "", true
	case "integer":
		return int64(0), true
	case "number":
		return float64(0), true
	case "boolean":
		return false, true
	case "array":
		return []any{}, true
	case "object":
		if s.AdditionalProperties != nil {
			return map[string]any{}, true
		}
	}
	return nil, false
}

// schemaAt is the schema of the field at a dotted path, nil when there is
// none.
func schemaAt(root *apiextensionsv1.JSONSchemaProps, path string) *apiextensionsv1.JSONSchemaProps {
	s := root
	for _, name := range strings.Split(path, ".") {
		next, ok := s.Properties[name]
		if !ok {
			return nil
		}
		s = &next
	}
	return s
}

// setAt sets the value at path in obj, creating objects on the way.
func setAt(obj map[string]any, path []string, v any) {
	for _, name := range path[:len(path)-1] {
		next, ok := obj[name].(map[string]any)
		if !ok {
			next = map[string]any{}
			obj[name] = next
		}
		obj = next
	}
	obj[path[len(path)-1]] = v
}

func ptr[T any](v T) *T { return &v }
