package marketplace

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/lockstep-dev/lockstep/api/v1alpha1"
	"github.com/lockstep-dev/lockstep/internal/broker/osbapi"
	"github.com/lockstep-dev/lockstep/internal/catalog"
	typedobject "github.com/lockstep-dev/lockstep/internal/typed/object"
	"github.com/lockstep-dev/lockstep/internal/typed/render"
)

var pgResource = schema.GroupVersionResource{Group: "services.lockstep.dev", Version: "v1alpha1", Resource: "postgresqldbs"}

// ready is an offering's TypedKindReady status and reason, whether its
// kind is established, and the deprecated parameters it shows.
func ready(o v1alpha1.ServiceOffering) string {
	c := meta.FindStatusCondition(o.Status.Conditions, v1alpha1.ConditionTypedKindReady)
	if c == nil {
		return "none"
	}
	out := string(c.Status) + " " + c.Reason
	if tk := o.Status.TypedKind; tk != nil {
		if tk.Established {
			out += " established"
		}
		if len(tk.DeprecatedParameters) > 0 {
			out += " deprecated=" + strings.Join(tk.DeprecatedParameters, ",")
		}
	}
	return out
}

// establish makes the API server serve the CRD of name, as its
// apiextensions controller does.
func (h *harness) establish(name string) {
	h.t.Helper()
	crd := h.crd(name)
	crd.Status.Conditions = []apiextensionsv1.CustomResourceDefinitionCondition{{Type: apiextensionsv1.Established, Status: apiextensionsv1.ConditionTrue}}
	require.NoError(h.t, h.client.Status().Update(context.Background(), crd))
}

func (h *harness) crd(name string) *apiextensionsv1.CustomResourceDefinition {
	h.t.Helper()
	var crd apiextensionsv1.CustomResourceDefinition
	require.NoError(h.t, h.client.Get(context.Background(), client.ObjectKey{Name: name}, &crd))
	return &crd
}

// parameters are the properties of spec.parameters of CRD name, each with
// its description's first words.
func (h *harness) parameters(name string) map[string]string {
	h.t.Helper()
	out := map[string]string{}
	for k, p := range parametersOf(h.crd(name)).Properties {
		first, _, _ := strings.Cut(p.Description, ";")
		out[k] = first
	}
	return out
}

// object is an object of a typed kind with parameters.
func object(ns, name string, parameters map[string]any) unstructured.Unstructured {
	u := unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{"plan": "small", "parameters": parameters}}}
	u.SetNamespace(ns)
	u.SetName(name)
	return u
}

