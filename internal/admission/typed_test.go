package admission

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionv1 "k8s.io/api/admission/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/lockstep-dev/lockstep/api/v1alpha1"
	"github.com/lockstep-dev/lockstep/internal/broker/fakebroker"
	"github.com/lockstep-dev/lockstep/internal/broker/osbapi"
	"github.com/lockstep-dev/lockstep/internal/catalog"
	"github.com/lockstep-dev/lockstep/internal/journal"
	"github.com/lockstep-dev/lockstep/internal/typed/object"
	"github.com/lockstep-dev/lockstep/internal/typed/render"
)

// typedCRD is the CRD of the typed kind of service db of broker acme (the
// test broker's default catalog): kind Db, resource dbs.
func typedCRD(t testing.TB) *apiextensionsv1.CustomResourceDefinition {
	t.Helper()
	cat := fakebroker.DefaultCatalog()
	i := slices.IndexFunc(cat.Services, func(s osbapi.Service) bool { return s.Name == fakebroker.ServiceDB })
	require.GreaterOrEqual(t, i, 0)
	crd, _, err := render.Render("acme", &cat.Services[i], render.Options{})
	require.NoError(t, err)
	return crd
}

// side is one way to ask for an instance: as a ServiceInstance, or as an
// object of the typed kind Db.
type side struct {
	name     string
	kind     metav1.GroupVersionKind
	resource metav1.GroupVersionResource
	// raw is the object as the API server sends it.
	raw func(t testing.TB, si Instance) []byte
	// validator and defaulter serve the side's webhooks.
	validator func(h *harness) *admission.Webhook
	defaulter func(h *harness) *admission.Webhook
	// normal says the side's answers in the words of a ServiceInstance's.
	normal func(s string) string
}

var sides = []side{
	{
		name:     "ServiceInstance",
		kind:     metav1.GroupVersionKind{Group: "lockstep.dev", Version: "v1alpha1", Kind: "ServiceInstance"},
		resource: metav1.GroupVersionResource{Group: "lockstep.dev", Version: "v1alpha1", Resource: "serviceinstances"},
		raw: func(t testing.TB, si Instance) []byte {
			c := si.DeepCopy()
			c.TypeMeta = metav1.TypeMeta{APIVersion: "lockstep.dev/v1alpha1", Kind: "ServiceInstance"}
			raw, err := json.Marshal(c)
			require.NoError(t, err)
			return raw
		},
		validator: func(h *harness) *admission.Webhook { return InstanceValidatorWebhook(h.validator) },
		defaulter: func(h *harness) *admission.Webhook {
			d := NewInstanceDefaulter(h.client)
			return InstancePrecheckWebhook(InstanceDefaulterWebhook(h.client.Scheme(), d), d, h.validator)
		},
		normal: func(s string) string { return s },
	},
	{
		name:     "typed kind",
		kind:     metav1.GroupVersionKind{Group: "services.lockstep.dev", Version: "v1alpha1", Kind: "Db"},
		resource: metav1.GroupVersionResource{Group: "services.lockstep.dev", Version: "v1alpha1", Resource: "dbs"},
		raw:      typedRaw,
		validator: func(h *harness) *admission.Webhook {
			return TypedValidatorWebhook(&TypedKinds{Reader: h.client}, h.validator)
		},
		defaulter: func(h *harness) *admission.Webhook {
			d := NewInstanceDefaulter(h.client)
			InstanceDefaulterWebhook(h.client.Scheme(), d)
			return TypedDefaulterWebhook(&TypedKinds{Reader: h.client}, d, h.validator)
		},
		normal: strings.NewReplacer(
			"Db.services.lockstep.dev", "ServiceInstance.lockstep.dev",
			"spec.plan", "spec.planName", "/spec/plan", "/spec/planName",
			"kubectl annotate db ", "kubectl annotate serviceinstance ",
		).Replace,
	},
}

// typedRaw is the object of kind Db whose model is si, as the API server
// sends it.
func typedRaw(t testing.TB, si Instance) []byte {
	t.Helper()
	raw, err := json.Marshal(si)
	require.NoError(t, err)
	var obj map[string]any
	require.NoError(t, json.Unmarshal(raw, &obj))
	obj["apiVersion"], obj["kind"] = "services.lockstep.dev/v1alpha1", "Db"
	spec := obj["spec"].(map[string]any)
	spec["plan"] = spec["planName"]
	delete(spec, "planName")
	delete(spec, "serviceName")
	if status, ok := obj["status"].(map[string]any); ok && len(status) == 0 {
		delete(obj, "status")
	}
	raw, err = json.Marshal(obj)
	require.NoError(t, err)
	return raw
}

// request is the admission request of op on old and new, of side s.
func (s side) request(t testing.TB, op admissionv1.Operation, old, new Instance, dryRun bool) admission.Request {
	req := admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{
		UID: "req-1", Operation: op, DryRun: &dryRun, Kind: s.kind, Resource: s.resource, Name: "db", Namespace: "team",
		UserInfo: authenticationv1.UserInfo{Username: "alice", Groups: []string{"devs"}},
	}}
	if new != nil {
		req.Object = runtime.RawExtension{Raw: s.raw(t, new)}
	}
	if old != nil {
		req.OldObject = runtime.RawExtension{Raw: s.raw(t, old)}
	}
	return req
}

// answer is what one side answered and recorded, in a ServiceInstance's
// words.
type answer struct {
	Allowed bool
	Code    int32
	Message string
	Fields  []string
	Calls   map[fakebroker.Op]int
	Records []record
}

