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
