package marketplace

import (
	"context"
	"encoding/json"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/lockstep-dev/lockstep/api/v1alpha1"
	"github.com/lockstep-dev/lockstep/internal/broker/fakebroker"
	"github.com/lockstep-dev/lockstep/internal/broker/osbapi"
)

// pgSchema types size and leaves labels to patternProperties, which a CRD
// cannot hold.
const pgSchema = `{"type":"object","properties":{
  "size":{"type":"integer","minimum":1,"description":"Size in GB."},
  "labels":{"type":"object","patternProperties":{"^x-":{"type":"string"}}}}}`

// typedCatalog is the default catalog ("db", whose plan "fixed" has no
// schemas, and "queue", without schemas) and "postgresql-db", whose one
// plan has a create schema.
func typedCatalog() osbapi.Catalog {
	cat := fakebroker.DefaultCatalog()
	cat.Services = append(cat.Services, osbapi.Service{
		ID: "pg-id", Name: "postgresql-db", Description: "PostgreSQL", Bindable: true,
		Plans: []osbapi.Plan{{ID: "pg-small-id", Name: "small", Description: "small",
			Schemas: &osbapi.Schemas{ServiceInstance: &osbapi.ServiceInstanceSchemas{
				Create: &osbapi.InputParameters{Parameters: json.RawMessage(pgSchema)}}}}},
	})
	return cat
}

// activate sets the typed kinds of broker name.
func (h *harness) activate(name string, kinds ...v1alpha1.TypedKindActivation) {
	h.t.Helper()
	var sb v1alpha1.ServiceBroker
	require.NoError(h.t, h.client.Get(context.Background(), client.ObjectKey{Name: name}, &sb))
	sb.Spec.TypedKinds = kinds
	require.NoError(h.t, h.client.Update(context.Background(), &sb))
}

func (h *harness) offering(name string) v1alpha1.ServiceOffering {
	h.t.Helper()
	var o v1alpha1.ServiceOffering
	require.NoError(h.t, h.client.Get(context.Background(), client.ObjectKey{Name: name}, &o))
	return o
}

// typedKindOf is an offering's typed kind and the reason of its
// TypedKindReady condition ("-" for no kind), or "none".
func typedKindOf(t *testing.T, o v1alpha1.ServiceOffering) string {
	c := meta.FindStatusCondition(o.Status.Conditions, v1alpha1.ConditionTypedKindReady)
	if c == nil {
		assert.Nil(t, o.Status.TypedKind, "a typed kind without its condition")
		return "none"
	}
	assert.Equal(t, metav1.ConditionFalse, c.Status, "no typed kind is ready while no CRD is established (no API server establishes it here)")
	kind := "-"
	if tk := o.Status.TypedKind; tk != nil {
		kind = tk.Kind
		assert.False(t, tk.Established)
	}
	return kind + " " + c.Reason
}

// crds are the names of the CRDs, sorted.
func (h *harness) crds() []string {
	h.t.Helper()
	var list apiextensionsv1.CustomResourceDefinitionList
	require.NoError(h.t, h.client.List(context.Background(), &list))
	var out []string
	for _, c := range list.Items {
		out = append(out, c.Name)
	}
	sort.Strings(out)
	return out
}

// roles are the ClusterRoles, sorted, each with the standard roles it
// aggregates into.
func (h *harness) roles() []string {
	h.t.Helper()
	var list rbacv1.ClusterRoleList
	require.NoError(h.t, h.client.List(context.Background(), &list))
	var out []string
	for _, r := range list.Items {
		var into []string
		for _, to := range []string{"admin", "edit", "view"} {
			if r.Labels["rbac.authorization.k8s.io/aggregate-to-"+to] == "true" {
				into = append(into, to)
			}
		}
		out = append(out, r.Name+" "+strings.Join(into, ","))
	}
	sort.Strings(out)
	return out
}

func activation(kind string, services ...string) v1alpha1.TypedKindActivation {
	return v1alpha1.TypedKindActivation{Services: services, Kind: kind}
}