type record struct {
	Verb                       v1alpha1.Verb
	Phase                      v1alpha1.OperationPhase
	HTTPStatus                 int32
	Description                string
	PlanID, PreviousPlanID     string
	SpecHash, ExternalID, User string
	Digest                     string
}

// TestTypedKindIsAdmittedAsServiceInstance runs one table on both sides:
// the same request, as a ServiceInstance and as an object of typed kind
// Db of the same service, with the same broker behaviour, gets the same
// answer (in the words of its kind), the same broker calls and the same
// journal records, which name the typed kind and its group.
func TestTypedKindIsAdmittedAsServiceInstance(t *testing.T) {
	existing := fakebroker.Instance{ID: "ext-1", ServiceID: fakebroker.ServiceDBID, PlanID: fakebroker.PlanSmallID}
	put := func(b *fakebroker.Broker) { b.PutInstance(existing) }
	tests := []struct {
		name     string
		op       admissionv1.Operation
		old, new Instance
		dryRun   bool
		script   func(b *fakebroker.Broker)
		objects  []runtime.Object
		allowed  bool
		wantMsg  string // in a ServiceInstance's words
	}{
		{name: "create provisions", op: admissionv1.Create, new: instance("small", `{"region":"eu","storageGB":10}`), allowed: true},
		{name: "dry-run create calls nobody", op: admissionv1.Create, new: instance("small", `{"region":"eu"}`), dryRun: true, allowed: true},
		{name: "create refused by the broker", op: admissionv1.Create, new: instance("small", ""),
			script: func(b *fakebroker.Broker) {
				b.Script(fakebroker.OpProvision, fakebroker.Respond{Status: 400, Error: "BadRequest", Description: "no room"})
			},
			wantMsg: `"no room"`},
		{name: "create on an unknown plan", op: admissionv1.Create, new: instance("huge", ""), wantMsg: `spec.planName: Invalid value: "huge"`},
		{name: "parameters against the schema", op: admissionv1.Create, new: instance("small", `{"storageGB":0}`), wantMsg: "spec.parameters.storageGB"},
		{name: "parameters update", op: admissionv1.Update, old: instance("small", `{"storageGB":10}`), new: instance("small", `{"storageGB":20}`),
			script: put, allowed: true},
		{name: "plan change", op: admissionv1.Update, old: instance("small", ""), new: instance("large", ""), script: put, allowed: true},
		{name: "dry-run plan change calls nobody", op: admissionv1.Update, old: instance("small", ""), new: instance("large", ""), dryRun: true, allowed: true},
		{name: "plan change the catalog forbids", op: admissionv1.Update, old: instance("fixed", ""), new: instance("small", ""),
			wantMsg: `spec.planName: Invalid value: "small": broker "acme" does not allow plan changes`},
		{name: "create-only parameter change", op: admissionv1.Update, old: instance("small", `{"region":"eu"}`), new: instance("small", `{"region":"us"}`),
			wantMsg: "spec.parameters.region"},
		{name: "update refused by the broker", op: admissionv1.Update, old: instance("small", ""), new: instance("large", ""),
			script: func(b *fakebroker.Broker) {
				put(b)
				b.Script(fakebroker.OpUpdate, fakebroker.Respond{Status: 422, Error: "MaintenanceInfoConflict", Description: "upgrade first"})
			},
			wantMsg: `the instance keeps plan "small"`},
		{name: "label change calls nobody", op: admissionv1.Update, old: instance("small", ""),
			new: instance("small", "", func(si *v1alpha1.ServiceInstance) { si.Labels = map[string]string{"a": "b"} }), allowed: true},
		{name: "parameters from a Secret", op: admissionv1.Create, new: instance("small", `{"storageGB":10}`, from("db-admin/params")),
			objects: []runtime.Object{paramsSecret("db-admin", map[string]string{"params": `{"region":"` + secretMark + `"}`})}, allowed: true},
		{name: "parameters from a Secret that is not there", op: admissionv1.Create, new: instance("small", "", from("nope/params")),
			wantMsg: `spec.parametersFrom[0].secretKeyRef.name: Invalid value: "nope"`},
		{name: "adoption of what the broker holds", op: admissionv1.Create,
			new: instance("small", "", func(si *v1alpha1.ServiceInstance) {
				si.Annotations = map[string]string{v1alpha1.AnnotationAdopt: "true"}
			}), script: put, allowed: true},
		{name: "adoption of what the broker does not hold", op: admissionv1.Create,
			new: instance("small", "", func(si *v1alpha1.ServiceInstance) {
				si.Annotations = map[string]string{v1alpha1.AnnotationAdopt: "true"}
			}), wantMsg: "ext-1"},
		{name: "update of an object being deleted calls nobody", op: admissionv1.Update,
			old: instance("small", "", func(si *v1alpha1.ServiceInstance) { si.DeletionTimestamp = &metav1.Time{Time: time.Now()} }),
			new: instance("large", `{"storageGB":5000}`, func(si *v1alpha1.ServiceInstance) {
				si.DeletionTimestamp, si.Finalizers = &metav1.Time{Time: time.Now()}, nil
			}), allowed: true},
		{name: "delete deprovisions", op: admissionv1.Delete, old: instance("small", ""), script: put, allowed: true},
		{name: "delete refused by the broker", op: admissionv1.Delete, old: instance("small", ""),
			script: func(b *fakebroker.Broker) {
				put(b)
				b.Script(fakebroker.OpDeprovision, fakebroker.Respond{Status: 400, Error: "BadRequest", Description: "backups running"})
			},
			wantMsg: "kubectl annotate serviceinstance db -n team lockstep.dev/reconcile-policy=detach-on-delete"},
		{name: "delete without the broker", op: admissionv1.Delete,
			old: instance("small", "", func(si *v1alpha1.ServiceInstance) {
				si.Annotations = map[string]string{v1alpha1.AnnotationReconcilePolicy: string(v1alpha1.PolicyDetachOnDelete)}
			}), allowed: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			answers := make([]answer, len(sides))
			for i, s := range sides {
				h := newHarness(t, append([]runtime.Object{typedCRD(t)}, tt.objects...)...)
				if tt.script != nil {
					tt.script(h.broker)
				}
				counted := func() (n float64) {
					for k, v := range decisions(t) {
						if strings.HasPrefix(k, s.kind.Kind+"/"+string(tt.op)+"/") {
							n += v
						}
					}
					return n
				}
				before := counted()
				resp := s.validator(h).Handle(context.Background(), s.request(t, tt.op, tt.old, tt.new, tt.dryRun))
				h.answers.Wait()
				assert.Equal(t, before+1, counted(), "the decision is counted under the object's own kind")
				a := answer{Allowed: resp.Allowed, Calls: map[fakebroker.Op]int{}}
				if r := resp.Result; r != nil && !resp.Allowed {
					a.Code, a.Message = r.Code, s.normal(r.Message)
					if r.Details != nil {
						for _, c := range r.Details.Causes {
							a.Fields = append(a.Fields, s.normal(c.Field))
						}
					}
				}
				for _, c := range h.broker.Calls() {
					a.Calls[c.Op]++
				}
				var ops v1alpha1.BrokerOperationList
				require.NoError(t, h.client.List(context.Background(), &ops))
				for _, op := range ops.Items {
					a.Records = append(a.Records, record{
						Verb: op.Spec.Verb, Phase: op.Status.Phase, HTTPStatus: op.Status.HTTPStatus, Description: s.normal(op.Status.Description),
						PlanID: op.Spec.PlanID, PreviousPlanID: op.Spec.PreviousPlanID, SpecHash: op.Spec.SpecHash, Digest: op.Spec.ParametersDigest,
						ExternalID: op.Spec.Target.ExternalID, User: op.Spec.Requester.Username,
					})
					if s.kind.Kind == "Db" {
						assert.Equal(t, v1alpha1.TargetKind("Db"), op.Spec.Target.Kind, "the record names the typed kind")
						assert.Equal(t, "services.lockstep.dev", op.Spec.Target.APIGroup)
						assert.Equal(t, "Db", op.Labels["lockstep.dev/target-kind"])
					} else {
						assert.Equal(t, v1alpha1.KindServiceInstance, op.Spec.Target.Kind)
						assert.Empty(t, op.Spec.Target.APIGroup)
					}
				}
				answers[i] = a
				if s.kind.Kind == "Db" && !resp.Allowed && resp.Result != nil {
					assert.NotContains(t, resp.Result.Message, "ServiceInstance", "the typed kind is named")
					assert.NotContains(t, resp.Result.Message, "planName")
				}
			}
			assert.Equal(t, tt.allowed, answers[0].Allowed, answers[0].Message)
			if tt.wantMsg != "" {
				assert.Contains(t, answers[0].Message, tt.wantMsg)
			}
			assert.Equal(t, answers[0], answers[1], "the typed kind is answered and recorded as the ServiceInstance")
		})
	}
}