// A kind's CRD is applied; once the API server serves it the offering is
// ready; a catalog change applies it again, keeping a parameter objects
// still set, deprecated, until none does; an update the API server
// refuses leaves the CRD as it was.
func TestTypedKindCRD(t *testing.T) {
	h := newHarness(t)
	h.activate("acme", activation("", "postgresql-db"))
	cat := typedCatalog()
	h.sync(cat)
	const crd = "postgresqldbs.services.lockstep.dev"
	assert.Equal(t, "False Applying", ready(h.offering("acme.postgresql-db")))
	h.establish(crd)
	h.sync(cat)
	assert.Equal(t, "True Established established", ready(h.offering("acme.postgresql-db")))
	msg := meta.FindStatusCondition(h.offering("acme.postgresql-db").Status.Conditions, v1alpha1.ConditionTypedKindReady).Message
	assert.Contains(t, msg, "the API server serves kind PostgresqlDb (services.lockstep.dev/v1alpha1): kubectl explain postgresqldbs.spec.parameters")
	assert.Equal(t, map[string]string{"size": "Size in GB.", "labels": ""}, h.parameters(crd))
	assert.Equal(t, 0, h.sync(cat), "settled")

	// Objects set labels; the catalog drops it. While the objects cannot
	// be listed, the CRD stays as it was.
	assert.Empty(t, h.lists.listed, "no objects listed while nothing the objects could set left the schema")
	h.kinds[pgResource] = []unstructured.Unstructured{object("team", "a", map[string]any{"labels": map[string]any{"x-a": "b"}}), object("team", "b", nil)}
	cat.Services[2].Plans[0].Schemas.ServiceInstance.Create.Parameters = json.RawMessage(`{"type":"object","properties":{"size":{"type":"integer","description":"Size in GB."},"tier":{"type":"string"}}}`)
	h.lists.err = apierrors.NewTooManyRequests("storage is (re)initializing", 1)
	h.sync(cat)
	assert.Equal(t, "False ApplyFailed", ready(h.offering("acme.postgresql-db")))
	assert.Equal(t, map[string]string{"size": "Size in GB.", "labels": ""}, h.parameters(crd), "as it was")
	h.lists.err = nil
	h.sync(cat)
	assert.Equal(t, "True Established established deprecated=labels", ready(h.offering("acme.postgresql-db")))
	assert.Equal(t, map[string]string{"size": "Size in GB.", "tier": "", "labels": "Deprecated: no plan of the service has it any more"}, h.parameters(crd))
	assert.Equal(t, `["labels"]`, h.crd(crd).Annotations[AnnotationDeprecated])

	// Until no object sets it.
	h.kinds[pgResource] = h.kinds[pgResource][1:]
	h.sync(cat)
	assert.Equal(t, "True Established established", ready(h.offering("acme.postgresql-db")))
	assert.Equal(t, map[string]string{"size": "Size in GB.", "tier": ""}, h.parameters(crd))

	// The API server refuses the next rendering: the CRD stays as it was.
	h.refuse = apierrors.NewInvalid(schema.GroupKind{Group: "apiextensions.k8s.io", Kind: "CustomResourceDefinition"}, crd,
		field.ErrorList{field.Forbidden(field.NewPath("spec"), "a policy of the cluster says no")})
	cat.Services[2].Plans[0].Schemas.ServiceInstance.Create.Parameters = json.RawMessage(`{"type":"object","properties":{"size":{"type":"integer"}}}`)
	h.sync(cat)
	o := h.offering("acme.postgresql-db")
	assert.Equal(t, "False CRDUpdateRefused established", ready(o))
	msg = meta.FindStatusCondition(o.Status.Conditions, v1alpha1.ConditionTypedKindReady).Message
	assert.Contains(t, msg, "a policy of the cluster says no")
	assert.Contains(t, msg, "the CRD as it was stays, and its objects keep working")
	assert.Equal(t, map[string]string{"size": "Size in GB.", "tier": ""}, h.parameters(crd), "as it was")

	h.refuse = nil
	h.sync(cat)
	assert.Equal(t, "True Established established", ready(h.offering("acme.postgresql-db")))
	assert.Equal(t, map[string]string{"size": ""}, h.parameters(crd))
}

// schemaAt is the schema of spec.parameters of crd at path ("[*]": an
// array's items, "*": a map's values); nil when it has none there.
func schemaAt(crd *apiextensionsv1.CustomResourceDefinition, path ...string) *apiextensionsv1.JSONSchemaProps {
	s := parametersOf(crd)
	for _, name := range path {
		switch {
		case s == nil:
			return nil
		case name == "[*]" && s.Items != nil:
			s = s.Items.Schema
		case name == "*" && s.AdditionalProperties != nil:
			s = s.AdditionalProperties.Schema
		default:
			p, ok := s.Properties[name]
			if !ok {
				return nil
			}
			s = &p
		}
	}
	return s
}