func TestTypedKindActivation(t *testing.T) {
	tests := []struct {
		name  string
		kinds []v1alpha1.TypedKindActivation
		want  map[string]string // by offering
	}{
		{"no entries, no typed kind", nil,
			map[string]string{"acme.db": "none", "acme.queue": "none", "acme.postgresql-db": "none"}},
		{"every service", []v1alpha1.TypedKindActivation{activation("", "*")},
			map[string]string{"acme.db": "Db Applying", "acme.queue": "Queue Applying", "acme.postgresql-db": "PostgresqlDb Applying"}},
		{"a pattern", []v1alpha1.TypedKindActivation{activation("", "postgres*", "nosuch")},
			map[string]string{"acme.db": "none", "acme.queue": "none", "acme.postgresql-db": "PostgresqlDb Applying"}},
		{"a service with a kind", []v1alpha1.TypedKindActivation{activation("MessageQueue", "queue")},
			map[string]string{"acme.db": "none", "acme.queue": "MessageQueue Applying", "acme.postgresql-db": "none"}},
		{"the first entry with a kind names it", []v1alpha1.TypedKindActivation{
			activation("", "*"), activation("Database", "db"), activation("Other", "db")},
			map[string]string{"acme.db": "Database Applying", "acme.queue": "Queue Applying", "acme.postgresql-db": "PostgresqlDb Applying"}},
		{"a kind that is not a kind name", []v1alpha1.TypedKindActivation{activation("database", "db")},
			map[string]string{"acme.db": "- KindNameInvalid", "acme.queue": "none", "acme.postgresql-db": "none"}},
		{"two services of one broker want one kind: the first by name has it", []v1alpha1.TypedKindActivation{
			activation("", "db"), activation("Db", "queue")},
			map[string]string{"acme.db": "Db Applying", "acme.queue": "- NameClash", "acme.postgresql-db": "none"}},
		{"a plural is a name too", []v1alpha1.TypedKindActivation{
			activation("Dbs", "db"), activation("Db", "queue")},
			map[string]string{"acme.db": "Dbs Applying", "acme.queue": "- NameClash", "acme.postgresql-db": "none"}},
		{"a plural given is a name too", []v1alpha1.TypedKindActivation{
			{Services: []string{"db"}, Plural: "queues"}, activation("", "queue")},
			map[string]string{"acme.db": "Db Applying", "acme.queue": "- NameClash", "acme.postgresql-db": "none"}},
		{"a kind whose plural the cluster serves", []v1alpha1.TypedKindActivation{activation("Pod", "db")},
			map[string]string{"acme.db": "- NameClash", "acme.queue": "none", "acme.postgresql-db": "none"}},
		{"a plural given the cluster serves", []v1alpha1.TypedKindActivation{{Services: []string{"db"}, Plural: "secrets"}},
			map[string]string{"acme.db": "- NameClash", "acme.queue": "none", "acme.postgresql-db": "none"}},
		{"a service whose kind the cluster serves", []v1alpha1.TypedKindActivation{activation("", "*"), activation("QueuedJob", "queue")},
			map[string]string{"acme.db": "Db Applying", "acme.queue": "- NameClash", "acme.postgresql-db": "PostgresqlDb Applying"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t)
			h.activate("acme", tt.kinds...)
			h.sync(typedCatalog())
			got := map[string]string{}
			for _, name := range h.offerings() {
				got[name] = typedKindOf(t, h.offering(name))
			}
			assert.Equal(t, tt.want, got)
			assert.Equal(t, 0, h.sync(typedCatalog()), "again, unchanged")
		})
	}
}

