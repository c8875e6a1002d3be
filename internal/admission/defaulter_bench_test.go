package admission

import (
	"context"
	"encoding/json"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/lockstep-dev/lockstep/api/v1alpha1"
	"github.com/lockstep-dev/lockstep/bench/cputime"
)

// BenchmarkInstanceDefaulter measures the mutating webhook's handler on a
// create as kubectl sends it: the label, the finalizer and the external id
// to add.
func BenchmarkInstanceDefaulter(b *testing.B) {
	scheme := runtime.NewScheme()
	if err := v1alpha1.AddToScheme(scheme); err != nil {
		b.Fatal(err)
	}
	reader := fake.NewClientBuilder().WithScheme(scheme).WithRuntimeObjects(&v1alpha1.ServiceBroker{ObjectMeta: metav1.ObjectMeta{Name: "acme"}}).Build()
	wh := InstanceDefaulterWebhook(scheme, NewInstanceDefaulter(reader))
	si := &v1alpha1.ServiceInstance{
		TypeMeta:   metav1.TypeMeta{APIVersion: v1alpha1.GroupVersion.String(), Kind: "ServiceInstance"},
		ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: "team", Labels: map[string]string{"app.kubernetes.io/name": "orders"}},
		Spec: v1alpha1.ServiceInstanceSpec{BrokerName: "acme", ServiceName: "db", PlanName: "small",
			Parameters: &runtime.RawExtension{Raw: []byte(`{"storageGB":10}`)}},
	}
	raw, err := json.Marshal(si)
	if err != nil {
		b.Fatal(err)
	}
	req := admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{Operation: admissionv1.Create, Object: runtime.RawExtension{Raw: raw}}}
	b.ReportAllocs()
	stopCPU := cputime.Start(b)
	for b.Loop() {
		if resp := wh.Handle(context.Background(), req); !resp.Allowed || len(resp.Patches) != 3 {
			b.Fatalf("allowed %v, patches %v", resp.Allowed, resp.Patches)
		}
	}
	stopCPU()
}
