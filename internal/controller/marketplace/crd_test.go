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
	assert.Equal(t, "labels", h.crd(crd).Annotations[AnnotationDeprecated])

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
	assert.Equal(t, []string{"lockstep:services:queues:edit admin,edit", "lockstep:services:queues:view view"}, h.roles())
}

// Hostile schemas of some services never keep the others' kinds from
// being applied: each offering gets its condition.
func TestTypedKindHostileSchemas(t *testing.T) {
	h := newHarness(t)
	h.r.AggregateRoles = false
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