// The status shows the kind, its CRD and what the CRD does not hold, and
// says that the CRD is applied; the kind is rendered (and its CRD
// applied) again only when the service changes.
func TestTypedKindStatus(t *testing.T) {
	h := newHarness(t)
	h.activate("acme", activation("", "postgresql-db", "db"))
	cat := typedCatalog()
	h.sync(cat)

	o := h.offering("acme.postgresql-db")
	tk := o.Status.TypedKind
	require.NotNil(t, tk)
	assert.Equal(t, "PostgresqlDb", tk.Kind)
	assert.Equal(t, "postgresqldbs", tk.Plural)
	assert.Equal(t, []string{"pd"}, tk.ShortNames)
	assert.Equal(t, "services.lockstep.dev/v1alpha1", tk.APIVersion)
	assert.Equal(t, "postgresqldbs.services.lockstep.dev", tk.CRDName)
	assert.False(t, tk.Established)
	assert.Empty(t, tk.FreeParameters)
	require.NotEmpty(t, tk.Dropped)
	assert.Equal(t, "patternProperties", tk.Dropped[0].Keyword)
	assert.Contains(t, tk.Dropped[0].Path, "plan small")
	assert.NotEmpty(t, tk.Dropped[0].Why)
	c := meta.FindStatusCondition(o.Status.Conditions, v1alpha1.ConditionTypedKindReady)
	require.NotNil(t, c)
	assert.Contains(t, c.Message, "the CRD of kind PostgresqlDb (postgresqldbs.services.lockstep.dev) is applied; the API server does not serve the kind yet")
	assert.Contains(t, c.Message, "status.typedKind.dropped")

	db := h.offering("acme.db").Status
	require.NotNil(t, db.TypedKind)
	assert.Equal(t, "plan fixed has no parameter schemas and takes any parameters", db.TypedKind.FreeParameters)

	rendered := tk.RenderedFrom
	assert.Equal(t, 0, h.sync(cat), "unchanged: nothing written")
	assert.Equal(t, rendered, h.offering("acme.postgresql-db").Status.TypedKind.RenderedFrom)

	cat.Services[2].Plans[0].Schemas.ServiceInstance.Create.Parameters = json.RawMessage(`{"type":"object","properties":{"size":{"type":"integer"}}}`)
	assert.Equal(t, 2, h.sync(cat), "the plan and the offering")
	tk = h.offering("acme.postgresql-db").Status.TypedKind
	assert.NotEqual(t, rendered, tk.RenderedFrom, "rendered again")
	assert.Empty(t, tk.Dropped)
}

// The administrator's plural and short names name the kind; a short name
// another resource has is not given, and the condition says why; a name
// made from words passes over a short name the cluster serves.
func TestTypedKindNames(t *testing.T) {
	h := newHarness(t)
	h.activate("acme",
		v1alpha1.TypedKindActivation{Services: []string{"db"}, Kind: "TeamDatabase", Plural: "teamdbs", ShortNames: []string{"tdb", "po"}},
		activation("QuickDatabase", "queue"), activation("", "postgresql-db"))
	h.served.Resources = append(h.served.Resources, &metav1.APIResourceList{GroupVersion: "example.com/v1", APIResources: []metav1.APIResource{
		{Name: "pods2", SingularName: "pod2", Kind: "Pod2", ShortNames: []string{"pd"}}}})
	h.sync(typedCatalog())

	db := h.offering("acme.db")
	require.NotNil(t, db.Status.TypedKind)
	assert.Equal(t, "TeamDatabase", db.Status.TypedKind.Kind)
	assert.Equal(t, "teamdbs", db.Status.TypedKind.Plural)
	assert.Equal(t, "teamdbs.services.lockstep.dev", db.Status.TypedKind.CRDName)
	assert.Equal(t, []string{"tdb"}, db.Status.TypedKind.ShortNames)
	c := meta.FindStatusCondition(db.Status.Conditions, v1alpha1.ConditionTypedKindReady)
	require.NotNil(t, c)
	assert.Contains(t, c.Message, `short name po: resource pods (v1) has it, so the kind goes without it (ServiceBroker "acme" spec.typedKinds, shortNames)`)

	queue := h.offering("acme.queue").Status.TypedKind
	require.NotNil(t, queue)
	assert.Empty(t, queue.ShortNames, "qd, QuickDatabase's initials, is queuedjobs' short name; the service's one word makes none")

	pg := h.offering("acme.postgresql-db").Status.TypedKind
	require.NotNil(t, pg)
	assert.Empty(t, pg.ShortNames, "pd is served")

	// A kind the offering shows keeps its names when the cluster serves
	// one of them later; the condition says so.
	h.served.Resources = append(h.served.Resources, &metav1.APIResourceList{GroupVersion: "other.example.com/v1", APIResources: []metav1.APIResource{
		{Name: "teamdbs", SingularName: "teamdb", Kind: "TeamDb"}}})
	h.sync(typedCatalog())
	db = h.offering("acme.db")
	assert.Equal(t, "TeamDatabase Applying", typedKindOf(t, db))
	c = meta.FindStatusCondition(db.Status.Conditions, v1alpha1.ConditionTypedKindReady)
	assert.Contains(t, c.Message, "resource teamdbs.other.example.com (other.example.com/v1) also has the name teamdbs, which the kind keeps")

	// One it does not show yet is refused, naming the resource.
	h.activate("acme", v1alpha1.TypedKindActivation{Services: []string{"db"}, Plural: "pods"})
	h.sync(typedCatalog())
	h.sync(typedCatalog())
	db = h.offering("acme.db")
	c = meta.FindStatusCondition(db.Status.Conditions, v1alpha1.ConditionTypedKindReady)
	require.NotNil(t, c)
	assert.Equal(t, ReasonNameClash, c.Reason)
	assert.Contains(t, c.Message, `kind Db (pods): its name "pods" is resource pods (v1)'s, which kubectl would find instead; give this service another kind or plural in ServiceBroker "acme" spec.typedKinds (kind, plural)`)
}

