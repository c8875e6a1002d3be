package admission

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/lockstep-dev/lockstep/api/v1alpha1"
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
		{name: "many: counted, some named", op: admissionv1.Delete, objects: many,
			wantMsg: []string{"manages 7 object(s) at it (serviceinstance team/db0, serviceinstance team/db1, serviceinstance team/db2, serviceinstance team/db3, serviceinstance team/db4 and 2 more)"}},
		{name: "not a delete", op: admissionv1.Update, objects: []client.Object{si("team", "db", "acme", "")}, allowed: true},
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
