package admission

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"

	jsonpatch "github.com/evanphx/json-patch/v5"
	"github.com/google/uuid"
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

// defaulted sends obj (and old, on UPDATE) to a defaulting webhook as the
// API server does, applies the JSON patch it answers with to the request's
// object, and returns the answer and what the user gets.
func defaulted[T client.Object](t *testing.T, wh *admission.Webhook, op admissionv1.Operation, old, obj T, into T) admission.Response {
	t.Helper()
	raw := func(o T) runtime.RawExtension {
		o.GetObjectKind().SetGroupVersionKind(v1alpha1.GroupVersion.WithKind(kindOf(o)))
		b, err := json.Marshal(o)
		require.NoError(t, err)
		return runtime.RawExtension{Raw: b}
	}
	req := admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{Operation: op, Object: raw(obj)}}
	if op == admissionv1.Update {
		req.OldObject = raw(old)
	}
	resp := wh.Handle(context.Background(), req)
	patched := req.Object.Raw
	if len(resp.Patches) > 0 {
		require.NotNil(t, resp.PatchType)
		assert.Equal(t, admissionv1.PatchTypeJSONPatch, *resp.PatchType)
		ops, err := json.Marshal(resp.Patches)
		require.NoError(t, err)
		patch, err := jsonpatch.DecodePatch(ops)
		require.NoError(t, err)
		patched, err = patch.Apply(req.Object.Raw)
		require.NoError(t, err, "the patch applies to the request's object")
	}
	require.NoError(t, json.Unmarshal(patched, into))
	return resp
}

func kindOf(o client.Object) string {
	switch o.(type) {
	case *v1alpha1.ServiceInstance:
		return "ServiceInstance"
	case *v1alpha1.ServiceBinding:
		return "ServiceBinding"
	}
	return ""
}

