package admission

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionv1 "k8s.io/api/admission/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	k8stypes "k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/lockstep-dev/lockstep/api/v1alpha1"
)

func TestMarketplaceGuard(t *testing.T) {
	const lockstep = "system:serviceaccount:lockstep-system:lockstep"
	scheme := runtime.NewScheme()
	require.NoError(t, v1alpha1.AddToScheme(scheme))
	deleting := metav1.NewTime(time.Now())
	brokers := []client.Object{
		&v1alpha1.ServiceBroker{ObjectMeta: metav1.ObjectMeta{Name: "acme", UID: "acme-uid"}},
		&v1alpha1.ServiceBroker{ObjectMeta: metav1.ObjectMeta{Name: "going", UID: "going-uid", DeletionTimestamp: &deleting, Finalizers: []string{"x"}}},
	}
	g := &MarketplaceGuard{
		Writers: map[string]bool{lockstep: true},
		Brokers: fake.NewClientBuilder().WithScheme(scheme).WithObjects(brokers...).Build(),
	}
	plan := func(broker, uid string) runtime.RawExtension {
		p := v1alpha1.ServicePlan{
			ObjectMeta: metav1.ObjectMeta{Name: broker + ".db.small", OwnerReferences: []metav1.OwnerReference{{
				APIVersion: v1alpha1.GroupVersion.String(), Kind: "ServiceBroker", Name: broker, UID: k8stypes.UID(uid)}}},
			Spec: v1alpha1.ServicePlanSpec{BrokerName: broker, ServiceName: "db", Name: "small"},
		}
		raw, err := json.Marshal(p)
		require.NoError(t, err)
		return runtime.RawExtension{Raw: raw}
	}
	tests := []struct {
		name    string
		user    string
		op      admissionv1.Operation
		sub     string
		object  runtime.RawExtension
		allowed bool
		message string
	}{
		{"lockstep creates", lockstep, admissionv1.Create, "", plan("acme", "acme-uid"), true, ""},
		{"lockstep writes status", lockstep, admissionv1.Update, "status", plan("acme", "acme-uid"), true, ""},
		{"lockstep deletes", lockstep, admissionv1.Delete, "", plan("acme", "acme-uid"), true, ""},
		{"an admin creates", "alice", admissionv1.Create, "", plan("acme", "acme-uid"), false,
			`ServicePlans are written by lockstep from broker "acme"'s catalog; user "alice" may not create them (lockstep's identity: ` + lockstep + `)`},
		{"an admin changes", "alice", admissionv1.Update, "", plan("acme", "acme-uid"), false, `user "alice" may not change them`},
		{"an admin writes status", "alice", admissionv1.Update, "status", plan("acme", "acme-uid"), false, `may not change the status of them`},
		{"an admin deletes", "alice", admissionv1.Delete, "", plan("acme", "acme-uid"), false, "to remove a broker's offerings and plans, delete its ServiceBroker"},
		{"the garbage collector deletes after the broker went", "system:serviceaccount:kube-system:generic-garbage-collector",
			admissionv1.Delete, "", plan("gone", "gone-uid"), true, ""},
		{"a broker of the same name, recreated", "gc", admissionv1.Delete, "", plan("acme", "old-uid"), true, ""},
		{"the broker is being deleted: orphaning", "gc", admissionv1.Update, "", plan("going", "going-uid"), true, ""},
		{"nobody creates for a broker that is gone", "alice", admissionv1.Create, "", plan("gone", "gone-uid"), false, "may not create them"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{
				Name: "acme.db.small", SubResource: tt.sub, Operation: tt.op,
				Kind:     metav1.GroupVersionKind{Group: "lockstep.dev", Version: "v1alpha1", Kind: "ServicePlan"},
				UserInfo: authenticationv1.UserInfo{Username: tt.user},
			}}
			if tt.op == admissionv1.Delete {
				req.OldObject = tt.object
			} else {
				req.Object = tt.object
			}
			r := g.Handle(context.Background(), req)
			assert.Equal(t, tt.allowed, r.Allowed)
			if !tt.allowed {
				assert.Equal(t, int32(403), r.Result.Code)
				assert.Contains(t, r.Result.Message, tt.message)
			}
		})
	}
}
