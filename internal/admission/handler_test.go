package admission

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/lockstep-dev/lockstep/api/v1alpha1"
)

func TestValidatingHandler(t *testing.T) {
	const (
		spec          = `{"serviceName":"db","planName":"small"}`
		specReordered = `{"planName":"small","serviceName":"db"}`
		specChanged   = `{"serviceName":"db","planName":"large"}`
		specRefused   = `{"serviceName":"db","planName":"refuse"}`
	)
	object := func(spec string) runtime.RawExtension {
		return runtime.RawExtension{Raw: []byte(`{"apiVersion":"lockstep.dev/v1alpha1","kind":"ServiceInstance","metadata":{"name":"db","namespace":"ns","labels":{"a":"b"}},"spec":` + spec + `}`)}
	}
	deleting := runtime.RawExtension{Raw: []byte(`{"metadata":{"name":"db","deletionTimestamp":"2026-01-01T00:00:00Z"},"spec":` + spec + `}`)}
	tests := []struct {
		name      string
		op        admissionv1.Operation
		old, new  runtime.RawExtension
		allowed   bool
		code      int32
		message   string
		checksRun int
		reason    string // counted in lockstep_admission_decisions_total; "" for none
	}{
		{name: "metadata-only update: allowed undecoded", op: admissionv1.Update, old: object(spec), new: object(spec), allowed: true, reason: "Unchanged"},
		{name: "update of an object being deleted: allowed undecoded", op: admissionv1.Update, old: deleting, new: object(specChanged), allowed: true, reason: "Unchanged"},
		{name: "same spec spelled differently: typed path finds it unchanged", op: admissionv1.Update, old: object(spec), new: object(specReordered), allowed: true, reason: "Unchanged"},
		{name: "spec update: checked", op: admissionv1.Update, old: object(spec), new: object(specChanged), allowed: true, checksRun: 1, reason: "Broker"},
		{name: "refused update keeps the check's status", op: admissionv1.Update, old: object(spec), new: object(specRefused), code: http.StatusUnprocessableEntity, message: `spec.planName: Invalid value: "refuse"`, checksRun: 1, reason: "Invalid"},
		{name: "create: checked", op: admissionv1.Create, new: object(spec), allowed: true, checksRun: 1, reason: "Broker"},
		{name: "refused create", op: admissionv1.Create, new: object(specRefused), code: http.StatusUnprocessableEntity, message: "refused for the test", checksRun: 1, reason: "Invalid"},
		{name: "delete: delete checks run on the old object", op: admissionv1.Delete, old: object(spec), allowed: true, checksRun: 1, reason: "Broker"},
		{name: "malformed new object", op: admissionv1.Update, old: object(spec), new: runtime.RawExtension{Raw: []byte(`{"spec":`)}, code: http.StatusBadRequest, message: "decoding the object in the admission request"},
		{name: "malformed typed field", op: admissionv1.Create, new: runtime.RawExtension{Raw: []byte(`{"spec":{"planName":7}}`)}, code: http.StatusBadRequest, message: "decoding the object"},
		{name: "missing old object", op: admissionv1.Update, new: object(spec), code: http.StatusBadRequest, message: "carries no persisted object"},
		{name: "unknown operation", op: "PATCH", new: object(spec), code: http.StatusBadRequest, message: `unknown operation "PATCH"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			runs := 0
			check := CheckFunc[Instance]{CheckName: "test", Fn: func(_ context.Context, a *Attributes[Instance]) (field.ErrorList, admission.Warnings, error) {
				runs++
				if a.Object().Spec.PlanName == "refuse" {
					return field.ErrorList{field.Invalid(field.NewPath("spec", "planName"), "refuse", "refused for the test")}, nil, nil
				}
				return nil, nil, nil
			}}
			h := &validatingHandler[Instance]{
				validator: &Validator[Instance]{
					Kind: instanceKind,
					SameSpec: func(old, new Instance) bool {
						return old.Spec.PlanName == new.Spec.PlanName && old.Spec.ServiceName == new.Spec.ServiceName
					},
					Checks:       []Check[Instance]{check},
					DeleteChecks: []Check[Instance]{check},
				},
				new:   func() Instance { return &v1alpha1.ServiceInstance{} },
				parts: func(si Instance) (*metav1.ObjectMeta, any) { return &si.ObjectMeta, &si.Spec },
			}
			before := decisions(t)
			resp := h.Handle(context.Background(), admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{
				Operation: tt.op, Object: tt.new, OldObject: tt.old,
			}})
			counted := map[string]float64{}
			for labels, n := range decisions(t) {
				if n != before[labels] {
					counted[labels] = n - before[labels]
				}
			}
			if tt.reason == "" {
				assert.Empty(t, counted, "a request that was not judged is not counted")
			} else {
				result := "allowed"
				if !tt.allowed {
					result = "denied"
				}
				assert.Equal(t, map[string]float64{fmt.Sprintf("ServiceInstance/%s/%s/%s", tt.op, result, tt.reason): 1}, counted)
			}
			assert.Equal(t, tt.allowed, resp.Allowed, "allowed (result %+v)", resp.Result)
			assert.Equal(t, tt.checksRun, runs, "checks run")
			if !tt.allowed {
				assert.Equal(t, tt.code, resp.Result.Code)
				assert.Contains(t, resp.Result.Message, tt.message)
			}
		})
	}
}

func TestValidatingHandlerDecodesMetadataAndSpec(t *testing.T) {
	h := &validatingHandler[Instance]{
		new:   func() Instance { return &v1alpha1.ServiceInstance{} },
		parts: func(si Instance) (*metav1.ObjectMeta, any) { return &si.ObjectMeta, &si.Spec },
	}
	o, err := split([]byte(`{"apiVersion":"lockstep.dev/v1alpha1","kind":"ServiceInstance",
		"metadata":{"name":"db","namespace":"team","uid":"uid-1","generation":3,"labels":{"a":"b"},
			"finalizers":["lockstep.dev/broker"],"deletionTimestamp":"2026-01-01T00:00:00Z",
			"managedFields":[{"manager":"kubectl","operation":"Apply","fieldsV1":{"f:spec":{}}}]},
		"spec":{"serviceName":"db","planName":"small","externalID":"ext-1","parameters":{"storageGB":10}},
		"status":{"observedGeneration":2}}`), "object")
	require.NoError(t, err)
	si, err := h.decode(o, "object")
	require.NoError(t, err)
	assert.Equal(t, "ServiceInstance", si.Kind)
	assert.Equal(t, "lockstep.dev/v1alpha1", si.APIVersion)
	assert.Equal(t, "db", si.Name)
	assert.Equal(t, "team", si.Namespace)
	assert.Equal(t, "uid-1", string(si.UID))
	assert.Equal(t, int64(3), si.Generation)
	assert.Equal(t, map[string]string{"a": "b"}, si.Labels)
	assert.Equal(t, []string{"lockstep.dev/broker"}, si.Finalizers)
	assert.NotNil(t, si.DeletionTimestamp)
	assert.Equal(t, v1alpha1.ServiceInstanceSpec{ServiceName: "db", PlanName: "small", ExternalID: "ext-1",
		Parameters: &runtime.RawExtension{Raw: []byte(`{"storageGB":10}`)}}, si.Spec)
	assert.Empty(t, si.ManagedFields, "no check reads them")
	assert.Zero(t, si.Status, "the main resource cannot change the status")
}

// decisions reads lockstep_admission_decisions_total by
// "kind/operation/result/reason".
func decisions(t *testing.T) map[string]float64 {
	t.Helper()
	families, err := ctrlmetrics.Registry.Gather()
	require.NoError(t, err)
	out := map[string]float64{}
	for _, f := range families {
		if f.GetName() != "lockstep_admission_decisions_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			l := map[string]string{}
			for _, p := range m.GetLabel() {
				l[p.GetName()] = p.GetValue()
			}
			out[l["kind"]+"/"+l["operation"]+"/"+l["result"]+"/"+l["reason"]] = m.GetCounter().GetValue()
		}
	}
	return out
}

// Served by controller-runtime's admission.Webhook, the chain sees who
// asked and whether it is a dry run (a dry run never calls the broker),
// and the answer names the request.
func TestValidatorWebhookPassesTheRequestOn(t *testing.T) {
	var seen []*Attributes[Instance]
	check := CheckFunc[Instance]{CheckName: "test", Fn: func(_ context.Context, a *Attributes[Instance]) (field.ErrorList, admission.Warnings, error) {
		seen = append(seen, a)
		return nil, nil, nil
	}}
	wh := InstanceValidatorWebhook(&Validator[Instance]{Kind: instanceKind, Checks: []Check[Instance]{check}})
	body := `{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"req-2","operation":"CREATE","dryRun":true,` +
		`"userInfo":{"username":"bob","groups":["devs"]},"object":{"apiVersion":"lockstep.dev/v1alpha1","kind":"ServiceInstance",` +
		`"metadata":{"name":"db","namespace":"team","managedFields":[{"manager":"kubectl"}]},"spec":{"planName":"small"}}}}`
	r := httptest.NewRequest(http.MethodPost, ValidateInstancePath, strings.NewReader(body))
	r.Header.Set("Content-Type", "application/json")
	w := httptest.NewRecorder()
	wh.ServeHTTP(w, r)

	require.Equal(t, http.StatusOK, w.Code)
	var review admissionv1.AdmissionReview
	require.NoError(t, json.Unmarshal(w.Body.Bytes(), &review), w.Body.String())
	require.NotNil(t, review.Response)
	assert.True(t, review.Response.Allowed)
	assert.Equal(t, "req-2", string(review.Response.UID))
	require.Len(t, seen, 1)
	assert.True(t, seen[0].DryRun)
	assert.Equal(t, "bob", seen[0].User.Username)
	assert.Equal(t, []string{"devs"}, seen[0].User.Groups)
	assert.Equal(t, "db", seen[0].New.Name)
	assert.Equal(t, "small", seen[0].New.Spec.PlanName)
	assert.Empty(t, seen[0].New.ManagedFields, "no check reads them")
}
