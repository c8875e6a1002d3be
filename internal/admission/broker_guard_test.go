package admission

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	fakediscovery "k8s.io/client-go/discovery/fake"
	clienttesting "k8s.io/client-go/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/lockstep-dev/lockstep/api/v1alpha1"
	"github.com/lockstep-dev/lockstep/internal/typed/inuse"
)

func TestBrokerGuard(t *testing.T) {
	si := func(ns, name, broker, policy string) *v1alpha1.ServiceInstance {
		o := &v1alpha1.ServiceInstance{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: v1alpha1.ServiceInstanceSpec{BrokerName: broker}}
		if policy != "" {
			o.Annotations = map[string]string{v1alpha1.AnnotationReconcilePolicy: policy}
		}
		return o
	}
	sb := func(ns, name, instance, policy string) *v1alpha1.ServiceBinding {
		o := &v1alpha1.ServiceBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: v1alpha1.ServiceBindingSpec{InstanceName: instance}}
		if policy != "" {
			o.Annotations = map[string]string{v1alpha1.AnnotationReconcilePolicy: policy}
		}
		return o
	}
	typedBinding := func(b *v1alpha1.ServiceBinding, kind string) *v1alpha1.ServiceBinding {
		b.Spec.InstanceKind = kind
		return b
	}
	many := []client.Object{}
	for i := range 7 {
		many = append(many, si("team", fmt.Sprintf("db%d", i), "acme", ""))
	}
	tests := []struct {
		name    string
		objects []client.Object
		op      admissionv1.Operation
		allowed bool
		wantMsg []string
	}{
		{name: "nothing at the broker", objects: []client.Object{si("team", "db", "other", "")}, op: admissionv1.Delete, allowed: true},
		{name: "managed instance holds it", objects: []client.Object{si("team", "db", "acme", "")}, op: admissionv1.Delete,
			wantMsg: []string{`ServiceBroker "acme" cannot be deleted: lockstep manages 1 object(s) at it (serviceinstance team/db)`,
				"kubectl annotate <kind> <name> -n <namespace> lockstep.dev/reconcile-policy=detach-on-delete"}},
		{name: "everything detached or observed", op: admissionv1.Delete, allowed: true, objects: []client.Object{
			si("team", "db", "acme", "detach-on-delete"), si("team", "cache", "acme", "observe"), sb("team", "creds", "db", "detach-on-delete")}},
		{name: "a managed binding of a detached instance holds it", op: admissionv1.Delete, objects: []client.Object{
			si("team", "db", "acme", "detach-on-delete"), sb("team", "creds", "db", "")},
			wantMsg: []string{"manages 1 object(s) at it (servicebinding team/creds)"}},
		{name: "a binding of a typed instance of the same name is not the detached instance's", op: admissionv1.Delete, allowed: true, objects: []client.Object{
			si("team", "db", "acme", "detach-on-delete"), typedBinding(sb("team", "creds", "db", ""), "PostgresqlDb")}},
		{name: "many: counted, some named", op: admissionv1.Delete, objects: many,
			wantMsg: []string{"manages 7 object(s) at it (serviceinstance team/db0, serviceinstance team/db1, serviceinstance team/db2, serviceinstance team/db3, serviceinstance team/db4 and 2 more)"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			scheme := runtime.NewScheme()
			require.NoError(t, v1alpha1.AddToScheme(scheme))
			g := &BrokerGuard{Reader: fake.NewClientBuilder().WithScheme(scheme).WithObjects(tt.objects...).Build()}
			resp := g.Handle(context.Background(), admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{Operation: tt.op, Name: "acme"}})
			assert.Equal(t, tt.allowed, resp.Allowed)
			if !tt.allowed {
				assert.Equal(t, int32(409), resp.Result.Code)
				for _, m := range tt.wantMsg {
					assert.Contains(t, resp.Result.Message, m)
				}
			}
		})
	}
}