// A catalog change keeps, deprecated, what objects set at any depth that
// the new schema drops, until no object sets it; below a value the new
// schema leaves free nothing needs keeping; a CRD that keeping would
// make one the API server refuses is not applied, and the CRD as it was
// stays.
func TestTypedKindCRDKeepsNestedParameters(t *testing.T) {
	const (
		backup = `{"type":"object","properties":{"size":{"type":"integer"},"backup":{"type":"object","description":"Backups.","additionalProperties":false,"properties":{"window":{"type":"string","description":"Backup window."},"keep":{"type":"integer"}}}}}`
		nodes  = `{"type":"object","properties":{"nodes":{"type":"array","items":{"type":"object","additionalProperties":false,"properties":{"name":{"type":"string"},"zone":{"type":"string","description":"Zone."}}}}}}`
	)
	for _, tc := range []struct {
		name, was, now string
		parameters     map[string]any
		// breakLive, when set, changes the CRD the API server holds
		// before the catalog changes.
		breakLive func(*apiextensionsv1.CustomResourceDefinition)
		// want is the offering's TypedKindReady as ready writes it; at is
		// where the CRD keeps the deprecated parameter, and description
		// the description it then has.
		want, description string
		at                []string
		// held is what the message of a held update says.
		held string
	}{{
		name: "a nested property", was: backup,
		now:        `{"type":"object","properties":{"size":{"type":"integer"},"backup":{"type":"object","additionalProperties":false,"properties":{"keep":{"type":"integer"}}}}}`,
		parameters: map[string]any{"backup": map[string]any{"window": "02:00", "keep": int64(3)}},
		want:       "True Established established deprecated=backup.window", at: []string{"backup", "window"}, description: "Deprecated: no plan of the service has it any more; kept while objects set it. Backup window.",
	}, {
		name: "a property of an array's objects", was: nodes,
		now:        `{"type":"object","properties":{"nodes":{"type":"array","items":{"type":"object","additionalProperties":false,"properties":{"name":{"type":"string"}}}}}}`,
		parameters: map[string]any{"nodes": []any{map[string]any{"name": "a", "zone": "eu"}}},
		want:       "True Established established deprecated=nodes[*].zone", at: []string{"nodes", "[*]", "zone"}, description: "Deprecated: no plan of the service has it any more; kept while objects set it. Zone.",
	}, {
		name: "a dropped parent, kept whole", was: backup,
		now:        `{"type":"object","additionalProperties":false,"properties":{"size":{"type":"integer"}}}`,
		parameters: map[string]any{"backup": map[string]any{"window": "02:00"}},
		want:       "True Established established deprecated=backup", at: []string{"backup", "window"}, description: "Backup window.",
	}, {
		name: "a parent left free (any value)", was: backup,
		now:        `{"type":"object","properties":{"size":{"type":"integer"},"backup":{}}}`,
		parameters: map[string]any{"backup": map[string]any{"window": "02:00"}},
		want:       "True Established established",
	}, {
		name: "a kept property the API server would refuse", was: backup,
		now:        `{"type":"object","properties":{"size":{"type":"integer"},"backup":{"type":"object","properties":{"keep":{"type":"integer"}}}}}`,
		parameters: map[string]any{"backup": map[string]any{"window": "02:00"}},
		breakLive: func(crd *apiextensionsv1.CustomResourceDefinition) {
			spec := crd.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"]
			params := spec.Properties["parameters"]
			backup := params.Properties["backup"]
			backup.Properties["window"] = apiextensionsv1.JSONSchemaProps{Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{"untyped": {}}}
			params.Properties["backup"] = backup
			spec.Properties["parameters"] = params
			crd.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"] = spec
		},
		want: "False CRDUpdateHeld established", at: []string{"backup", "window", "untyped"},
		held: "drops parameters that objects of kind PostgresqlDb set (backup.window)",
	}, {
		name: "an object that becomes a string", was: backup,
		now:        `{"type":"object","properties":{"size":{"type":"integer"},"backup":{"type":"string"}}}`,
		parameters: map[string]any{"backup": map[string]any{"window": "02:00"}},
		want:       "False CRDUpdateHeld established", at: []string{"backup", "window"}, description: "Backup window.",
		held: "changes the type of parameters that objects of kind PostgresqlDb set as objects (backup)",
	}} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			h.activate("acme", activation("", "postgresql-db"))
			cat := typedCatalog()
			const crd = "postgresqldbs.services.lockstep.dev"
			cat.Services[2].Plans[0].Schemas.ServiceInstance.Create.Parameters = json.RawMessage(tc.was)
			h.sync(cat)
			h.establish(crd)
			h.sync(cat)
			require.Equal(t, "True Established established", ready(h.offering("acme.postgresql-db")))
			if tc.breakLive != nil {
				live := h.crd(crd)
				tc.breakLive(live)
				require.NoError(t, h.client.Update(context.Background(), live))
			}

			h.kinds[pgResource] = []unstructured.Unstructured{object("team", "a", tc.parameters), object("team", "b", nil)}
			cat.Services[2].Plans[0].Schemas.ServiceInstance.Create.Parameters = json.RawMessage(tc.now)
			h.sync(cat)
			o := h.offering("acme.postgresql-db")
			assert.Equal(t, tc.want, ready(o))
			if tc.at != nil {
				kept := schemaAt(h.crd(crd), tc.at...)
				require.NotNil(t, kept, "the CRD keeps %v", tc.at)
				assert.Equal(t, tc.description, kept.Description)
			}
			if tc.breakLive == nil {
				assert.Empty(t, render.Validate(h.crd(crd)), "the API server takes the CRD")
			}
			if tc.held != "" {
				msg := meta.FindStatusCondition(o.Status.Conditions, v1alpha1.ConditionTypedKindReady).Message
				assert.Contains(t, msg, tc.held)
				assert.Contains(t, msg, "the CRD as it was stays")
			}

			// Until no object sets it.
			h.kinds[pgResource] = h.kinds[pgResource][1:]
			h.sync(cat)
			assert.Equal(t, "True Established established", ready(h.offering("acme.postgresql-db")))
			assert.Empty(t, h.crd(crd).Annotations[AnnotationDeprecated])
			if tc.at != nil {
				assert.Nil(t, schemaAt(h.crd(crd), tc.at...), "what no object sets goes")
			}
		})
	}
}

