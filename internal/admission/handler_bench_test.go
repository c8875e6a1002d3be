package admission

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/lockstep-dev/lockstep/bench/cputime"

	admissionv1 "k8s.io/api/admission/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/lockstep-dev/lockstep/api/v1alpha1"
)

// BenchmarkValidatingHandler measures what lockstep's validating handler
// adds per request on the paths that never reach the broker, with objects
// the size the API server sends (managedFields and status included).
// bench/ measures the same over TLS against an allow-all baseline.
func BenchmarkValidatingHandler(b *testing.B) {
	h := newHarness(b)
	handler := InstanceValidatorWebhook(h.validator).Handler
	scheme := runtime.NewScheme()
	if err := v1alpha1.AddToScheme(scheme); err != nil {
		b.Fatal(err)
	}
	full := func(mutate ...func(*v1alpha1.ServiceInstance)) runtime.RawExtension {
		created := metav1.NewTime(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
		si := instance("small", `{"region":"eu","storageGB":10}`, append([]func(*v1alpha1.ServiceInstance){func(si *v1alpha1.ServiceInstance) {
			si.TypeMeta = metav1.TypeMeta{APIVersion: v1alpha1.GroupVersion.String(), Kind: "ServiceInstance"}
			si.Labels = map[string]string{"app.kubernetes.io/name": "orders"}
			si.ManagedFields = []metav1.ManagedFieldsEntry{{
				Manager: "kubectl-client-side-apply", Operation: metav1.ManagedFieldsOperationUpdate,
				APIVersion: v1alpha1.GroupVersion.String(), Time: &created, FieldsType: "FieldsV1",
				FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:metadata":{"f:labels":{".":{},"f:app.kubernetes.io/name":{}}},"f:spec":{".":{},"f:brokerName":{},"f:parameters":{".":{},"f:storageGB":{}},"f:planName":{},"f:serviceName":{}}}`)},
			}}
			si.Status = v1alpha1.ServiceInstanceStatus{ObservedGeneration: 1, Conditions: []metav1.Condition{
				{Type: v1alpha1.ConditionReady, Status: metav1.ConditionTrue, Reason: "Provisioned", LastTransitionTime: created, Message: "the broker holds the instance as specified"},
				{Type: v1alpha1.ConditionInSync, Status: metav1.ConditionTrue, Reason: "Committed", LastTransitionTime: created, Message: "what the broker holds equals this object"},
			}}
		}}, mutate...)...)
		raw, err := json.Marshal(si)
		if err != nil {
			b.Fatal(err)
		}
		return runtime.RawExtension{Raw: raw}
	}
	old := full()
	tests := []struct {
		name    string
		new     runtime.RawExtension
		allowed bool
	}{
		{"metadata-only update", full(func(si *v1alpha1.ServiceInstance) { si.Labels["tier"] = "gold" }), true},
		{"create-only violation", full(func(si *v1alpha1.ServiceInstance) { si.Spec.ExternalID = "other" }), false},
	}
	for _, tt := range tests {
		req := admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{
			Operation: admissionv1.Update, Object: tt.new, OldObject: old,
			UserInfo: authenticationv1.UserInfo{Username: "alice"},
		}}
		b.Run(tt.name, func(b *testing.B) {
			b.ReportAllocs()
			stopCPU := cputime.Start(b)
			for b.Loop() {
				if resp := handler.Handle(context.Background(), req); resp.Allowed != tt.allowed {
					b.Fatalf("allowed %v: %+v", resp.Allowed, resp.Result)
				}
			}
			stopCPU()
		})
		// The whole HTTP handler, from the AdmissionReview's bytes to the
		// answer's, each inside controller-runtime's admission.Webhook:
		// lockstep's webhook (the handler above); the same Validator
		// behind admission.WithValidator, which decodes both objects whole
		// with the scheme's decoder before the chain decides anything; and
		// an allow-all handler, the baseline of bench/.
		body, err := json.Marshal(admissionv1.AdmissionReview{
			TypeMeta: metav1.TypeMeta{APIVersion: admissionv1.SchemeGroupVersion.String(), Kind: "AdmissionReview"},
			Request:  &req.AdmissionRequest,
		})
		if err != nil {
			b.Fatal(err)
		}
		stock := admission.WithValidator[Instance](scheme, h.validator)
		stock.LogConstructor = requestLogger
		servers := []struct {
			name string
			h    http.Handler
		}{
			{"lockstep Webhook", InstanceValidatorWebhook(h.validator)},
			{"WithValidator Webhook", stock},
			{"allow-all Webhook", &admission.Webhook{Handler: admission.HandlerFunc(func(context.Context, admission.Request) admission.Response {
				return admission.Allowed("")
			}), LogConstructor: requestLogger}},
		}
		for _, srv := range servers {
			b.Run(tt.name+"/http/"+srv.name, func(b *testing.B) {
				b.ReportAllocs()
				stopCPU := cputime.Start(b)
				for b.Loop() {
					r := httptest.NewRequest(http.MethodPost, ValidateInstancePath, bytes.NewReader(body))
					r.Header.Set("Content-Type", "application/json")
					w := httptest.NewRecorder()
					srv.h.ServeHTTP(w, r)
					if w.Code != http.StatusOK {
						b.Fatalf("HTTP %d", w.Code)
					}
				}
				stopCPU()
			})
		}
	}
}
