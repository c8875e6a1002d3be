package celrules

import (
	"context"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/cel"
	"k8s.io/apimachinery/pkg/runtime"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	utilfield "k8s.io/apimachinery/pkg/util/validation/field"
	celconfig "k8s.io/apiserver/pkg/apis/cel"

	"github.com/lockstep-dev/lockstep/internal/validate"
)

// The types and schema of a made-up kind with one field of every shape.
type testRef struct {
	Name string `json:"name,omitempty"`
	Size int64  `json:"size,omitempty"`
}

type testItem struct {
	ID string `json:"id" lockstep:"createonly"`
}

type testSpec struct {
	Name      string                `json:"name" lockstep:"createonly"`
	Count     int64                 `json:"count,omitempty" lockstep:"createonly"`
	Flag      bool                  `json:"flag,omitempty" lockstep:"createonly"`
	Ratio     float64               `json:"ratio,omitempty" lockstep:"createonly"`
	List      []string              `json:"list,omitempty" lockstep:"createonly"`
	Labels    map[string]string     `json:"labels,omitempty" lockstep:"createonly"`
	Ref       *testRef              `json:"ref,omitempty" lockstep:"createonly"`
	Plain     testRef               `json:"plain" lockstep:"createonly"`
	Namespace string                `json:"namespace,omitempty" lockstep:"createonly"`
	Raw       *runtime.RawExtension `json:"raw,omitempty" lockstep:"createonly"`
	Items     []testItem            `json:"items,omitempty"`
	Computed  string                `json:"computed,omitempty" lockstep:"readonly"`
	Free      string                `json:"free,omitempty"`
}

type testStatus struct {
	Phase string `json:"phase,omitempty" lockstep:"readonly"`
}

type testObject struct {
	Spec   testSpec   `json:"spec"`
	Status testStatus `json:"status,omitempty"`
}

func str() apiextensionsv1.JSONSchemaProps { return apiextensionsv1.JSONSchemaProps{Type: "string"} }

func testSchema() *apiextensionsv1.JSONSchemaProps {
	yes := true
	return &apiextensionsv1.JSONSchemaProps{
		Type:     "object",
		Required: []string{"spec"},
		Properties: map[string]apiextensionsv1.JSONSchemaProps{
			"spec": {Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{
				"name":   str(),
				"count":  {Type: "integer", Format: "int64"},
				"flag":   {Type: "boolean"},
				"ratio":  {Type: "number"},
				"list":   {Type: "array", MaxItems: ptr(int64(8)), Items: &apiextensionsv1.JSONSchemaPropsOrArray{Schema: &apiextensionsv1.JSONSchemaProps{Type: "string", MaxLength: ptr(int64(16))}}},
				"labels": {Type: "object", MaxProperties: ptr(int64(8)), AdditionalProperties: &apiextensionsv1.JSONSchemaPropsOrBool{Allows: true, Schema: &apiextensionsv1.JSONSchemaProps{Type: "string", MaxLength: ptr(int64(16))}}},
				"ref": {Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{
					"name": str(), "size": {Type: "integer", Format: "int64"},
				}},
				"plain": {Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{
					"name": str(), "size": {Type: "integer", Format: "int64"},
				}},
				"namespace": str(),
				"raw":       {Type: "object", XPreserveUnknownFields: &yes},
				"items": {Type: "array", Items: &apiextensionsv1.JSONSchemaPropsOrArray{Schema: &apiextensionsv1.JSONSchemaProps{
					Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{"id": str()},
				}}},
				"computed": str(),
				"free":     str(),
			}},
			"status": {Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{"phase": str()}},
		},
	}
}