// A parameter the plans come to require at creation is required by the
// CRD only once no object of the kind lacks it: an object made before
// could otherwise not be updated at all. Meanwhile its description and
// status.typedKind.dropped say why.
func TestTypedKindCRDRequiresOnceNoObjectLacks(t *testing.T) {
	const (
		crd   = "postgresqldbs.services.lockstep.dev"
		was   = `{"type":"object","properties":{"size":{"type":"integer"},"version":{"type":"string","description":"Version."}}}`
		now   = `{"type":"object","required":["version"],"properties":{"size":{"type":"integer"},"version":{"type":"string","description":"Version."}}}`
		after = `{"type":"object","properties":{"size":{"type":"integer"}}}`
	)
	h := newHarness(t)
	h.activate("acme", activation("", "postgresql-db"))
	cat := typedCatalog()
	plan := &cat.Services[2].Plans[0]
	plan.Schemas.ServiceInstance.Create.Parameters = json.RawMessage(was)
	plan.Schemas.ServiceInstance.Update = &osbapi.InputParameters{Parameters: json.RawMessage(after)}
	h.sync(cat)
	h.establish(crd)
	h.sync(cat)

	h.kinds[pgResource] = []unstructured.Unstructured{
		object("team", "old", map[string]any{"size": int64(1)}),
		object("team", "bare", nil),
		object("team", "new", map[string]any{"version": "16"}),
	}
	plan.Schemas.ServiceInstance.Create.Parameters = json.RawMessage(now)
	h.sync(cat)
	params := parametersOf(h.crd(crd))
	assert.Empty(t, params.Required, "objects lack it")
	assert.Equal(t, "Version.\n\n"+render.UnrequiredNote, params.Properties["version"].Description)
	assert.Equal(t, `["version"]`, h.crd(crd).Annotations[AnnotationUnrequired])
	tk := h.offering("acme.postgresql-db").Status.TypedKind
	assert.Contains(t, tk.Dropped, v1alpha1.DroppedKeyword{Path: "spec.parameters.version", Keyword: "required", Why: unrequiredWhy})
	assert.Equal(t, 0, h.sync(cat), "unchanged while the objects are")

	// Once every object sets it, the CRD requires it.
	h.kinds[pgResource] = h.kinds[pgResource][2:]
	h.sync(cat)
	params = parametersOf(h.crd(crd))
	assert.Equal(t, []string{"version"}, params.Required)
	assert.Equal(t, "Version.", params.Properties["version"].Description)
	assert.Empty(t, h.crd(crd).Annotations[AnnotationUnrequired])
	tk = h.offering("acme.postgresql-db").Status.TypedKind
	assert.NotContains(t, tk.Dropped, v1alpha1.DroppedKeyword{Path: "spec.parameters.version", Keyword: "required", Why: unrequiredWhy})
	assert.Equal(t, 0, h.sync(cat), "settled")
}