// TestTypedKindDefaults: the typed kind's defaults are the instance
// defaulter's, as a patch of the typed object (spec.brokerName is the
// kind's broker), and an object being deleted is left alone. Both are
// labelled as defaulted, so that the API server sends their later updates
// only when the label is gone.
func TestTypedKindDefaults(t *testing.T) {
	fresh := instance("small", "", func(si *v1alpha1.ServiceInstance) {
		si.Finalizers, si.Spec.ExternalID, si.Spec.BrokerName = nil, "", ""
	})
	tests := []struct {
		name     string
		op       admissionv1.Operation
		old, new Instance
		paths    []string
	}{
		{name: "create", op: admissionv1.Create, new: fresh,
			paths: []string{"/metadata/finalizers", "/metadata/labels", "/spec/brokerName", "/spec/externalID"}},
		{name: "update that leaves defaulted fields out", op: admissionv1.Update, old: instance("small", ""), new: fresh,
			paths: []string{"/metadata/finalizers", "/metadata/labels", "/spec/brokerName", "/spec/externalID"}},
		{name: "update of a defaulted object written before the label", op: admissionv1.Update,
			old: instance("small", ""), new: instance("small", ""), paths: []string{"/metadata/labels"}},
		{name: "update of an object being deleted", op: admissionv1.Update,
			old: instance("small", "", func(si *v1alpha1.ServiceInstance) { si.DeletionTimestamp = &metav1.Time{Time: time.Now()} }),
			new: instance("small", "", func(si *v1alpha1.ServiceInstance) {
				si.DeletionTimestamp, si.Finalizers = &metav1.Time{Time: time.Now()}, nil
			})},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, s := range sides {
				h := newHarness(t, typedCRD(t))
				resp := s.defaulter(h).Handle(context.Background(), s.request(t, tt.op, tt.old, tt.new, false))
				require.True(t, resp.Allowed, s.name)
				var paths []string
				for _, p := range resp.Patches {
					paths = append(paths, s.normal(p.Path))
				}
				slices.Sort(paths)
				assert.Equal(t, tt.paths, paths, s.name)
				for _, p := range resp.Patches {
					if p.Path == "/spec/brokerName" {
						assert.Equal(t, "acme", p.Value, s.name)
					}
					if p.Path == "/metadata/labels" {
						assert.Equal(t, map[string]any{v1alpha1.DefaultedLabel: "true"}, p.Value, s.name)
					}
				}
			}
		})
	}
}