// A change of spec.typedKinds, or the delete, that takes a typed kind away
// while objects of it remain is refused, naming them.
func TestBrokerGuardTypedKinds(t *testing.T) {
	object := func(ns, name string) unstructured.Unstructured {
		u := unstructured.Unstructured{}
		u.SetNamespace(ns)
		u.SetName(name)
		return u
	}
	kinds := inuse.Static{
		{Group: "services.lockstep.dev", Version: "v1alpha1", Resource: "postgresqldbs"}: {object("team", "b"), object("team", "a"), object("other", "c")},
		{Group: "services.lockstep.dev", Version: "v1alpha1", Resource: "queues"}:        nil,
	}
	offering := func(service, kind string) client.Object {
		o := &v1alpha1.ServiceOffering{ObjectMeta: metav1.ObjectMeta{Name: "acme." + service}}
		o.Spec.BrokerName, o.Spec.Name = "acme", service
		if kind != "" {
			o.Status.TypedKind = &v1alpha1.TypedKindStatus{Kind: kind, APIVersion: "services.lockstep.dev/v1alpha1", Plural: strings.ToLower(kind) + "s"}
		}
		return o
	}
	broker := func(kinds ...v1alpha1.TypedKindActivation) []byte {
		raw, err := json.Marshal(&v1alpha1.ServiceBroker{ObjectMeta: metav1.ObjectMeta{Name: "acme"}, Spec: v1alpha1.ServiceBrokerSpec{TypedKinds: kinds}})
		require.NoError(t, err)
		return raw
	}
	all := v1alpha1.TypedKindActivation{Services: []string{"*"}}
	objects := []client.Object{offering("postgresql-db", "PostgresqlDb"), offering("queue", "Queue"), offering("db", "")}
	tests := []struct {
		name    string
		op      admissionv1.Operation
		old     []byte
		new     []byte
		wantMsg string // empty: allowed
	}{
		{name: "unchanged", op: admissionv1.Update, old: broker(all), new: broker(all)},
		{name: "still selected", op: admissionv1.Update, old: broker(all), new: broker(v1alpha1.TypedKindActivation{Services: []string{"postgres*"}})},
		{name: "deactivated with objects", op: admissionv1.Update, old: broker(all), new: broker(v1alpha1.TypedKindActivation{Services: []string{"queue"}}),
			wantMsg: `this change of ServiceBroker "acme" spec.typedKinds takes typed kinds away whose objects remain (kind PostgresqlDb of service "postgresql-db" has 3 object(s): other/c, team/a, team/b)`},
		{name: "given another kind", op: admissionv1.Update, old: broker(all), new: broker(all, v1alpha1.TypedKindActivation{Services: []string{"postgresql-db"}, Kind: "Pg"}),
			wantMsg: "kind PostgresqlDb of service"},
		{name: "deactivated, no objects", op: admissionv1.Update, old: broker(all), new: broker(v1alpha1.TypedKindActivation{Services: []string{"postgresql-db"}})},
		{name: "delete", op: admissionv1.Delete, wantMsg: `deleting ServiceBroker "acme" takes typed kinds away whose objects remain`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			scheme := runtime.NewScheme()
			require.NoError(t, v1alpha1.AddToScheme(scheme))
			c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(objects...).WithStatusSubresource(&v1alpha1.ServiceOffering{}).Build()
			g := &BrokerGuard{Reader: c, Objects: kinds}
			resp := g.Handle(context.Background(), admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{
				Operation: tt.op, Name: "acme", OldObject: runtime.RawExtension{Raw: tt.old}, Object: runtime.RawExtension{Raw: tt.new}}})
			if tt.wantMsg == "" {
				assert.True(t, resp.Allowed, "%+v", resp.Result)
				return
			}
			require.False(t, resp.Allowed)
			assert.Equal(t, int32(409), resp.Result.Code)
			assert.Contains(t, resp.Result.Message, tt.wantMsg)
			assert.Contains(t, resp.Result.Message, "delete the objects first")
		})
	}
}