// A refused first CRD leaves the kind unserved, and says so.
func TestTypedKindCRDRefused(t *testing.T) {
	h := newHarness(t)
	h.refuse = apierrors.NewForbidden(schema.GroupResource{Group: "apiextensions.k8s.io", Resource: "customresourcedefinitions"}, "x", nil)
	h.activate("acme", activation("", "postgresql-db"))
	h.sync(typedCatalog())
	assert.Equal(t, "False CRDRefused", ready(h.offering("acme.postgresql-db")))
	assert.Empty(t, h.crds())
}

// Deactivating a service whose kind has objects keeps its CRD (a race the
// ServiceBroker guard cannot close), and the offering says why; once they
// are gone, the CRD and its roles go. The same when the ServiceBroker
// goes.
func TestTypedKindRetired(t *testing.T) {
	h := newHarness(t)
	h.activate("acme", activation("", "*"))
	h.sync(typedCatalog())
	h.kinds[pgResource] = []unstructured.Unstructured{object("team", "db", nil)}

	h.activate("acme", activation("", "db", "queue"))
	h.sync(typedCatalog())
	o := h.offering("acme.postgresql-db")
	assert.Equal(t, "False InUse", ready(o))
	assert.Equal(t, "PostgresqlDb", o.Status.TypedKind.Kind, "the offering keeps showing the kind")
	msg := meta.FindStatusCondition(o.Status.Conditions, v1alpha1.ConditionTypedKindReady).Message
	assert.Contains(t, msg, "1 object(s) of the kind remain (team/db)")
	assert.Contains(t, h.crds(), "postgresqldbs.services.lockstep.dev")

	h.kinds[pgResource] = nil
	h.sync(typedCatalog())
	assert.Equal(t, "none", ready(h.offering("acme.postgresql-db")))
	assert.Equal(t, []string{"dbs.services.lockstep.dev", "queues.services.lockstep.dev"}, h.crds())
	assert.NotContains(t, strings.Join(h.roles(), " "), "postgresqldbs")

	// The ServiceBroker goes: its CRDs go, except one objects keep.
	h.kinds[schema.GroupVersionResource{Group: "services.lockstep.dev", Version: "v1alpha1", Resource: "queues"}] = []unstructured.Unstructured{object("team", "q", nil)}
	require.NoError(t, h.client.Delete(context.Background(), &v1alpha1.ServiceBroker{ObjectMeta: metav1.ObjectMeta{Name: "acme"}}))
	res, err := h.r.Reconcile(context.Background(), ctrl.Request{NamespacedName: client.ObjectKey{Name: "acme"}})
	require.NoError(t, err)
	assert.Equal(t, retryAfter, res.RequeueAfter, "looked at again while objects keep a CRD")
	assert.Equal(t, []string{"queues.services.lockstep.dev"}, h.crds())
	assert.Equal(t, []string{"lockstep:services:queues:edit ", "lockstep:services:queues:view "}, h.roles())
}