// TestPrecheckEveryErrorAtOnce: the mutating webhook refuses a typed
// object with every error the validating chain finds (those the CRD would
// find first, and lockstep's own), before the API server's schema check;
// a valid object passes with its defaults, and nothing calls the broker.
// A ServiceInstance is prechecked only when spec.parameters is not an
// object, the type error its CRD would answer first.
func TestPrecheckEveryErrorAtOnce(t *testing.T) {
	labelled := func(si *v1alpha1.ServiceInstance) { si.Labels = map[string]string{v1alpha1.DefaultedLabel: "true"} }
	notObject := func(si *v1alpha1.ServiceInstance) { si.Spec.Parameters = &runtime.RawExtension{Raw: []byte(`"big"`)} }
	tests := []struct {
		name     string
		op       admissionv1.Operation
		old, new Instance
		// fields are the refused fields of each side (ServiceInstance,
		// typed kind), in a ServiceInstance's words; nil: allowed.
		fields [2][]string
		// patched: the answer carries the defaults.
		patched [2]bool
	}{
		{name: "a valid create is defaulted", op: admissionv1.Create, new: instance("small", `{"storageGB":10}`, func(si *v1alpha1.ServiceInstance) { si.Spec.ExternalID = "" }),
			patched: [2]bool{true, true}},
		{name: "a create with errors of the CRD's and of lockstep's", op: admissionv1.Create,
			new:    instance("huge", `{"storageGB":5000,"version":"9","color":"red"}`),
			fields: [2][]string{nil, {"spec.planName"}}, patched: [2]bool{true, false}},
		{name: "a create on a plan with errors of both sorts", op: admissionv1.Create,
			new:    instance("small", `{"storageGB":5000,"version":"9","color":"red"}`),
			fields: [2][]string{nil, {"spec.parameters.color", "spec.parameters.storageGB", "spec.parameters.version"}}, patched: [2]bool{true, false}},
		{name: "an update of a defaulted object with a create-only change and a bound", op: admissionv1.Update,
			old: instance("small", `{"region":"eu"}`, labelled), new: instance("small", `{"region":"us","storageGB":0}`, labelled),
			fields: [2][]string{nil, {"spec.parameters.region", "spec.parameters.storageGB"}}},
		{name: "a valid update of a defaulted object is not patched", op: admissionv1.Update,
			old: instance("small", `{"region":"eu"}`, labelled), new: instance("small", `{"region":"eu","storageGB":3}`, labelled)},
		{name: "parameters that are not an object", op: admissionv1.Create, new: instance("huge", "", notObject),
			fields: [2][]string{{"spec.parameters", "spec.planName"}, {"spec.parameters", "spec.planName"}}},
		{name: "parameters that are not an object, on update", op: admissionv1.Update,
			old: instance("small", "", labelled), new: instance("small", "", labelled, notObject),
			fields: [2][]string{{"spec.parameters"}, {"spec.parameters"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for i, s := range sides {
				h := newHarness(t, typedCRD(t))
				resp := s.defaulter(h).Handle(context.Background(), s.request(t, tt.op, tt.old, tt.new, false))
				if tt.fields[i] == nil {
					require.True(t, resp.Allowed, "%s: %v", s.name, resp.Result)
					assert.Equal(t, tt.patched[i], len(resp.Patches) > 0, s.name)
					continue
				}
				require.False(t, resp.Allowed, s.name)
				assert.Equal(t, int32(http.StatusUnprocessableEntity), resp.Result.Code, s.name)
				var fields []string
				for _, c := range resp.Result.Details.Causes {
					fields = append(fields, s.normal(c.Field))
				}
				slices.Sort(fields)
				assert.Equal(t, tt.fields[i], fields, "%s: %s", s.name, resp.Result.Message)
				assert.NotContains(t, resp.Result.Message, "some validation rules were not checked")
				if s.kind.Kind == "Db" {
					assert.Contains(t, resp.Result.Message, `Db.services.lockstep.dev "db" is invalid`)
				}
			}
			h := newHarness(t, typedCRD(t))
			assert.Empty(t, h.broker.Calls())
		})
	}
}

// TestPrecheckRequiredInSpec: a parameter the kind's CRD requires, which
// an object takes from a Secret, is refused by the mutating webhook as the
// API server would refuse it: the API server's check of the CRD's schema
// is part of the answer.
func TestPrecheckRequiredInSpec(t *testing.T) {
	crd := typedCRD(t)
	params := crd.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"].Properties["parameters"]
	params.Required = []string{"version"}
	crd.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"].Properties["parameters"] = params
	h := newHarness(t, crd, paramsSecret("db-admin", map[string]string{"params": `{"version":"16"}`}))
	typed := sides[1]
	resp := typed.defaulter(h).Handle(context.Background(), typed.request(t, admissionv1.Create, nil,
		instance("small", `{"storageGB":10}`, from("db-admin/params")), false))
	require.False(t, resp.Allowed)
	require.Len(t, resp.Result.Details.Causes, 1, resp.Result.Message)
	assert.Equal(t, "spec.parameters.version", resp.Result.Details.Causes[0].Field)
	assert.Equal(t, `Db.services.lockstep.dev "db" is invalid: spec.parameters.version: Required value`, resp.Result.Message)

	resp = typed.defaulter(h).Handle(context.Background(), typed.request(t, admissionv1.Create, nil,
		instance("small", `{"storageGB":10,"version":"16"}`), false))
	assert.True(t, resp.Allowed, resp.Result)
}

// TestTypedKindFieldTypes: a field of the wrong type is refused with its
// path as the typed object has it, by both webhooks.
func TestTypedKindFieldTypes(t *testing.T) {
	typed := sides[1]
	h := newHarness(t, typedCRD(t))
	req := typed.request(t, admissionv1.Create, nil, instance("small", ""), false)
	req.Object.Raw = []byte(`{"apiVersion":"services.lockstep.dev/v1alpha1","kind":"Db","metadata":{"name":"db","namespace":"team"},"spec":{"plan":5}}`)
	for _, wh := range []*admission.Webhook{typed.defaulter(h), typed.validator(h)} {
		resp := wh.Handle(context.Background(), req)
		require.False(t, resp.Allowed)
		assert.Equal(t, int32(http.StatusUnprocessableEntity), resp.Result.Code)
		assert.Equal(t, `Db.services.lockstep.dev "db" is invalid: spec.plan: Invalid value: "number": must be a string`, resp.Result.Message)
	}
}

// TestTypedKindRefusals: what only a typed kind refuses.
func TestTypedKindRefusals(t *testing.T) {
	typed := sides[1]
	foreign := typedCRD(t)
	delete(foreign.Labels, render.LabelManagedBy)
	tests := []struct {
		name     string
		crd      *apiextensionsv1.CustomResourceDefinition
		op       admissionv1.Operation
		old, new Instance
		code     int32 // 0: allowed
		message  []string
	}{
		{name: "another broker than the kind's", crd: typedCRD(t), op: admissionv1.Create,
			new:  instance("small", "", func(si *v1alpha1.ServiceInstance) { si.Spec.BrokerName = "other" }),
			code: http.StatusUnprocessableEntity, message: []string{`Db.services.lockstep.dev "db" is invalid: spec.brokerName`, `service "db" of broker "acme"`}},
		{name: "a kind lockstep did not make", crd: foreign, op: admissionv1.Create, new: instance("small", ""),
			code: http.StatusForbidden, message: []string{"was not made by lockstep", "spec.typedKinds"}},
		{name: "a kind lockstep did not make may be deleted", crd: foreign, op: admissionv1.Delete, old: instance("small", "")},
		{name: "no kind at all", op: admissionv1.Create, new: instance("small", ""), code: http.StatusForbidden, message: []string{"was not made by lockstep"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var objects []runtime.Object
			if tt.crd != nil {
				objects = append(objects, tt.crd)
			}
			h := newHarness(t, objects...)
			resp := typed.validator(h).Handle(context.Background(), typed.request(t, tt.op, tt.old, tt.new, false))
			if tt.code == 0 {
				assert.True(t, resp.Allowed, resp.Result)
			} else {
				require.False(t, resp.Allowed)
				assert.Equal(t, tt.code, resp.Result.Code)
				for _, m := range tt.message {
					assert.Contains(t, resp.Result.Message, m)
				}
			}
			assert.Empty(t, h.broker.Calls())
		})
	}
}

// TestTypedKindRefusesSensitiveParameters: a parameter the plan's schema
// marks writeOnly or format password is refused in spec.parameters of a
// typed object, pointing at spec.parametersFrom; a ServiceInstance keeps
// taking it.
func TestTypedKindRefusesSensitiveParameters(t *testing.T) {
	vault := osbapi.Service{ID: "vault-id", Name: "vault", Description: "secrets", Plans: []osbapi.Plan{{
		ID: "vault-plan", Name: "small", Schemas: &osbapi.Schemas{ServiceInstance: &osbapi.ServiceInstanceSchemas{
			Create: &osbapi.InputParameters{Parameters: json.RawMessage(`{"$schema":"http://json-schema.org/draft-07/schema#","type":"object","properties":{
				"admin":{"type":"object","properties":{"password":{"type":"string","format":"password"},"name":{"type":"string"}}},
				"tokens":{"type":"array","items":{"type":"string","writeOnly":true}},
				"size":{"type":"integer"}}}`)},
		}},
	}}}
	crd, _, err := render.Render("acme", &vault, render.Options{})
	require.NoError(t, err)
	tests := []struct {
		name, params string
		fields       []string // refused fields of the typed kind
	}{
		{name: "no sensitive parameter", params: `{"size":1,"admin":{"name":"root"}}`},
		{name: "a password and write-only items", params: `{"size":1,"admin":{"name":"root","password":"hunter2"},"tokens":["a","b"]}`,
			fields: []string{"spec.parameters.admin.password", "spec.parameters.tokens[0]", "spec.parameters.tokens[1]"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, s := range sides {
				h := newHarness(t, crd)
				entry, ok := h.cache.Get("acme")
				require.True(t, ok)
				cat := *entry.Catalog
				cat.Services = append(slices.Clone(cat.Services), vault)
				h.cache.Store(catalog.NewEntry("acme", entry.Client, &cat, nil, time.Now()))
				si := instance("small", tt.params, func(si *v1alpha1.ServiceInstance) { si.Spec.ServiceName = "vault" })
				req := s.request(t, admissionv1.Create, nil, si, true)
				req.Kind.Kind, req.Resource.Resource = strings.Replace(req.Kind.Kind, "Db", "Vault", 1), strings.Replace(req.Resource.Resource, "dbs", "vaults", 1)
				if s.kind.Kind == "Db" {
					req.Object.Raw = []byte(strings.Replace(string(req.Object.Raw), `"kind":"Db"`, `"kind":"Vault"`, 1))
				}
				resp := s.validator(h).Handle(context.Background(), req)
				if s.kind.Kind != "Db" || tt.fields == nil {
					assert.True(t, resp.Allowed, "%s: %v", s.name, resp.Result)
					continue
				}
				require.False(t, resp.Allowed)
				var fields []string
				for _, c := range resp.Result.Details.Causes {
					fields = append(fields, c.Field)
				}
				assert.Equal(t, tt.fields, fields)
				assert.Contains(t, resp.Result.Message, "spec.parametersFrom")
				assert.NotContains(t, resp.Result.Message, "hunter2", "a refusal never shows the value")
			}
		})
	}
}

// TestTypedKindAndServiceInstanceNeverShareAnExternalID: a create that
// names the external id an object of the other kind (or of the same typed
// kind) holds is refused, naming the holder.
func TestTypedKindAndServiceInstanceNeverShareAnExternalID(t *testing.T) {
	heldByTyped := &unstructured.Unstructured{}
	require.NoError(t, heldByTyped.UnmarshalJSON(typedRaw(t, instance("small", "", func(si *v1alpha1.ServiceInstance) {
		si.Name, si.Namespace, si.UID = "held", "other", "uid-held"
	}))))
	heldBySI := instance("small", "", func(si *v1alpha1.ServiceInstance) { si.Name, si.Namespace, si.UID = "held", "other", "uid-held" })
	tests := []struct {
		name    string
		holder  runtime.Object
		side    side
		message string
	}{
		{name: "a ServiceInstance naming a typed object's id", holder: heldByTyped, side: sides[0], message: `held by Db "held" in namespace "other"`},
		{name: "a typed object naming a ServiceInstance's id", holder: heldBySI, side: sides[1], message: `held by instance "held" in namespace "other"`},
		{name: "a typed object naming another typed object's id", holder: heldByTyped, side: sides[1], message: `held by Db "held" in namespace "other"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, typedCRD(t), tt.holder)
			resp := tt.side.validator(h).Handle(context.Background(), tt.side.request(t, admissionv1.Create, nil, instance("small", ""), false))
			require.False(t, resp.Allowed)
			assert.Equal(t, int32(http.StatusConflict), resp.Result.Code)
			assert.Contains(t, resp.Result.Message, `external id "ext-1" is already `+tt.message)
			assert.Empty(t, h.broker.Calls())
		})
	}
}

// TestExternalIDInFlightForAnObjectOfAnotherKind: a ServiceInstance and
// the objects of typed kinds share the locks of instance ids. A create
// that finds the lock held for an object of another kind names that
// object, with its kind, only to a requester who may get it as what it
// is: the access check asks about the holder's resource, not the
// requester's.
func TestExternalIDInFlightForAnObjectOfAnotherKind(t *testing.T) {
	typedHolder := journal.Key{Kind: "Db", APIGroup: render.Group, Namespace: "other", Name: "held", ExternalID: "ext-1"}
	siHolder := journal.Key{Kind: v1alpha1.KindServiceInstance, Namespace: "other", Name: "held", ExternalID: "ext-1"}
	tests := []struct {
		name   string
		side   side
		holder journal.Key
		// older strips the holder's kind from its lock, as a replica of
		// a release that does not write it leaves it.
		older bool
		// unserved leaves the typed kind's CRD out.
		unserved bool
		access   grants
		want     string
		notWant  []string
	}{
		{name: "a ServiceInstance, a typed holder it may get", side: sides[0], holder: typedHolder, access: grants{"alice get dbs.services.lockstep.dev other/held"},
			want: `external id "ext-1" is in use: a change of Db "held" in namespace "other" that names it (provision by "bob"`},
		{name: "a ServiceInstance, a typed holder it may not get", side: sides[0], holder: typedHolder, access: grants{"alice get serviceinstances.lockstep.dev other/held"},
			want:    `external id "ext-1" is in use: a change of another Db that names it is in flight at the broker; nothing was changed: retry when it has finished (if the other Db keeps the id, name another one)`,
			notWant: []string{`"other"`, `"held"`, "bob"}},
		{name: "a typed object, a ServiceInstance holder it may get", side: sides[1], holder: siHolder, access: grants{"alice get serviceinstances.lockstep.dev other/held"},
			want: `external id "ext-1" is in use: a change of instance "held" in namespace "other" that names it (provision by "bob"`},
		{name: "a typed object, a ServiceInstance holder it may not get", side: sides[1], holder: siHolder, access: grants{"alice get dbs.services.lockstep.dev other/held"},
			want:    `external id "ext-1" is in use: a change of another instance that names it is in flight at the broker`,
			notWant: []string{`"other"`, `"held"`, "bob"}},
		{name: "a typed object, a typed holder it may get", side: sides[1], holder: typedHolder, access: grants{"alice get dbs.services.lockstep.dev other/held"},
			want: `external id "ext-1" is in use: a change of Db "held" in namespace "other" that names it (provision by "bob"`},
		{name: "a ServiceInstance, a typed holder of the same namespace and name", side: sides[0],
			holder: journal.Key{Kind: "Db", APIGroup: render.Group, Namespace: "team", Name: "db", ExternalID: "ext-1"}, access: grants{"alice get dbs.services.lockstep.dev team/db"},
			want: `external id "ext-1" is in use: a change of Db "db" in namespace "team" that names it (provision by "bob"`},
		{name: "a ServiceInstance, a holder of a kind no longer served", side: sides[0], holder: typedHolder, unserved: true, access: grants{"* * * *"},
			want:    `external id "ext-1" is in use: a change of another Db that names it is in flight at the broker`,
			notWant: []string{`"held"`}},
		{name: "a ServiceInstance, an older lock that names no kind: taken to be a ServiceInstance", side: sides[0], holder: siHolder, older: true,
			access: grants{"alice get serviceinstances.lockstep.dev other/held"},
			want:   `external id "ext-1" is in use: a change of instance "held" in namespace "other" that names it (provision by "bob"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var objects []runtime.Object
			if !tt.unserved {
				objects = append(objects, typedCRD(t))
			}
			h := newHarness(t, objects...)
			h.deps.Access = tt.access
			h.deps.Leases = &journal.Leases{Client: h.client, Namespace: "lockstep-system", Duration: time.Minute, Wait: time.Minute}
			h.validator = NewInstanceValidator(h.deps, nil)
			ctx := context.Background()
			_, ok, err := h.deps.Leases.Acquire(ctx, tt.holder,
				&journal.Operation{Verb: v1alpha1.VerbProvision, User: "bob", Started: time.Now(), Record: "held-provision-1"})
			require.NoError(t, err)
			require.True(t, ok)
			if tt.older {
				var lease coordinationv1.Lease
				require.NoError(t, h.client.Get(ctx, client.ObjectKey{Namespace: "lockstep-system", Name: tt.holder.LeaseName()}, &lease))
				delete(lease.Annotations, "lockstep.dev/kind")
				delete(lease.Annotations, "lockstep.dev/group")
				require.NoError(t, h.client.Update(ctx, &lease))
			}
			resp := tt.side.validator(h).Handle(ctx, tt.side.request(t, admissionv1.Create, nil, instance("small", ""), false))
			h.answers.Wait()
			require.False(t, resp.Allowed)
			assert.Equal(t, int32(http.StatusConflict), resp.Result.Code)
			assert.Contains(t, resp.Result.Message, tt.want)
			for _, s := range tt.notWant {
				assert.NotContains(t, resp.Result.Message, s)
			}
			assert.Empty(t, h.broker.Calls())
		})
	}
}

// typedIndex is a TypedIndex over held; not synced, it answers nothing.
type typedIndex struct {
	held   []*unstructured.Unstructured
	synced bool
	asked  int
}

func (i *typedIndex) ExternalIDHolders(_ object.Kind, id string) ([]*unstructured.Unstructured, bool, error) {
	i.asked++
	if !i.synced {
		return nil, false, nil
	}
	var out []*unstructured.Unstructured
	for _, u := range i.held {
		if got, _, _ := unstructured.NestedString(u.Object, "spec", "externalID"); got == id {
			out = append(out, u.DeepCopy())
		}
	}
	return out, true, nil
}

// TestTypedExternalIDsAreLookedUpInTheIndex: the objects of a typed kind
// that hold an external id are looked up in the replica's index, and what
// it names is confirmed at the API server; only a kind whose index has
// not synced is listed at the API server.
func TestTypedExternalIDsAreLookedUpInTheIndex(t *testing.T) {
	held := &unstructured.Unstructured{}
	require.NoError(t, held.UnmarshalJSON(typedRaw(t, instance("small", "", func(si *v1alpha1.ServiceInstance) {
		si.Name, si.Namespace, si.UID = "held", "other", "uid-held"
	}))))
	tests := []struct {
		name string
		// stored is whether the API server holds the object.
		stored    bool
		index     typedIndex
		refused   bool
		wantLists int
	}{
		{name: "the index names the holder: refused without a list", stored: true,
			index: typedIndex{held: []*unstructured.Unstructured{held}, synced: true}, refused: true},
		{name: "the index names an object that is gone: allowed", index: typedIndex{held: []*unstructured.Unstructured{held}, synced: true}},
		{name: "the index names no holder: allowed without a list", index: typedIndex{synced: true}},
		{name: "the index has not synced: the API server is asked", stored: true, index: typedIndex{}, refused: true, wantLists: 1},
		{name: "the index has not synced, and nothing holds the id", index: typedIndex{}, wantLists: 1},
	}
	for _, side := range sides {
		for _, tt := range tests {
			t.Run(side.kind.Kind+": "+tt.name, func(t *testing.T) {
				lists := 0
				count := interceptor.Funcs{List: func(ctx context.Context, c client.WithWatch, list client.ObjectList, opts ...client.ListOption) error {
					if _, ok := list.(*unstructured.UnstructuredList); ok {
						lists++
					}
					return c.List(ctx, list, opts...)
				}}
				objects := []runtime.Object{typedCRD(t)}
				if tt.stored {
					objects = append(objects, held.DeepCopy())
				}
				h := newInterceptedHarness(t, count, objects...)
				index := tt.index
				h.deps.Typed = &index
				h.validator = NewInstanceValidator(h.deps, nil)
				resp := side.validator(h).Handle(context.Background(), side.request(t, admissionv1.Create, nil, instance("small", ""), true))
				assert.Equal(t, 1, index.asked, "the index is asked once (dry run: the check before the lock only)")
				assert.Equal(t, tt.wantLists, lists, "lists of typed objects at the API server")
				if tt.refused {
					require.False(t, resp.Allowed)
					assert.Equal(t, int32(http.StatusConflict), resp.Result.Code)
					assert.Contains(t, resp.Result.Message, `external id "ext-1" is already held by Db "held" in namespace "other"`)
					return
				}
				assert.True(t, resp.Allowed, resp.Result)
			})
		}
	}
}

func TestTypedPaths(t *testing.T) {
	errs := field.ErrorList{
		field.Invalid(field.NewPath("spec", "planName"), "huge", "no such plan"),
		field.Invalid(field.NewPath("spec", "serviceName"), "db", "no such service"),
		field.Invalid(field.NewPath("spec", "parameters", "size"), 0, "too small"),
	}
	typed := instance("small", "", func(si *v1alpha1.ServiceInstance) {
		si.TypeMeta = metav1.TypeMeta{APIVersion: "services.lockstep.dev/v1alpha1", Kind: "Db"}
	})
	got := typedPaths(typed, errs)
	assert.Equal(t, []string{"spec.plan", "spec", "spec.parameters.size"}, []string{got[0].Field, got[1].Field, got[2].Field})
	assert.Equal(t, `kind Db is service "db": no such service`, got[1].Detail)
	assert.Equal(t, "spec.planName", errs[0].Field, "the errors themselves are left as they are")
	assert.Equal(t, errs, typedPaths(instance("small", ""), errs), "a ServiceInstance's errors are its own")
}

// TestTypedKindJustAppliedIsReadPastTheCache: a CRD the cache does not
// have yet is read from the API server before the request is judged.
func TestTypedKindJustAppliedIsReadPastTheCache(t *testing.T) {
	h := newHarness(t, typedCRD(t))
	empty := newHarness(t).client // a cache that has not heard of the CRD yet
	typed := sides[1]
	for _, kinds := range []*TypedKinds{{Reader: empty}, {Reader: empty, Direct: h.client}} {
		resp := TypedValidatorWebhook(kinds, h.validator).Handle(context.Background(),
			typed.request(t, admissionv1.Create, nil, instance("small", ""), true))
		if kinds.Direct == nil {
			assert.False(t, resp.Allowed, "without a read past the cache the kind is unknown")
			continue
		}
		assert.True(t, resp.Allowed, resp.Result)
	}
}

// TestTypedKindBeingDeactivated: while the marketplace controller has
// marked a kind's CRD retiring, creating an object of the kind is refused,
// saying why and what to do, also when the cache has not seen the mark
// yet (the CRD is read past it); the objects that exist are changed and
// deleted as ever.
func TestTypedKindBeingDeactivated(t *testing.T) {
	typed := sides[1]
	marked := typedCRD(t)
	marked.Annotations[object.AnnotationRetiring] = time.Now().UTC().Format(time.RFC3339)
	labelled := instance("small", "", func(si *v1alpha1.ServiceInstance) { si.Labels = map[string]string{"team": "a"} })
	tests := []struct {
		name     string
		cache    *apiextensionsv1.CustomResourceDefinition // nil: the CRD as the API server has it
		crd      *apiextensionsv1.CustomResourceDefinition
		op       admissionv1.Operation
		old, new Instance
		dryRun   bool
		refused  bool
	}{
		{name: "create", crd: marked, op: admissionv1.Create, new: instance("small", ""), refused: true},
		{name: "dry-run create", crd: marked, op: admissionv1.Create, new: instance("small", ""), dryRun: true, refused: true},
		{name: "create, the cache without the mark yet", cache: typedCRD(t), crd: marked, op: admissionv1.Create, new: instance("small", ""), refused: true},
		{name: "dry-run create of a kind not being deactivated", crd: typedCRD(t), op: admissionv1.Create, new: instance("small", ""), dryRun: true},
		{name: "update", crd: marked, op: admissionv1.Update, old: instance("small", ""), new: labelled},
		{name: "delete", crd: marked, op: admissionv1.Delete, old: instance("small", "")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, tt.crd)
			defer h.answers.Wait()
			kinds := &TypedKinds{Reader: h.client, Direct: h.client}
			if tt.cache != nil {
				kinds.Reader = newHarness(t, tt.cache).client
			}
			resp := TypedValidatorWebhook(kinds, h.validator).Handle(context.Background(), typed.request(t, tt.op, tt.old, tt.new, tt.dryRun))
			if !tt.refused {
				assert.True(t, resp.Allowed, resp.Result)
				return
			}
			require.False(t, resp.Allowed)
			assert.Equal(t, int32(http.StatusForbidden), resp.Result.Code)
			for _, m := range []string{`kind Db (service "db") is being deactivated on ServiceBroker "acme"`, "nothing was created and the broker was not called",
				`keep the service in ServiceBroker "acme" spec.typedKinds`, `or create a ServiceInstance of service "db" instead`} {
				assert.Contains(t, resp.Result.Message, m)
			}
			assert.Empty(t, h.broker.Calls())
		})
	}
}