// A spec.typedKinds that gives a kind a name a served resource or another
// service's typed kind has is refused, each name at its field with what
// has it; names given before, and a service's own kind, are not.
func TestBrokerGuardNames(t *testing.T) {
	served := &fakediscovery.FakeDiscovery{Fake: &clienttesting.Fake{Resources: []*metav1.APIResourceList{
		{GroupVersion: "v1", APIResources: []metav1.APIResource{{Name: "pods", SingularName: "pod", Kind: "Pod", ShortNames: []string{"po"}}}},
		{GroupVersion: "batch.example.com/v1", APIResources: []metav1.APIResource{{Name: "queuedjobs", SingularName: "queuedjob", Kind: "QueuedJob", ShortNames: []string{"qd"}}}},
	}}}
	offering := func(broker, service, kind string, short ...string) client.Object {
		o := &v1alpha1.ServiceOffering{ObjectMeta: metav1.ObjectMeta{Name: broker + "." + service}}
		o.Spec.BrokerName, o.Spec.Name = broker, service
		o.Status.TypedKind = &v1alpha1.TypedKindStatus{Kind: kind, Plural: strings.ToLower(kind) + "s", ShortNames: short}
		return o
	}
	broker := func(kinds ...v1alpha1.TypedKindActivation) []byte {
		raw, err := json.Marshal(&v1alpha1.ServiceBroker{ObjectMeta: metav1.ObjectMeta{Name: "acme"}, Spec: v1alpha1.ServiceBrokerSpec{TypedKinds: kinds}})
		require.NoError(t, err)
		return raw
	}
	db := func(kind, plural string, short ...string) v1alpha1.TypedKindActivation {
		return v1alpha1.TypedKindActivation{Services: []string{"db"}, Kind: kind, Plural: plural, ShortNames: short}
	}
	objects := []client.Object{offering("other", "cache", "Cache", "cch"), offering("acme", "db", "Database", "dbs2")}
	tests := []struct {
		name     string
		op       admissionv1.Operation
		old, new []byte
		fields   []string // refused; none: allowed
		message  string
	}{
		{name: "names of their own", op: admissionv1.Create, new: broker(db("TeamDatabase", "teamdbs", "tdb"))},
		{name: "a served plural", op: admissionv1.Create, new: broker(db("", "pods")), fields: []string{"spec.typedKinds[0].plural"},
			message: `spec.typedKinds[0].plural: Invalid value: "pods": the name pods is resource pods (v1)'s: kubectl would find that first; give the kind of service "db" another name`},
		{name: "a served kind and short name", op: admissionv1.Update, old: broker(), new: broker(db("QueuedJob", "", "po", "ok")),
			fields: []string{"spec.typedKinds[0].kind", "spec.typedKinds[0].shortNames[0]"}},
		{name: "another broker's kind's short name", op: admissionv1.Update, old: broker(), new: broker(db("", "", "cch")),
			fields: []string{"spec.typedKinds[0].shortNames[0]"}, message: `kind Cache of service "cache" of ServiceBroker "other"`},
		{name: "the service's own kind keeps its names", op: admissionv1.Update, old: broker(), new: broker(db("Database", "", "dbs2"))},
		{name: "names given before stay", op: admissionv1.Update, old: broker(db("", "pods")), new: broker(db("", "pods"), v1alpha1.TypedKindActivation{Services: []string{"queue"}})},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			scheme := runtime.NewScheme()
			require.NoError(t, v1alpha1.AddToScheme(scheme))
			c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(objects...).WithStatusSubresource(&v1alpha1.ServiceOffering{}).Build()
			g := &BrokerGuard{Reader: c, Objects: inuse.Static{}, Discovery: served}
			resp := g.Handle(context.Background(), admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{
				Operation: tt.op, Name: "acme", OldObject: runtime.RawExtension{Raw: tt.old}, Object: runtime.RawExtension{Raw: tt.new}}})
			if tt.fields == nil {
				assert.True(t, resp.Allowed, "%+v", resp.Result)
				return
			}
			require.False(t, resp.Allowed)
			assert.Equal(t, int32(422), resp.Result.Code)
			var fields []string
			for _, cause := range resp.Result.Details.Causes {
				fields = append(fields, cause.Field)
			}
			assert.Equal(t, tt.fields, fields, resp.Result.Message)
			assert.Contains(t, resp.Result.Message, tt.message)
		})
	}
}
