package admission

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/lockstep-dev/lockstep/api/v1alpha1"
)

func requestContext(t *testing.T, op admissionv1.Operation, old any) context.Context {
	t.Helper()
	req := admissionv1.AdmissionRequest{Operation: op}
	if old != nil {
		raw, err := json.Marshal(old)
		require.NoError(t, err)
		req.OldObject = runtime.RawExtension{Raw: raw}
	}
	return admission.NewContextWithRequest(context.Background(), admission.Request{AdmissionRequest: req})
}

func TestInstanceDefaulter(t *testing.T) {
	scheme := runtime.NewScheme()
	require.NoError(t, v1alpha1.AddToScheme(scheme))
	broker := func(name string) runtime.Object {
		return &v1alpha1.ServiceBroker{ObjectMeta: metav1.ObjectMeta{Name: name}}
	}
	deleting := metav1.Now()
	tests := []struct {
		name       string
		op         admissionv1.Operation
		brokers    []runtime.Object
		old, obj   *v1alpha1.ServiceInstance
		wantBroker string
		wantID     string // "uuid": any UUID
		finalizer  bool
	}{
		{"create fills every default", admissionv1.Create, []runtime.Object{broker("acme")},
			nil, &v1alpha1.ServiceInstance{}, "acme", "uuid", true},
		{"create keeps given values", admissionv1.Create, []runtime.Object{broker("acme")},
			nil, &v1alpha1.ServiceInstance{Spec: v1alpha1.ServiceInstanceSpec{BrokerName: "other", ExternalID: "x"}}, "other", "x", true},
		{"no broker default when two exist", admissionv1.Create, []runtime.Object{broker("a"), broker("b")},
			nil, &v1alpha1.ServiceInstance{}, "", "uuid", true},
		{"update keeps defaulted fields a request left out", admissionv1.Update, nil,
			&v1alpha1.ServiceInstance{Spec: v1alpha1.ServiceInstanceSpec{BrokerName: "acme", ExternalID: "x"}},
			&v1alpha1.ServiceInstance{}, "acme", "x", true},
		{"update of an object being deleted changes nothing", admissionv1.Update, nil,
			&v1alpha1.ServiceInstance{ObjectMeta: metav1.ObjectMeta{DeletionTimestamp: &deleting}, Spec: v1alpha1.ServiceInstanceSpec{ExternalID: "x"}},
			&v1alpha1.ServiceInstance{ObjectMeta: metav1.ObjectMeta{DeletionTimestamp: &deleting}}, "", "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			reader := fake.NewClientBuilder().WithScheme(scheme).WithRuntimeObjects(tt.brokers...).Build()
			d := NewInstanceDefaulter(reader)
			var old any
			if tt.old != nil {
				old = tt.old
			}
			require.NoError(t, d.Default(requestContext(t, tt.op, old), tt.obj))
			assert.Equal(t, tt.wantBroker, tt.obj.Spec.BrokerName)
			if tt.wantID == "uuid" {
				_, err := uuid.Parse(tt.obj.Spec.ExternalID)
				assert.NoError(t, err)
			} else {
				assert.Equal(t, tt.wantID, tt.obj.Spec.ExternalID)
			}
			assert.Equal(t, tt.finalizer, len(tt.obj.Finalizers) == 1 && tt.obj.Finalizers[0] == v1alpha1.Finalizer)
		})
	}
}

func TestBindingDefaulter(t *testing.T) {
	d := NewBindingDefaulter()
	sb := &v1alpha1.ServiceBinding{ObjectMeta: metav1.ObjectMeta{Name: "creds"}}
	require.NoError(t, d.Default(requestContext(t, admissionv1.Create, nil), sb))
	assert.Equal(t, "creds", sb.Spec.SecretName)
	assert.NotEmpty(t, sb.Spec.ExternalID)
	assert.Contains(t, sb.Finalizers, v1alpha1.Finalizer)

	generated := &v1alpha1.ServiceBinding{ObjectMeta: metav1.ObjectMeta{GenerateName: "creds-"}}
	err := d.Default(requestContext(t, admissionv1.Create, nil), generated)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "spec.secretName: Required value")
}