// Hostile schemas of some services never keep the others' kinds from
// being applied: each offering gets its condition.
func TestTypedKindHostileSchemas(t *testing.T) {
	h := newHarness(t)
	cat := typedCatalog()
	props := make([]string, 3000)
	for i := range props {
		props[i] = fmt.Sprintf(`"p%d":{"type":"integer"}`, i)
	}
	wide := `{"type":"object","properties":{` + strings.Join(props, ",") + `}}`
	deep := strings.Repeat(`{"type":"object","properties":{"a":`, 200) + `{"type":"string"}` + strings.Repeat(`}}`, 200)
	for _, s := range []struct{ name, schema string }{
		{"deep", deep},
		{"recursive", `{"type":"object","properties":{"self":{"$ref":"#"}}}`},
		{"wide", wide},
		{"invalid", `{"type":"objekt"}`},
	} {
		cat.Services = append(cat.Services, osbapi.Service{ID: s.name + "-id", Name: s.name, Description: s.name, Bindable: true,
			Plans: []osbapi.Plan{{ID: s.name + "-p", Name: "p", Description: "p", Schemas: &osbapi.Schemas{ServiceInstance: &osbapi.ServiceInstanceSchemas{
				Create: &osbapi.InputParameters{Parameters: json.RawMessage(s.schema)}}}}}})
	}
	h.activate("acme", activation("", "*"))
	h.sync(cat)
	for _, name := range h.offerings() {
		assert.Equal(t, "False Applying", ready(h.offering(name)), name)
	}
	assert.Len(t, h.crds(), 7, "every kind's CRD is applied")
	assert.NotEmpty(t, h.offering("acme.wide").Status.TypedKind.FreeParameters)
	assert.Empty(t, h.offering("acme.postgresql-db").Status.TypedKind.FreeParameters)
	for _, r := range h.roles() {
		assert.True(t, strings.HasSuffix(r, " "), "not aggregated: %s", r)
	}
}

// A plan that leaves the catalog stays, marked removed, while an object of
// a typed kind names it, as for a ServiceInstance; then it goes, and with
// its service the kind's CRD.
//
// The objects are listed only then: not in the pass that applies the
// kind's CRD, nor in the pass after it is established (a list of a kind
// whose watch cache the API server is starting waits). A list that fails
// stops the pass, and the plan stays as it was.
func TestTypedKindObjectsKeepRemovedPlans(t *testing.T) {
	h := newHarness(t)
	h.activate("acme", activation("", "postgresql-db"))
	h.sync(typedCatalog())
	h.establish("postgresqldbs.services.lockstep.dev")
	h.sync(typedCatalog())
	assert.Empty(t, h.lists.listed, "no plan left the catalog")
	h.kinds[pgResource] = []unstructured.Unstructured{object("team", "db", nil)}

	cut := typedCatalog()
	cut.Services = cut.Services[:2]
	full := typedCatalog()
	removed := osbapi.ServicePlan{Service: &full.Services[2], Plan: &full.Services[2].Plans[0]}
	h.lists.err = apierrors.NewTooManyRequests("storage is (re)initializing", 1)
	h.catalogs.Store(catalog.NewEntry("acme", nil, &cut, []osbapi.ServicePlan{removed}, time.Now()))
	_, err := h.r.Reconcile(context.Background(), ctrl.Request{NamespacedName: client.ObjectKey{Name: "acme"}})
	assert.ErrorContains(t, err, "listing the objects of typed kind PostgresqlDb")
	assert.False(t, h.plans()["acme.postgresql-db.small"].Status.RemovedFromCatalog, "as it was")

	h.lists.err = nil
	h.sync(cut, removed)
	assert.Equal(t, []string{"postgresqldbs", "postgresqldbs"}, h.lists.listed)
	assert.Contains(t, h.offerings(), "acme.postgresql-db (removed)")
	assert.True(t, h.plans()["acme.postgresql-db.small"].Status.RemovedFromCatalog)
	assert.Equal(t, []string{"postgresqldbs.services.lockstep.dev"}, h.crds())

	h.kinds[pgResource] = nil
	h.sync(cut, removed)
	assert.NotContains(t, keys(h.plans()), "acme.postgresql-db.small")
	assert.Equal(t, []string{"acme.db", "acme.queue"}, h.offerings())
	assert.Empty(t, h.crds())
	assert.Empty(t, h.roles())
}