func TestInstanceDefaulter(t *testing.T) {
	scheme := runtime.NewScheme()
	require.NoError(t, v1alpha1.AddToScheme(scheme))
	broker := func(name string) runtime.Object {
		return &v1alpha1.ServiceBroker{ObjectMeta: metav1.ObjectMeta{Name: name}}
	}
	meta := metav1.ObjectMeta{Name: "db", Namespace: "team"}
	deleting := meta
	deleting.DeletionTimestamp = new(metav1.Now())
	deleting.Finalizers = []string{"example.com/other"}
	adopting := meta
	adopting.Annotations = map[string]string{v1alpha1.AnnotationAdopt: "true"}
	tests := []struct {
		name       string
		op         admissionv1.Operation
		brokers    []runtime.Object
		old, obj   *v1alpha1.ServiceInstance
		wantBroker string
		wantID     string // "uuid": any UUID
		finalizers []string
		patched    bool
	}{
		{"create fills every default", admissionv1.Create, []runtime.Object{broker("acme")},
			nil, &v1alpha1.ServiceInstance{ObjectMeta: meta}, "acme", "uuid", []string{v1alpha1.Finalizer}, true},
		{"create keeps given values", admissionv1.Create, []runtime.Object{broker("acme")},
			nil, &v1alpha1.ServiceInstance{ObjectMeta: meta, Spec: v1alpha1.ServiceInstanceSpec{BrokerName: "other", ExternalID: "x"}}, "other", "x", []string{v1alpha1.Finalizer}, true},
		{"no broker default when two exist", admissionv1.Create, []runtime.Object{broker("a"), broker("b")},
			nil, &v1alpha1.ServiceInstance{ObjectMeta: meta}, "", "uuid", []string{v1alpha1.Finalizer}, true},
		{"an adopting create names its external id: none is made up", admissionv1.Create, []runtime.Object{broker("acme")},
			nil, &v1alpha1.ServiceInstance{ObjectMeta: adopting}, "acme", "", []string{v1alpha1.Finalizer}, true},
		{"update keeps defaulted fields a request left out", admissionv1.Update, nil,
			&v1alpha1.ServiceInstance{ObjectMeta: meta, Spec: v1alpha1.ServiceInstanceSpec{BrokerName: "acme", ExternalID: "x"}},
			&v1alpha1.ServiceInstance{ObjectMeta: meta}, "acme", "x", []string{v1alpha1.Finalizer}, true},
		{"update restores the finalizer", admissionv1.Update, nil,
			&v1alpha1.ServiceInstance{ObjectMeta: meta, Spec: v1alpha1.ServiceInstanceSpec{BrokerName: "acme", ExternalID: "x"}},
			&v1alpha1.ServiceInstance{ObjectMeta: meta, Spec: v1alpha1.ServiceInstanceSpec{BrokerName: "acme", ExternalID: "x"}}, "acme", "x", []string{v1alpha1.Finalizer}, true},
		{"update with every default set changes nothing", admissionv1.Update, nil,
			&v1alpha1.ServiceInstance{ObjectMeta: defaultedMeta(meta), Spec: v1alpha1.ServiceInstanceSpec{BrokerName: "acme", ExternalID: "x"}},
			&v1alpha1.ServiceInstance{ObjectMeta: defaultedMeta(meta), Spec: v1alpha1.ServiceInstanceSpec{BrokerName: "acme", ExternalID: "x"}}, "acme", "x", []string{v1alpha1.Finalizer}, false},
		{"update of an object defaulted before the label: labelled", admissionv1.Update, nil,
			&v1alpha1.ServiceInstance{ObjectMeta: withFinalizer(meta), Spec: v1alpha1.ServiceInstanceSpec{BrokerName: "acme", ExternalID: "x"}},
			&v1alpha1.ServiceInstance{ObjectMeta: withFinalizer(meta), Spec: v1alpha1.ServiceInstanceSpec{BrokerName: "acme", ExternalID: "x"}}, "acme", "x", []string{v1alpha1.Finalizer}, true},
		{"update of an object being deleted changes nothing", admissionv1.Update, nil,
			&v1alpha1.ServiceInstance{ObjectMeta: deleting, Spec: v1alpha1.ServiceInstanceSpec{ExternalID: "x"}},
			&v1alpha1.ServiceInstance{ObjectMeta: deleting}, "", "", []string{"example.com/other"}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			reader := fake.NewClientBuilder().WithScheme(scheme).WithRuntimeObjects(tt.brokers...).Build()
			wh := InstanceDefaulterWebhook(scheme, NewInstanceDefaulter(reader))
			var got v1alpha1.ServiceInstance
			resp := defaulted(t, wh, tt.op, tt.old, tt.obj, &got)
			require.True(t, resp.Allowed, "allowed (result %+v)", resp.Result)
			assert.Equal(t, tt.patched, len(resp.Patches) > 0, "patched: %v", resp.Patches)
			assert.Equal(t, tt.wantBroker, got.Spec.BrokerName)
			if tt.wantID == "uuid" {
				_, err := uuid.Parse(got.Spec.ExternalID)
				assert.NoError(t, err)
			} else {
				assert.Equal(t, tt.wantID, got.Spec.ExternalID)
			}
			assert.Equal(t, tt.finalizers, got.Finalizers)
			assert.Equal(t, tt.obj.DeletionTimestamp == nil, got.Labels[v1alpha1.DefaultedLabel] == "true", "labelled as defaulted, unless being deleted")
			assert.Equal(t, tt.obj.Name, got.Name, "the rest of the object is as sent")
		})
	}
}