func TestForSaysWhichFieldsGetARule(t *testing.T) {
	rules, left, err := For(reflect.TypeFor[testObject](), "Widget", testSchema())
	require.NoError(t, err)
	var paths []string
	onField := map[string]bool{}
	for _, r := range rules {
		if !slices.Contains(paths, r.Path) {
			paths = append(paths, r.Path)
		}
		assert.Equal(t, "spec", r.Property)
		if len(r.Field) > 0 {
			onField[r.Path] = true
			assert.Equal(t, "spec."+strings.Join(r.Field, "."), r.Path)
			assert.Equal(t, "self == oldSelf", r.Validation.Rule)
			assert.Empty(t, r.Validation.FieldPath, "the rule is on the field")
		} else {
			assert.Equal(t, "."+r.Path[len("spec."):], r.Validation.FieldPath)
		}
		assert.Equal(t, apiextensionsv1.FieldValueForbidden, *r.Validation.Reason)
		assert.Contains(t, r.Validation.Message, "create-only field")
		assert.Contains(t, r.Validation.Message, "Widget")
	}
	assert.Equal(t, []string{"spec.name", "spec.count", "spec.flag", "spec.ratio", "spec.list", "spec.labels", "spec.ref", "spec.plain", "spec.namespace"}, paths)
	assert.Equal(t, map[string]bool{"spec.name": true, "spec.count": true, "spec.flag": true, "spec.ratio": true, "spec.namespace": true}, onField,
		"scalars directly below spec are compared on themselves; lists, maps, objects and pointers on spec")

	why := map[string]string{}
	for _, l := range left {
		why[l.Path] = l.Why
	}
	assert.Contains(t, why["spec.raw"], "CEL cannot see its contents")
	assert.Contains(t, why["spec.items[*].id"], "list element")
	assert.Contains(t, why["spec.computed"], "lockstep writes it itself")
	assert.Contains(t, why["status.phase"], "status has its own subresource")
	assert.Len(t, left, 4)
}

func TestForNamesReservedWordsEscaped(t *testing.T) {
	rules, _, err := For(reflect.TypeFor[testObject](), "Widget", testSchema())
	require.NoError(t, err)
	for _, r := range rules {
		if r.Path == "spec.namespace" && len(r.Field) == 0 {
			assert.Contains(t, r.Validation.Rule, "self.__namespace__")
			assert.Equal(t, ".namespace", r.Validation.FieldPath)
			return
		}
	}
	t.Fatal("no rule for spec.namespace")
}

func TestForFailsWhenTheSchemaLacksATaggedField(t *testing.T) {
	s := testSchema()
	delete(s.Properties["spec"].Properties, "count")
	_, _, err := For(reflect.TypeFor[testObject](), "Widget", s)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "spec.count")
}

func TestForLeavesAnOptionalTopLevelPropertyToTheEngine(t *testing.T) {
	s := testSchema()
	s.Required = nil
	rules, left, err := For(reflect.TypeFor[testObject](), "Widget", s)
	require.NoError(t, err)
	assert.Empty(t, rules)
	assert.Contains(t, left[0].Why, "spec is optional")
}

// TestRulesAgreeWithTheEngineInProcess evaluates the rules with the API
// server's own CEL validator, in process, and compares the verdicts with
// the engine's on the same update (test/celrules does the same through a
// real API server with the CRDs in deploy/crds).
func TestRulesAgreeWithTheEngineInProcess(t *testing.T) {
	p := newInProcess(t, testSchema())
	base := `"name":"a","count":1,"flag":true,"ratio":0.5,"list":["x"],"labels":{"k":"v"},"ref":{"name":"r","size":2},"namespace":"ns","free":"f"`
	tests := []struct {
		name     string
		old, new string // the spec's members
		refused  bool
		field    string // the field refused, when refused
	}{
		{"unchanged", base, base, false, ""},
		{"a free field changes", base, base + `,"free2":"g"`, false, ""},
		{"string changed", `"name":"a"`, `"name":"b"`, true, "spec.name"},
		{"string removed", `"name":"a"`, ``, true, "spec.name"},
		{"string set", ``, `"name":"a"`, true, "spec.name"},
		{"empty string is absent", ``, `"name":""`, false, ""},
		{"absent is an empty string", `"name":""`, ``, false, ""},
		{"integer changed", `"count":1`, `"count":2`, true, "spec.count"},
		{"zero is absent", `"count":0`, ``, false, ""},
		{"boolean set", ``, `"flag":true`, true, "spec.flag"},
		{"false is absent", `"flag":false`, ``, false, ""},
		{"number changed", `"ratio":0.5`, `"ratio":1.5`, true, "spec.ratio"},
		{"list changed", `"list":["x"]`, `"list":["y"]`, true, "spec.list"},
		{"list reordered", `"list":["x","y"]`, `"list":["y","x"]`, true, "spec.list"},
		{"list removed", `"list":["x"]`, ``, true, "spec.list"},
		{"empty list is absent", ``, `"list":[]`, false, ""},
		{"map value changed", `"labels":{"k":"v"}`, `"labels":{"k":"w"}`, true, "spec.labels"},
		{"map key added", `"labels":{"k":"v"}`, `"labels":{"k":"v","l":"v"}`, true, "spec.labels"},
		{"empty map is absent", `"labels":{}`, ``, false, ""},
		{"object field changed", `"ref":{"name":"r"}`, `"ref":{"name":"s"}`, true, "spec.ref"},
		{"object removed", `"ref":{"name":"r"}`, ``, true, "spec.ref"},
		{"object field set", `"ref":{"name":"r"}`, `"ref":{"name":"r","size":3}`, true, "spec.ref"},
		{"a set pointer is present", ``, `"ref":{}`, true, "spec.ref"},
		{"a set pointer stays present", `"ref":{"name":"","size":0}`, ``, true, "spec.ref"},
		{"zero fields are absent fields", `"ref":{}`, `"ref":{"name":"","size":0}`, false, ""},
		{"a struct of zeros is an absent struct", ``, `"plain":{"name":""}`, false, ""},
		{"a struct's field changed", `"plain":{"name":"a"}`, `"plain":{}`, true, "spec.plain"},
		{"reserved name changed", `"namespace":"a"`, `"namespace":"b"`, true, "spec.namespace"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if !tt.refused {
				tt.field = ""
			}
			p.agree(t, tt.old, tt.new, tt.field)
		})
	}
}