// A CRD of the kind's name that lockstep did not apply is left alone.
func TestTypedKindCRDTaken(t *testing.T) {
	other := &apiextensionsv1.CustomResourceDefinition{ObjectMeta: metav1.ObjectMeta{Name: "postgresqldbs.services.lockstep.dev", Labels: map[string]string{"owner": "someone"}}}
	h := newHarness(t, other)
	h.activate("acme", activation("", "postgresql-db"))
	h.sync(typedCatalog())
	o := h.offering("acme.postgresql-db")
	assert.Equal(t, "False CRDTaken", ready(o))
	assert.Contains(t, meta.FindStatusCondition(o.Status.Conditions, v1alpha1.ConditionTypedKindReady).Message, "lockstep did not create it")
	assert.Equal(t, map[string]string{"owner": "someone"}, h.crd(other.Name).Labels, "untouched")
	assert.Empty(t, h.roles())

	h.activate("acme")
	h.sync(typedCatalog())
	assert.Equal(t, []string{other.Name}, h.crds(), "not deleted on deactivation either")
}

// The deprecated parameters a CRD keeps read from its annotation, a JSON
// array, or a list of names separated by commas.
func TestDeprecatedOf(t *testing.T) {
	with := func(v string) *apiextensionsv1.CustomResourceDefinition {
		return &apiextensionsv1.CustomResourceDefinition{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{AnnotationDeprecated: v}}}
	}
	assert.Nil(t, deprecatedOf(nil))
	assert.Nil(t, deprecatedOf(with("")))
	assert.Equal(t, []string{"backup.window", "a,b"}, deprecatedOf(with(`["backup.window","a,b"]`)))
	assert.Equal(t, []string{"labels", "tier"}, deprecatedOf(with("labels,tier")))
}