func TestBindingDefaulter(t *testing.T) {
	scheme := runtime.NewScheme()
	require.NoError(t, v1alpha1.AddToScheme(scheme))
	meta := metav1.ObjectMeta{Name: "creds", Namespace: "team"}
	generated := metav1.ObjectMeta{GenerateName: "creds-", Namespace: "team"}
	spec := v1alpha1.ServiceBindingSpec{InstanceName: "db", SecretName: "creds", ExternalID: "x"}
	tests := []struct {
		name       string
		op         admissionv1.Operation
		old, obj   *v1alpha1.ServiceBinding
		want       v1alpha1.ServiceBindingSpec // ExternalID "uuid": any UUID
		finalizers []string
		patched    bool
		refused    string
	}{
		{name: "create fills every default", op: admissionv1.Create, obj: &v1alpha1.ServiceBinding{ObjectMeta: meta, Spec: v1alpha1.ServiceBindingSpec{InstanceName: "db"}},
			want: v1alpha1.ServiceBindingSpec{InstanceName: "db", SecretName: "creds", ExternalID: "uuid"}, finalizers: []string{v1alpha1.Finalizer}, patched: true},
		{name: "a generated name needs spec.secretName", op: admissionv1.Create, obj: &v1alpha1.ServiceBinding{ObjectMeta: generated, Spec: v1alpha1.ServiceBindingSpec{InstanceName: "db"}},
			refused: "spec.secretName: Required value"},
		{name: "update keeps defaulted fields a request left out", op: admissionv1.Update,
			old: &v1alpha1.ServiceBinding{ObjectMeta: withFinalizer(meta), Spec: spec}, obj: &v1alpha1.ServiceBinding{ObjectMeta: withFinalizer(meta), Spec: v1alpha1.ServiceBindingSpec{InstanceName: "db"}},
			want: spec, finalizers: []string{v1alpha1.Finalizer}, patched: true},
		{name: "update with every default set changes nothing", op: admissionv1.Update,
			old: &v1alpha1.ServiceBinding{ObjectMeta: defaultedMeta(meta), Spec: spec}, obj: &v1alpha1.ServiceBinding{ObjectMeta: defaultedMeta(meta), Spec: spec},
			want: spec, finalizers: []string{v1alpha1.Finalizer}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			wh := BindingDefaulterWebhook(scheme, NewBindingDefaulter())
			var got v1alpha1.ServiceBinding
			resp := defaulted(t, wh, tt.op, tt.old, tt.obj, &got)
			if tt.refused != "" {
				require.False(t, resp.Allowed)
				assert.Equal(t, int32(http.StatusUnprocessableEntity), resp.Result.Code)
				assert.Contains(t, resp.Result.Message, tt.refused)
				return
			}
			require.True(t, resp.Allowed, "allowed (result %+v)", resp.Result)
			assert.Equal(t, tt.patched, len(resp.Patches) > 0, "patched: %v", resp.Patches)
			if tt.want.ExternalID == "uuid" {
				_, err := uuid.Parse(got.Spec.ExternalID)
				assert.NoError(t, err)
				got.Spec.ExternalID = "uuid"
			}
			assert.Equal(t, tt.want, got.Spec)
			assert.Equal(t, tt.finalizers, got.Finalizers)
			assert.Equal(t, "true", got.Labels[v1alpha1.DefaultedLabel], "labelled as defaulted")
		})
	}
}

func withFinalizer(m metav1.ObjectMeta) metav1.ObjectMeta {
	m.Finalizers = []string{v1alpha1.Finalizer}
	return m
}

// defaultedMeta is m as the defaulter leaves it: with lockstep's finalizer
// and the defaulted label.
func defaultedMeta(m metav1.ObjectMeta) metav1.ObjectMeta {
	m = withFinalizer(m)
	m.Labels = map[string]string{v1alpha1.DefaultedLabel: "true"}
	return m
}

// A field of the wrong JSON type is refused by the mutating webhook with
// its field path, as the API server's own validation would, not in the
// decoder's Go words.
func TestDefaulterNamesAFieldOfTheWrongType(t *testing.T) {
	scheme := runtime.NewScheme()
	require.NoError(t, v1alpha1.AddToScheme(scheme))
	tests := []struct {
		name string
		wh   *admission.Webhook
		raw  string
		want string
	}{
		{"a number for a string", InstanceDefaulterWebhook(scheme, NewInstanceDefaulter(nil)),
			`{"apiVersion":"lockstep.dev/v1alpha1","kind":"ServiceInstance","metadata":{"name":"db"},"spec":{"serviceName":"db","planName":5}}`,
			`ServiceInstance.lockstep.dev "db" is invalid: spec.planName: Invalid value: "number": must be a string`},
		{"a string for a list", BindingDefaulterWebhook(scheme, NewBindingDefaulter()),
			`{"apiVersion":"lockstep.dev/v1alpha1","kind":"ServiceBinding","metadata":{"name":"creds"},"spec":{"instanceName":"db","parametersFrom":"x"}}`,
			`ServiceBinding.lockstep.dev "creds" is invalid: spec.parametersFrom: Invalid value: "string": must be a list`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp := tt.wh.Handle(context.Background(), admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{
				Operation: admissionv1.Create, Name: nameOf(tt.raw), Object: runtime.RawExtension{Raw: []byte(tt.raw)}}})
			require.False(t, resp.Allowed)
			assert.Equal(t, int32(http.StatusUnprocessableEntity), resp.Result.Code)
			assert.Equal(t, tt.want, resp.Result.Message)
			assert.NotContains(t, resp.Result.Message, "Go struct field")
		})
	}
}

// nameOf is metadata.name of a raw object.
func nameOf(raw string) string {
	var o struct {
		Metadata struct{ Name string } `json:"metadata"`
	}
	_ = json.Unmarshal([]byte(raw), &o)
	return o.Metadata.Name
}