// TestRulesOnRequiredFieldsAgreeInProcess: a field the schema requires is
// in every object, so its rule goes on the field itself; the verdicts and
// the field refused stay the engine's.
func TestRulesOnRequiredFieldsAgreeInProcess(t *testing.T) {
	s := testSchema()
	spec := s.Properties["spec"]
	spec.Required = []string{"name", "list", "labels", "plain"}
	s.Properties["spec"] = spec
	rules, _, err := For(reflect.TypeFor[testObject](), "Widget", s)
	require.NoError(t, err)
	onField := map[string]string{}
	for _, r := range rules {
		if len(r.Field) > 0 {
			onField[r.Path] = r.Validation.Rule
		}
	}
	for _, path := range []string{"spec.name", "spec.list", "spec.labels", "spec.plain"} {
		assert.Contains(t, onField, path, "a required field's rule is on the field")
	}
	assert.NotContains(t, onField["spec.plain"], "oldSelf.plain", "a struct is compared on itself")
	p := newInProcess(t, s)
	const required = `"name":"a","list":["x"],"labels":{"k":"v"},"plain":{"name":"p"}`
	tests := []struct {
		name     string
		old, new string
		field    string // the field refused; "" for none
	}{
		{"unchanged", required, required, ""},
		{"string changed", required, `"name":"b","list":["x"],"labels":{"k":"v"},"plain":{"name":"p"}`, "spec.name"},
		{"list changed", required, `"name":"a","list":["y"],"labels":{"k":"v"},"plain":{"name":"p"}`, "spec.list"},
		{"list emptied", required, `"name":"a","list":[],"labels":{"k":"v"},"plain":{"name":"p"}`, "spec.list"},
		{"map changed", required, `"name":"a","list":["x"],"labels":{"k":"w"},"plain":{"name":"p"}`, "spec.labels"},
		{"struct field changed", required, `"name":"a","list":["x"],"labels":{"k":"v"},"plain":{"name":"q"}`, "spec.plain"},
		{"struct field set", required, `"name":"a","list":["x"],"labels":{"k":"v"},"plain":{"name":"p","size":1}`, "spec.plain"},
		{"struct field removed", required, `"name":"a","list":["x"],"labels":{"k":"v"},"plain":{}`, "spec.plain"},
		{"struct zero field is absent", required, `"name":"a","list":["x"],"labels":{"k":"v"},"plain":{"name":"p","size":0}`, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { p.agree(t, tt.old, tt.new, tt.field) })
	}
}

func TestMessagesSayWhatWasRefused(t *testing.T) {
	p := newInProcess(t, testSchema())
	for _, tt := range []struct{ old, new, want string }{
		{`"name":"a"`, `"name":"b"`, "spec.name: Forbidden: create-only field: it cannot be changed after the Widget is created; delete and recreate the Widget to change it"},
		{`"name":"a"`, ``, "spec.name: Forbidden: create-only field: it cannot be removed after the Widget is created; put the old value back, or delete and recreate the Widget"},
		{``, `"name":"a"`, "spec.name: Forbidden: create-only field: it cannot be set after the Widget is created (it was not set then); delete and recreate the Widget to set it"},
		{`"ref":{"name":"r"}`, `"ref":{"name":"s"}`, "spec.ref: Forbidden: create-only field: it cannot be changed after the Widget is created; delete and recreate the Widget to change it"},
		{`"list":["x"]`, ``, "spec.list: Forbidden: create-only field: it cannot be removed after the Widget is created; put the old value back, or delete and recreate the Widget"},
	} {
		errs := p.errors(t, tt.old, tt.new)
		require.Len(t, errs, 1, "%s -> %s", tt.old, tt.new)
		assert.Equal(t, tt.want, errs[0].Error())
	}
}