// A schema the CRD cannot type at all leaves spec.parameters free JSON,
// and the status says why.
func TestTypedKindUnusableSchema(t *testing.T) {
	h := newHarness(t)
	h.activate("acme", activation("", "postgresql-db"))
	cat := typedCatalog()
	cat.Services[2].Plans[0].Schemas.ServiceInstance.Create.Parameters = json.RawMessage(`{"type":"string"}`)
	h.sync(cat)
	o := h.offering("acme.postgresql-db")
	assert.Equal(t, "PostgresqlDb Applying", typedKindOf(t, o))
	assert.NotEmpty(t, o.Status.TypedKind.FreeParameters)
}

// Two brokers activate services that make one kind: the kind goes to one
// of them, by a rule every broker's sync applies alike, and both
// offerings say so.
func TestTypedKindClashAcrossBrokers(t *testing.T) {
	older := metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	newer := metav1.NewTime(older.Add(time.Hour))
	tests := []struct {
		name string
		// activated first, and synced alone before the other broker.
		first    string
		wantAcme string
		wantBeta string
	}{
		{"neither had it: the older broker has it", "", "PostgresqlDb Applying", "- NameClash"},
		{"the older broker had it", "acme", "PostgresqlDb Applying", "- NameClash"},
		{"the newer broker had it: it keeps it", "beta", "- NameClash", "PostgresqlDb Applying"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			beta := &v1alpha1.ServiceBroker{ObjectMeta: metav1.ObjectMeta{Name: "beta", UID: "beta-uid", CreationTimestamp: newer}}
			h := newHarness(t, beta)
			var acme v1alpha1.ServiceBroker
			require.NoError(t, h.client.Get(context.Background(), client.ObjectKey{Name: "acme"}, &acme))
			acme.CreationTimestamp = older
			require.NoError(t, h.client.Update(context.Background(), &acme))

			syncOf := map[string]func() int{
				"acme": func() int { return h.sync(typedCatalog()) },
				"beta": func() int { return h.syncBroker("beta", typedCatalog()) },
			}
			if tt.first != "" {
				h.activate(tt.first, activation("", "postgresql-db"))
				syncOf[tt.first]()
			}
			h.activate("acme", activation("", "postgresql-db"))
			h.activate("beta", activation("", "postgresql-db"))
			syncOf["acme"]()
			syncOf["beta"]()
			syncOf["acme"]()

			assert.Equal(t, 0, syncOf["beta"](), "settled")
			assert.Equal(t, 0, syncOf["acme"](), "settled")

			a, b := h.offering("acme.postgresql-db"), h.offering("beta.postgresql-db")
			assert.Equal(t, tt.wantAcme, typedKindOf(t, a))
			assert.Equal(t, tt.wantBeta, typedKindOf(t, b))
			winner, loser, loserBroker, winnerBroker := a, b, "beta", "acme"
			if a.Status.TypedKind == nil {
				winner, loser, loserBroker, winnerBroker = b, a, "acme", "beta"
			}
			lost := meta.FindStatusCondition(loser.Status.Conditions, v1alpha1.ConditionTypedKindReady).Message
			assert.Contains(t, lost, `of ServiceBroker "`+winnerBroker+`"`)
			assert.Contains(t, lost, "which comes first (an offering that shows the kind already keeps it; otherwise the older ServiceBroker")
			assert.Contains(t, lost, `give this service another kind in ServiceBroker "`+loserBroker+`" spec.typedKinds`)
			won := meta.FindStatusCondition(winner.Status.Conditions, v1alpha1.ConditionTypedKindReady).Message
			assert.Contains(t, won, `service "postgresql-db" of ServiceBroker "`+loserBroker+`" (ServiceOffering `+loserBroker+`.postgresql-db) also wants the kind and gets none`)

			// The loser takes another kind: both have one, and the clash
			// goes from the winner's message.
			h.activate(loserBroker, activation("OtherPostgresqlDb", "postgresql-db"))
			syncOf[loserBroker]()
			syncOf[winnerBroker]()
			assert.Equal(t, "OtherPostgresqlDb Applying", typedKindOf(t, h.offering(loserBroker+".postgresql-db")))
			assert.Equal(t, "PostgresqlDb Applying", typedKindOf(t, h.offering(winnerBroker+".postgresql-db")))
			won = meta.FindStatusCondition(h.offering(winnerBroker+".postgresql-db").Status.Conditions, v1alpha1.ConditionTypedKindReady).Message
			assert.NotContains(t, won, "also wants")
		})
	}
}