// Deactivating a kind that has no objects marks its CRD retiring before
// the last list of its objects: an object created just before the mark,
// found by that list, keeps the CRD and the mark goes; without one, the
// CRD and its roles go. The last list waits until the mark is the grace
// old; meanwhile the CRD stays, the offering says so, and activating the
// kind again removes the mark.
func TestTypedKindRetiringMark(t *testing.T) {
	const crd = "postgresqldbs.services.lockstep.dev"
	h := newHarness(t)
	var lists []string // at each list of the kind's objects: was its CRD marked?
	var late []unstructured.Unstructured
	h.lists.before = func(gvr schema.GroupVersionResource) {
		if gvr != pgResource {
			return
		}
		_, marked := typedobject.Retiring(h.crd(crd))
		lists = append(lists, fmt.Sprint(marked))
		if marked && late != nil {
			h.kinds[pgResource] = late // created while the kind was listed as empty
		}
	}
	deactivate := func() { h.activate("acme", activation("", "db", "queue")) }
	h.activate("acme", activation("", "*"))
	h.sync(typedCatalog())
	h.establish(crd)
	h.sync(typedCatalog())
	require.Equal(t, "True Established established", ready(h.offering("acme.postgresql-db")))

	// Without grace: marked, listed again at once, and the late object
	// keeps the CRD.
	late = []unstructured.Unstructured{object("team", "late", nil)}
	deactivate()
	h.sync(typedCatalog())
	require.NotEmpty(t, lists)
	assert.Equal(t, "true", lists[len(lists)-1], "the last list sees the CRD marked")
	assert.Equal(t, "False InUse established", ready(h.offering("acme.postgresql-db")))
	assert.Contains(t, h.crds(), crd)
	assert.NotContains(t, h.crd(crd).Annotations, typedobject.AnnotationRetiring, "the mark goes with the CRD kept")

	late, lists, h.kinds[pgResource] = nil, nil, nil
	h.sync(typedCatalog())
	require.NotEmpty(t, lists)
	assert.Equal(t, "true", lists[len(lists)-1], "the last list before the delete sees the CRD marked")
	assert.Equal(t, "none", ready(h.offering("acme.postgresql-db")))
	assert.NotContains(t, h.crds(), crd)
	assert.NotContains(t, strings.Join(h.roles(), " "), "postgresqldbs")

	// With a grace: marked, and not listed again until the mark is that old.
	h.r.RetireGrace = time.Hour
	h.activate("acme", activation("", "*"))
	h.sync(typedCatalog())
	h.establish(crd)
	h.sync(typedCatalog())
	deactivate()
	h.sync(typedCatalog())
	res, err := h.r.Reconcile(context.Background(), ctrl.Request{NamespacedName: client.ObjectKey{Name: "acme"}})
	require.NoError(t, err)
	assert.InDelta(t, time.Hour, res.RequeueAfter, float64(time.Minute), "the pass runs again when the mark is the grace old")
	o := h.offering("acme.postgresql-db")
	assert.Equal(t, "False Retiring established", ready(o))
	assert.Contains(t, meta.FindStatusCondition(o.Status.Conditions, v1alpha1.ConditionTypedKindReady).Message, "new objects of the kind are refused")
	assert.Contains(t, h.crd(crd).Annotations, typedobject.AnnotationRetiring)

	// Activated again: the mark goes.
	h.activate("acme", activation("", "*"))
	h.sync(typedCatalog())
	assert.Equal(t, "True Established established", ready(h.offering("acme.postgresql-db")))
	assert.NotContains(t, h.crd(crd).Annotations, typedobject.AnnotationRetiring)

	// Deactivated again, and the grace passed: the CRD goes.
	lists = nil
	deactivate()
	h.sync(typedCatalog())
	marked := h.crd(crd)
	marked.Annotations[typedobject.AnnotationRetiring] = time.Now().Add(-2 * time.Hour).UTC().Format(time.RFC3339)
	require.NoError(t, h.client.Update(context.Background(), marked))
	h.sync(typedCatalog())
	require.NotEmpty(t, lists)
	assert.Equal(t, "true", lists[len(lists)-1])
	assert.Equal(t, "none", ready(h.offering("acme.postgresql-db")))
	assert.NotContains(t, h.crds(), crd)
}

// An upgrade of lockstep whose renderer makes something else of the same
// service (a new render.Revision) renders the kind and applies its CRD
// again, with the catalog unchanged.
func TestTypedKindRendererRevisionAppliesAgain(t *testing.T) {
	const crd = "postgresqldbs.services.lockstep.dev"
	h := newHarness(t)
	h.activate("acme", activation("", "postgresql-db"))
	h.sync(typedCatalog())
	h.establish(crd)
	h.sync(typedCatalog())
	before := h.crd(crd)
	renderedBefore := h.offering("acme.postgresql-db").Status.TypedKind.RenderedFrom
	assert.Equal(t, 0, h.sync(typedCatalog()), "settled")
	assert.Equal(t, before.ResourceVersion, h.crd(crd).ResourceVersion, "not applied again while nothing changes")

	defer func(was int) { rendererRevision = was }(rendererRevision)
	rendererRevision++
	h.sync(typedCatalog())
	after := h.crd(crd)
	assert.NotEqual(t, renderedBefore, h.offering("acme.postgresql-db").Status.TypedKind.RenderedFrom, "rendered again")
	assert.NotEqual(t, before.Annotations[AnnotationAppliedFrom], after.Annotations[AnnotationAppliedFrom], "applied again")
	assert.NotEqual(t, before.ResourceVersion, after.ResourceVersion)
	assert.Equal(t, "True Established established", ready(h.offering("acme.postgresql-db")))
}