// inProcess evaluates the rules generated for a schema of testObject with
// the API server's own CEL validator, in process, beside the engine.
type inProcess struct {
	structural *structuralschema.Structural
	validator  *cel.Validator
	policy     *validate.Policy
}

func newInProcess(t *testing.T, s *apiextensionsv1.JSONSchemaProps) *inProcess {
	t.Helper()
	rules, _, err := For(reflect.TypeFor[testObject](), "Widget", s)
	require.NoError(t, err)
	attach(s, rules)
	var internal apiextensions.JSONSchemaProps
	require.NoError(t, apiextensionsv1.Convert_v1_JSONSchemaProps_To_apiextensions_JSONSchemaProps(s, &internal, nil))
	structural, err := structuralschema.NewStructural(&internal)
	require.NoError(t, err)
	validator := cel.NewValidator(structural, true, celconfig.PerCallLimit)
	require.NotNil(t, validator)
	policy, err := validate.For[testObject]()
	require.NoError(t, err)
	return &inProcess{structural: structural, validator: validator, policy: policy}
}

// errors are the rules' refusals of the update of a spec with the members
// old to one with the members new.
func (p *inProcess) errors(t *testing.T, old, new string) utilfield.ErrorList {
	t.Helper()
	errs, _ := p.validator.Validate(context.Background(), nil, p.structural, object(t, new), object(t, old), celconfig.RuntimeCELCostBudget)
	return errs
}

// agree checks that the rules and the engine both refuse that update for
// the field named, or, when it is "", that neither refuses it.
func (p *inProcess) agree(t *testing.T, old, new, refused string) {
	t.Helper()
	errs := p.errors(t, old, new)
	var celFields []string
	for _, e := range errs {
		celFields = append(celFields, e.Field)
	}
	var oldT, newT testObject
	decodeInto(t, object(t, old), &oldT)
	decodeInto(t, object(t, new), &newT)
	var engineFields []string
	for _, e := range p.policy.ValidateUpdate(&oldT, &newT) {
		engineFields = append(engineFields, e.Field)
	}
	if refused == "" {
		assert.Empty(t, celFields, "CEL: %v", errs)
		assert.Empty(t, engineFields, "engine")
		return
	}
	assert.Equal(t, []string{refused}, celFields, "CEL: %v", errs)
	assert.Equal(t, []string{refused}, engineFields, "engine")
}

// attach puts each rule on the schema where it goes, as Apply does on a
// CRD manifest.
func attach(s *apiextensionsv1.JSONSchemaProps, rules []Rule) {
	for _, r := range rules {
		prop := s.Properties[r.Property]
		if len(r.Field) == 0 {
			prop.XValidations = append(prop.XValidations, r.Validation)
		} else {
			field := prop.Properties[r.Field[0]]
			field.XValidations = append(field.XValidations, r.Validation)
			prop.Properties[r.Field[0]] = field
		}
		s.Properties[r.Property] = prop
	}
}

// object builds an object whose spec has the given JSON members.
func object(t *testing.T, members string) map[string]any {
	t.Helper()
	var obj map[string]any
	require.NoError(t, utiljson.Unmarshal([]byte(`{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"w"},"spec":{`+members+`}}`), &obj))
	return obj
}

func decodeInto(t *testing.T, obj map[string]any, into any) {
	t.Helper()
	raw, err := utiljson.Marshal(obj)
	require.NoError(t, err)
	require.NoError(t, utiljson.Unmarshal(raw, into))
}

func TestMessagesNameTheKind(t *testing.T) {
	got := messages("Db", "!has(oldSelf.x)", "!has(self.x)")
	assert.Equal(t, "!has(oldSelf.x) ? 'create-only field: it cannot be set after the Db is created (it was not set then); delete and recreate the Db to set it' : "+
		"!has(self.x) ? 'create-only field: it cannot be removed after the Db is created; put the old value back, or delete and recreate the Db' : "+
		"'create-only field: it cannot be changed after the Db is created; delete and recreate the Db to change it'", got)
}