// Deactivating a service clears its typed kind and its condition.
func TestTypedKindDeactivationClears(t *testing.T) {
	h := newHarness(t)
	h.activate("acme", activation("", "*"))
	h.sync(typedCatalog())
	require.Equal(t, "PostgresqlDb Applying", typedKindOf(t, h.offering("acme.postgresql-db")))
	assert.Equal(t, []string{"dbs.services.lockstep.dev", "postgresqldbs.services.lockstep.dev", "queues.services.lockstep.dev"}, h.crds())
	assert.Equal(t, []string{
		"lockstep:services:dbs:edit ", "lockstep:services:dbs:view ",
		"lockstep:services:postgresqldbs:edit ", "lockstep:services:postgresqldbs:view ",
		"lockstep:services:queues:edit ", "lockstep:services:queues:view ",
	}, h.roles())

	h.activate("acme", activation("", "db"))
	assert.Equal(t, 10, h.sync(typedCatalog()), "a status write, the CRD marked retiring, and the deletes of the CRD and its two roles, for each offering deactivated")
	assert.Equal(t, []string{"dbs.services.lockstep.dev"}, h.crds())
	assert.Equal(t, []string{"lockstep:services:dbs:edit ", "lockstep:services:dbs:view "}, h.roles())
	assert.Equal(t, "Db Applying", typedKindOf(t, h.offering("acme.db")))
	assert.Equal(t, "none", typedKindOf(t, h.offering("acme.queue")))
	assert.Equal(t, "none", typedKindOf(t, h.offering("acme.postgresql-db")))
	assert.Empty(t, h.offering("acme.postgresql-db").Status.Conditions)

	h.activate("acme")
	assert.Equal(t, 5, h.sync(typedCatalog()))
	assert.Equal(t, "none", typedKindOf(t, h.offering("acme.db")))
	assert.Empty(t, h.crds())
	assert.Empty(t, h.roles())
}

// A kind's roles are added to the default roles only where an entry of
// spec.typedKinds that selects its service asks for it, and taken out
// again when none does any more.
func TestTypedKindRolesAggregatedOnRequest(t *testing.T) {
	h := newHarness(t)
	h.activate("acme", activation("", "*"))
	h.sync(typedCatalog())
	assert.Equal(t, []string{
		"lockstep:services:dbs:edit ", "lockstep:services:dbs:view ",
		"lockstep:services:postgresqldbs:edit ", "lockstep:services:postgresqldbs:view ",
		"lockstep:services:queues:edit ", "lockstep:services:queues:view ",
	}, h.roles(), "no kind is in the default roles unless asked")

	h.activate("acme", activation("", "*"), v1alpha1.TypedKindActivation{Services: []string{"d*"}, AggregateToDefaultRoles: true})
	h.sync(typedCatalog())
	assert.Equal(t, []string{
		"lockstep:services:dbs:edit admin,edit", "lockstep:services:dbs:view view",
		"lockstep:services:postgresqldbs:edit ", "lockstep:services:postgresqldbs:view ",
		"lockstep:services:queues:edit ", "lockstep:services:queues:view ",
	}, h.roles())
	assert.Equal(t, "Db Applying", typedKindOf(t, h.offering("acme.db")), "the kind stays as it was")

	h.activate("acme", activation("", "*"))
	h.sync(typedCatalog())
	assert.Equal(t, []string{"lockstep:services:dbs:edit ", "lockstep:services:dbs:view "}, h.roles()[:2], "no longer asked: out of the default roles")
}

// A service renamed at the broker (same OSB id) keeps its kind while it
// stays activated; activated again, it gets the kind of its new name.
func TestTypedKindRenamedServiceKeepsKind(t *testing.T) {
	h := newHarness(t)
	h.activate("acme", activation("", "postgres*"))
	cat := typedCatalog()
	h.sync(cat)
	require.Equal(t, "PostgresqlDb Applying", typedKindOf(t, h.offering("acme.postgresql-db")))

	cat.Services[2].Name = "postgres"
	h.sync(cat)
	assert.NotContains(t, h.offerings(), "acme.postgresql-db")
	assert.Equal(t, "PostgresqlDb Applying", typedKindOf(t, h.offering("acme.postgres")))

	h.activate("acme")
	h.sync(cat)
	h.activate("acme", activation("", "postgres*"))
	h.sync(cat)
	assert.Equal(t, "Postgres Applying", typedKindOf(t, h.offering("acme.postgres")))
}

// A change of an offering's typed kind starts the sync of every other
// broker that activates typed kinds, and only then.
func TestTypedKindChangeTellsOtherBrokers(t *testing.T) {
	h := newHarness(t,
		&v1alpha1.ServiceBroker{ObjectMeta: metav1.ObjectMeta{Name: "beta"}, Spec: v1alpha1.ServiceBrokerSpec{TypedKinds: []v1alpha1.TypedKindActivation{activation("", "*")}}},
		&v1alpha1.ServiceBroker{ObjectMeta: metav1.ObjectMeta{Name: "gamma"}})
	h.activate("acme", activation("", "*"))
	h.sync(typedCatalog())
	o := h.offering("acme.postgresql-db")
	assert.Equal(t, []reconcile.Request{{NamespacedName: client.ObjectKey{Name: "beta"}}},
		h.r.otherTypedKindBrokers(context.Background(), &o), "beta activates typed kinds, gamma does not, acme is the offering's own")

	none := o.DeepCopy()
	none.Status = v1alpha1.ServiceOfferingStatus{}
	renamed := o.DeepCopy()
	renamed.Status.TypedKind.Kind = "Other"
	clash := none.DeepCopy()
	clash.Status.Conditions = []metav1.Condition{{Type: v1alpha1.ConditionTypedKindReady, Reason: ReasonNameClash}}
	redescribed := o.DeepCopy()
	redescribed.Status.Conditions[0].Message = "another message"
	tests := []struct {
		name     string
		old, new *v1alpha1.ServiceOffering
		tell     bool
	}{
		{"activated", none, &o, true},
		{"deactivated", &o, none, true},
		{"another kind", &o, renamed, true},
		{"lost its kind", &o, clash, true},
		{"only the message", &o, redescribed, false},
		{"nothing", none, none.DeepCopy(), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.tell, typedKindShown(tt.old) != typedKindShown(tt.new))
		})
	}
}
