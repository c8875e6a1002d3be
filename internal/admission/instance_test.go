package admission

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionv1 "k8s.io/api/admission/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/lockstep-dev/lockstep/api/v1alpha1"
	"github.com/lockstep-dev/lockstep/internal/broker/fakebroker"
	"github.com/lockstep-dev/lockstep/internal/broker/osbapi"
	"github.com/lockstep-dev/lockstep/internal/broker/osbclient"
	"github.com/lockstep-dev/lockstep/internal/catalog"
	"github.com/lockstep-dev/lockstep/internal/journal"
)

// harness is a validating chain wired to a real test broker over HTTP and
// a fake API server cache holding the given objects.
type harness struct {
	broker    *fakebroker.Broker
	client    client.Client
	validator *Validator[Instance]
	bindings  *Validator[Binding]
	leases    *journal.Leases
	answers   *journal.After
	cache     *catalog.Cache
	deps      Deps
}

func newHarness(t testing.TB, objects ...runtime.Object) *harness {
	t.Helper()
	return newInterceptedHarness(t, interceptor.Funcs{}, objects...)
}

// newInterceptedHarness is newHarness whose API server calls go through
// funcs first, to make them fail.
func newInterceptedHarness(t testing.TB, funcs interceptor.Funcs, objects ...runtime.Object) *harness {
	t.Helper()
	b := fakebroker.New(t)
	scheme := runtime.NewScheme()
	require.NoError(t, v1alpha1.AddToScheme(scheme))
	objects = append(objects, &v1alpha1.ServiceBroker{ObjectMeta: metav1.ObjectMeta{Name: "acme"}, Spec: v1alpha1.ServiceBrokerSpec{URL: b.URL()}})
	require.NoError(t, corev1.AddToScheme(scheme))
	require.NoError(t, coordinationv1.AddToScheme(scheme))
	require.NoError(t, apiextensionsv1.AddToScheme(scheme))
	builder := fake.NewClientBuilder().WithScheme(scheme).WithRuntimeObjects(objects...).
		WithIndex(&v1alpha1.ServiceInstance{}, v1alpha1.FieldExternalID, ExternalIDIndex).
		WithIndex(&v1alpha1.ServiceBinding{}, v1alpha1.FieldExternalID, ExternalIDIndex).
		WithIndex(&v1alpha1.ServiceBinding{}, BindingInstanceField, BindingInstance)
	// The objects of typed kinds are selectable by spec.externalID, as
	// their CRDs declare.
	for _, o := range objects {
		if crd, ok := o.(*apiextensionsv1.CustomResourceDefinition); ok {
			u := &unstructured.Unstructured{}
			u.SetGroupVersionKind(schema.GroupVersionKind{Group: crd.Spec.Group, Version: crd.Spec.Versions[0].Name, Kind: crd.Spec.Names.Kind})
			builder = builder.WithIndex(u, v1alpha1.FieldExternalID, func(o client.Object) []string {
				id, _, _ := unstructured.NestedString(o.(*unstructured.Unstructured).Object, "spec", "externalID")
				return []string{id}
			})
		}
	}
	reader := builder.WithInterceptorFuncs(funcs).Build()

	c, err := osbclient.New(b.Config())
	require.NoError(t, err)
	cat := fakebroker.DefaultCatalog()
	cache := catalog.NewCache(time.Hour)
	cache.Store(catalog.NewEntry("acme", c, &cat, nil, time.Now()))

	h := &harness{cache: cache, broker: b, client: reader, leases: &journal.Leases{Client: reader, Duration: time.Minute, Wait: 50 * time.Millisecond}, answers: journal.NewAfter()}
	deps := Deps{
		Reader: reader, APIReader: reader, Writer: reader, Secrets: reader, Catalogs: cache, Journal: &journal.Journal{Client: reader}, Leases: h.leases, Budget: 2 * time.Second,
		MaxParametersBytes: DefaultMaxParametersBytes,
		After:              h.answers,
		Broker: BrokerOptions{
			Poll: osbclient.PollOptions{MinInterval: time.Millisecond, MaxInterval: 5 * time.Millisecond},
			Log:  logr.Discard(),
		},
	}
	h.deps = deps
	h.validator = NewInstanceValidator(deps, nil)
	h.bindings = NewBindingValidator(deps, nil)
	return h
}

// admit runs the chain as controller-runtime would for one request, and
// waits for the answers written after the reply.
func (h *harness) admit(op admissionv1.Operation, old, new Instance, dryRun bool) (admission.Warnings, error) {
	defer h.answers.Wait()
	return h.admitNoWait(op, old, new, dryRun)
}

// admitNoWait is admit without the wait for the answers written after
// the reply: for requests made at once, which wait for them together once
// all are answered (a wait may not overlap the start of another's write).
func (h *harness) admitNoWait(op admissionv1.Operation, old, new Instance, dryRun bool) (admission.Warnings, error) {
	ctx := admission.NewContextWithRequest(context.Background(), admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{
		Operation: op, DryRun: &dryRun,
		UserInfo: authenticationv1.UserInfo{Username: "alice", Groups: []string{"devs"}},
	}})
	switch op {
	case admissionv1.Create:
		return h.validator.ValidateCreate(ctx, new)
	case admissionv1.Update:
		return h.validator.ValidateUpdate(ctx, old, new)
	default:
		return h.validator.ValidateDelete(ctx, old)
	}
}

func instance(plan, params string, mutate ...func(*v1alpha1.ServiceInstance)) Instance {
	si := &v1alpha1.ServiceInstance{
		ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: "team", UID: "uid-1", Finalizers: []string{v1alpha1.Finalizer}},
		Spec:       v1alpha1.ServiceInstanceSpec{BrokerName: "acme", ServiceName: "db", PlanName: plan, ExternalID: "ext-1"},
	}
	if params != "" {
		si.Spec.Parameters = &runtime.RawExtension{Raw: json.RawMessage(params)}
	}
	for _, m := range mutate {
		m(si)
	}
	return si
}

func TestInstanceValidator(t *testing.T) {
	existing := fakebroker.Instance{ID: "ext-1", ServiceID: fakebroker.ServiceDBID, PlanID: fakebroker.PlanSmallID}
	tests := []struct {
		name      string
		op        admissionv1.Operation
		old, new  Instance
		dryRun    bool
		objects   []runtime.Object
		script    func(b *fakebroker.Broker)
		wantCode  int32 // 0: allowed
		wantMsg   []string
		wantWarn  string
		wantCalls map[fakebroker.Op]int
		wantPhase v1alpha1.OperationPhase // when not the usual Succeeded/Failed
	}{
		{
			name: "create provisions", op: admissionv1.Create, new: instance("small", `{"region":"eu"}`),
			wantCalls: map[fakebroker.Op]int{fakebroker.OpProvision: 1},
		},
		{
			name: "dry-run create calls nobody", op: admissionv1.Create, new: instance("small", ""), dryRun: true,
			wantCalls: map[fakebroker.Op]int{},
		},
		{
			name: "label-only update calls nobody", op: admissionv1.Update,
			old: instance("small", ""), new: instance("small", "", func(si *v1alpha1.ServiceInstance) { si.Labels = map[string]string{"a": "b"} }),
			wantCalls: map[fakebroker.Op]int{},
		},
		{
			name: "update of an object being deleted is not checked", op: admissionv1.Update,
			old: instance("small", "", func(si *v1alpha1.ServiceInstance) { si.DeletionTimestamp = &metav1.Time{Time: time.Now()} }),
			new: instance("small", "", func(si *v1alpha1.ServiceInstance) {
				si.DeletionTimestamp = &metav1.Time{Time: time.Now()}
				si.Spec.ServiceName = "queue"
				si.Finalizers = nil
			}),
			wantCalls: map[fakebroker.Op]int{},
		},
		{
			name: "plan change is sent with previous values", op: admissionv1.Update,
			old: instance("small", ""), new: instance("large", ""),
			script:    func(b *fakebroker.Broker) { b.PutInstance(existing) },
			wantCalls: map[fakebroker.Op]int{fakebroker.OpUpdate: 1},
		},
		{
			name: "update refused by the broker", op: admissionv1.Update,
			old: instance("small", ""), new: instance("large", ""),
			script: func(b *fakebroker.Broker) {
				b.PutInstance(existing)
				b.Script(fakebroker.OpUpdate, fakebroker.Respond{Status: 422, Error: "MaintenanceInfoConflict", Description: "upgrade first"})
			},
			wantCode:  422,
			wantMsg:   []string{`broker "acme" refused to change plan of instance "db" from "small" to "large": "upgrade first" (HTTP 422 MaintenanceInfoConflict); the instance keeps plan "small"`},
			wantCalls: map[fakebroker.Op]int{fakebroker.OpUpdate: 1},
		},
		{
			name: "concurrency error at the broker is a conflict", op: admissionv1.Update,
			old: instance("small", ""), new: instance("large", ""),
			script: func(b *fakebroker.Broker) {
				b.PutInstance(existing)
				b.Script(fakebroker.OpUpdate, fakebroker.Respond{Status: 422, Error: "ConcurrencyError", Description: "busy"})
			},
			wantCode: http.StatusConflict, wantMsg: []string{"ConcurrencyError"},
			wantCalls: map[fakebroker.Op]int{fakebroker.OpUpdate: 1},
		},
		{
			name: "parameters violating the schema", op: admissionv1.Create, new: instance("small", `{"storageGB": 0, "nope": 1}`),
			wantCode: 422, wantMsg: []string{"spec.parameters.storageGB", "nope"},
			wantCalls: map[fakebroker.Op]int{},
		},
		{
			name: "parameters past the size limit, on a plan without schemas: refused before the broker", op: admissionv1.Create,
			new:      instance("standard", `{"blob":"`+strings.Repeat("x", DefaultMaxParametersBytes)+`"}`, func(si *v1alpha1.ServiceInstance) { si.Spec.ServiceName = "queue" }),
			wantCode: 422, wantMsg: []string{`spec.parameters: Invalid value: "65547 bytes": lockstep sends at most 65536 bytes of parameters to a broker (LOCKSTEP_MAX_PARAMETERS_BYTES`},
			wantCalls: map[fakebroker.Op]int{},
		},
		{
			name: "create-only parameter change", op: admissionv1.Update,
			old: instance("small", `{"region":"eu"}`), new: instance("small", `{"region":"us"}`),
			wantCode: 422, wantMsg: []string{"spec.parameters.region", "create-only parameter"},
			wantCalls: map[fakebroker.Op]int{},
		},
		{
			name: "plan change not allowed", op: admissionv1.Update,
			old: instance("fixed", ""), new: instance("small", ""),
			wantCode: 422, wantMsg: []string{"spec.planName", "does not allow plan changes", `keeps plan "fixed"`},
			wantCalls: map[fakebroker.Op]int{},
		},
		{
			name: "unknown broker", op: admissionv1.Create, new: instance("small", "", func(si *v1alpha1.ServiceInstance) { si.Spec.BrokerName = "nope" }),
			wantCode: 422, wantMsg: []string{"spec.brokerName", "no ServiceBroker has this name"},
			wantCalls: map[fakebroker.Op]int{},
		},
		{
			name: "catalog not loaded within the budget", op: admissionv1.Create,
			new:      instance("small", "", func(si *v1alpha1.ServiceInstance) { si.Spec.BrokerName = "slow" }),
			objects:  []runtime.Object{&v1alpha1.ServiceBroker{ObjectMeta: metav1.ObjectMeta{Name: "slow"}, Spec: v1alpha1.ServiceBrokerSpec{URL: "http://127.0.0.1:1"}}},
			wantCode: http.StatusServiceUnavailable, wantMsg: []string{`the catalog of broker "slow" is not loaded yet`, "nothing was changed: retry"},
			wantCalls: map[fakebroker.Op]int{},
		},
		{
			name: "async provision completes", op: admissionv1.Create, new: instance("small", ""),
			script: func(b *fakebroker.Broker) {
				b.Script(fakebroker.OpProvision, fakebroker.Respond{Async: &fakebroker.Async{InProgressPolls: 2}})
			},
			wantCalls: map[fakebroker.Op]int{fakebroker.OpProvision: 1, fakebroker.OpInstanceLastOperation: 3},
		},
		{
			name: "async provision fails", op: admissionv1.Create, new: instance("small", ""),
			script: func(b *fakebroker.Broker) {
				b.Script(fakebroker.OpProvision, fakebroker.Respond{Async: &fakebroker.Async{Fail: true, Description: "no quota"}})
			},
			wantCode: 422, wantMsg: []string{`broker "acme" failed to provision instance "db"`, "no quota", "nothing was created"},
			wantCalls: map[fakebroker.Op]int{fakebroker.OpProvision: 1, fakebroker.OpInstanceLastOperation: 1},
		},
		{
			name: "async provision whose end cannot be learned: outcome unknown, followed", op: admissionv1.Create, new: instance("small", ""),
			script: func(b *fakebroker.Broker) {
				b.Script(fakebroker.OpProvision, fakebroker.Respond{Async: &fakebroker.Async{}})
				b.Always(fakebroker.OpInstanceLastOperation, fakebroker.Respond{Status: 502, Description: "upstream gone"})
			},
			wantCode: http.StatusServiceUnavailable,
			wantMsg: []string{`broker "acme" accepted the request to provision instance "db"`, "lockstep could not learn how it ended",
				"the outcome is unknown: the instance is not created", "lockstep keeps asking the broker, and if the broker created the instance, lockstep deprovisions it"},
			wantCalls: map[fakebroker.Op]int{fakebroker.OpProvision: 1, fakebroker.OpInstanceLastOperation: 4},
			wantPhase: v1alpha1.PhaseInProgress,
		},
		{
			name: "async update whose end cannot be learned: outcome unknown, followed", op: admissionv1.Update,
			old: instance("small", ""), new: instance("large", ""),
			script: func(b *fakebroker.Broker) {
				b.PutInstance(existing)
				b.Script(fakebroker.OpUpdate, fakebroker.Respond{Async: &fakebroker.Async{}})
				b.Always(fakebroker.OpInstanceLastOperation, fakebroker.Respond{Status: 500, Description: "oops"})
			},
			wantCode: http.StatusServiceUnavailable,
			wantMsg: []string{"the outcome is unknown: the instance keeps its spec for now",
				"if the broker applied the update, lockstep applies the instance's current spec again"},
			wantCalls: map[fakebroker.Op]int{fakebroker.OpUpdate: 1, fakebroker.OpInstanceLastOperation: 4},
			wantPhase: v1alpha1.PhaseInProgress,
		},
		{
			name: "async deprovision whose end cannot be learned: outcome unknown, followed", op: admissionv1.Delete, old: instance("small", ""),
			script: func(b *fakebroker.Broker) {
				b.PutInstance(existing)
				b.Script(fakebroker.OpDeprovision, fakebroker.Respond{Async: &fakebroker.Async{}})
				b.Always(fakebroker.OpInstanceLastOperation, fakebroker.Respond{Malformed: true})
			},
			wantCode: http.StatusServiceUnavailable,
			wantMsg: []string{"the outcome is unknown: the instance is not deleted for now",
				"if the broker deprovisioned it, lockstep deletes the instance"},
			wantCalls: map[fakebroker.Op]int{fakebroker.OpDeprovision: 1, fakebroker.OpInstanceLastOperation: 1},
			wantPhase: v1alpha1.PhaseInProgress,
		},
		{
			name: "changed serviceName is refused alone, and the other errors are still reported", op: admissionv1.Update,
			old: instance("small", ""), new: instance("small", `{"storageGB": 0}`, func(si *v1alpha1.ServiceInstance) { si.Spec.ServiceName = "queue" }),
			wantCode: 422, wantMsg: []string{"spec.serviceName", "spec.parameters.storageGB"},
			wantCalls: map[fakebroker.Op]int{},
		},
		{
			name: "delete deprovisions", op: admissionv1.Delete, old: instance("small", ""),
			script:    func(b *fakebroker.Broker) { b.PutInstance(existing) },
			wantCalls: map[fakebroker.Op]int{fakebroker.OpDeprovision: 1},
		},
		{
			name: "delete of an instance the broker forgot is allowed", op: admissionv1.Delete, old: instance("small", ""),
			wantCalls: map[fakebroker.Op]int{fakebroker.OpDeprovision: 1},
		},
		{
			name: "delete refused", op: admissionv1.Delete, old: instance("small", ""),
			script: func(b *fakebroker.Broker) {
				b.Script(fakebroker.OpDeprovision, fakebroker.Respond{Status: 400, Description: "protected"})
			},
			wantCode: 400, wantMsg: []string{`broker "acme" refused to deprovision instance "db": "protected" (HTTP 400); the instance stays as it was (no deletion was started)`},
			wantCalls: map[fakebroker.Op]int{fakebroker.OpDeprovision: 1},
		},
		{
			name: "delete with bindings", op: admissionv1.Delete, old: instance("small", ""),
			objects: []runtime.Object{
				&v1alpha1.ServiceBinding{ObjectMeta: metav1.ObjectMeta{Name: "b2", Namespace: "team"}, Spec: v1alpha1.ServiceBindingSpec{InstanceName: "db"}},
				&v1alpha1.ServiceBinding{ObjectMeta: metav1.ObjectMeta{Name: "b1", Namespace: "team"}, Spec: v1alpha1.ServiceBindingSpec{InstanceName: "db"}},
				&v1alpha1.ServiceBinding{ObjectMeta: metav1.ObjectMeta{Name: "other", Namespace: "team"}, Spec: v1alpha1.ServiceBindingSpec{InstanceName: "cache"}},
			},
			wantCode: http.StatusConflict, wantMsg: []string{`instance "db" still has 2 binding(s): b1, b2`, "kubectl annotate servicebinding b1 b2 -n team lockstep.dev/reconcile-policy=detach-on-delete"},
			wantCalls: map[fakebroker.Op]int{},
		},
		{
			name: "delete with its ServiceBroker gone", op: admissionv1.Delete,
			old:      instance("small", "", func(si *v1alpha1.ServiceInstance) { si.Spec.BrokerName = "gone" }),
			wantCode: http.StatusConflict,
			wantMsg: []string{`instance "db" cannot be deleted: no ServiceBroker named "gone" exists, so it cannot be deprovisioned at its broker; ` +
				`the instance stays as it was (no deletion was started); recreate ServiceBroker "gone" with the URL of the broker that holds the instance, then delete again; ` +
				`or to delete it without the broker (which then keeps what it holds): kubectl annotate serviceinstance db -n team lockstep.dev/reconcile-policy=detach-on-delete, then delete again`},
			wantCalls: map[fakebroker.Op]int{},
		},
		{
			name: "delete with a plan the catalog does not know", op: admissionv1.Delete, old: instance("nope", ""),
			wantCode:  http.StatusConflict,
			wantMsg:   []string{`instance "db" cannot be deleted: broker "acme": `, `"nope"`, "the deprovision must name the instance's service and plan", "no deletion was started"},
			wantCalls: map[fakebroker.Op]int{},
		},
		{
			name: "dry-run delete calls nobody", op: admissionv1.Delete, old: instance("small", ""), dryRun: true,
			wantCalls: map[fakebroker.Op]int{},
		},
		{
			name: "broker answering garbage", op: admissionv1.Create, new: instance("small", ""),
			script: func(b *fakebroker.Broker) {
				b.Script(fakebroker.OpProvision, fakebroker.Respond{Status: 201, Malformed: true})
			},
			wantCode: http.StatusServiceUnavailable, wantMsg: []string{"malformed", "the outcome is unknown: the instance is not created"},
			wantCalls: map[fakebroker.Op]int{fakebroker.OpProvision: 1},
			wantPhase: v1alpha1.PhaseOrphaned, // a 201 with a garbage body may have created it: orphan mitigation
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, tt.objects...)
			if tt.script != nil {
				tt.script(h.broker)
			}
			warnings, err := h.admit(tt.op, tt.old, tt.new, tt.dryRun)
			if tt.wantCode == 0 {
				require.NoError(t, err)
			} else {
				require.Error(t, err)
				var status apierrors.APIStatus
				require.ErrorAs(t, err, &status)
				assert.Equal(t, tt.wantCode, status.Status().Code, err.Error())
				for _, m := range tt.wantMsg {
					assert.Contains(t, err.Error(), m)
				}
			}
			if tt.wantWarn != "" {
				assert.Contains(t, warnings, tt.wantWarn)
			}
			got := map[fakebroker.Op]int{}
			for _, c := range h.broker.Calls() {
				got[c.Op]++
			}
			assert.Equal(t, tt.wantCalls, got)
			h.assertJournal(t, len(got) > 0, tt.wantCode == 0, tt.wantPhase)
		})
	}
}

// assertJournal checks the operation record: one, written before the
// broker was called, when the broker was called; none otherwise.
func (h *harness) assertJournal(t *testing.T, called, allowed bool, phase v1alpha1.OperationPhase) {
	t.Helper()
	holder, err := h.leases.Holder(context.Background(), journal.Key{Kind: "ServiceInstance", Namespace: "team", Name: "db", ExternalID: "ext-1"})
	require.NoError(t, err)
	if !allowed && phase == "" {
		assert.Nil(t, holder, "a refusal releases the lock at once")
	}
	t.Helper()
	var ops v1alpha1.BrokerOperationList
	require.NoError(t, h.client.List(context.Background(), &ops))
	if !called {
		assert.Empty(t, ops.Items, "no broker call, no operation record")
		return
	}
	require.Len(t, ops.Items, 1)
	op := ops.Items[0]
	assert.Equal(t, "alice", op.Spec.Requester.Username)
	if allowed && phase == "" {
		// The broker's success, recorded Committed at once when the
		// cache already holds what the API server persisted.
		assert.Contains(t, []v1alpha1.OperationPhase{v1alpha1.PhaseSucceeded, v1alpha1.PhaseCommitted}, op.Status.Phase)
		return
	}
	if !allowed {
		assert.NotEmpty(t, op.Status.Description)
	}
	want := phase
	if want == "" {
		want = v1alpha1.PhaseFailed
	}
	assert.Equal(t, want, op.Status.Phase)
}

func TestInstanceValidatorSendsWhatTheBrokerNeeds(t *testing.T) {
	h := newHarness(t)
	h.broker.PutInstance(fakebroker.Instance{ID: "ext-1", ServiceID: fakebroker.ServiceDBID, PlanID: fakebroker.PlanSmallID})
	_, err := h.admit(admissionv1.Update, instance("small", `{"region":"eu","storageGB":1}`), instance("large", `{"region":"eu","storageGB":2}`), false)
	require.NoError(t, err)

	c, ok := h.broker.LastCall(fakebroker.OpUpdate)
	require.True(t, ok)
	assert.Equal(t, fakebroker.PlanLargeID, c.JSON["plan_id"])
	where := osbapi.Context{Namespace: "team"}
	assert.Equal(t, map[string]any{"service_id": fakebroker.ServiceDBID, "plan_id": fakebroker.PlanSmallID,
		"organization_id": where.OrganizationGUID(), "space_id": where.SpaceGUID()}, c.JSON["previous_values"])
	assert.Equal(t, map[string]any{"platform": "kubernetes", "namespace": "team", "instance_name": "db"}, c.JSON["context"],
		"an update carries the instance's context, as a provision does")
	assert.Equal(t, map[string]any{"storageGB": float64(2)}, c.JSON["parameters"], "create-only parameters are not sent on update")
	assert.NotEmpty(t, c.Header.Get(osbapi.HeaderRequestIdentity))

	_, err = h.admit(admissionv1.Create, nil, instance("small", `{"region":"eu","storageGB":1}`, func(si *v1alpha1.ServiceInstance) {
		si.Name, si.Spec.ExternalID = "db2", "ext-2"
	}), false)
	require.NoError(t, err)
	c, ok = h.broker.LastCall(fakebroker.OpProvision)
	require.True(t, ok)
	assert.Equal(t, where.OrganizationGUID(), c.JSON["organization_guid"], "required by the specification")
	assert.Equal(t, where.SpaceGUID(), c.JSON["space_guid"], "required by the specification")
}

func TestInstancePlanChangeIsFollowedWithThePlanFromBefore(t *testing.T) {
	h := newHarness(t)
	h.broker.PutInstance(fakebroker.Instance{ID: "ext-1", ServiceID: fakebroker.ServiceDBID, PlanID: fakebroker.PlanSmallID})
	h.broker.Script(fakebroker.OpUpdate, fakebroker.Respond{Async: &fakebroker.Async{InProgressPolls: 1}})
	_, err := h.admit(admissionv1.Update, instance("small", `{"region":"eu","storageGB":1}`), instance("large", `{"region":"eu","storageGB":1}`), false)
	require.NoError(t, err)

	polls := h.broker.Calls(fakebroker.OpInstanceLastOperation)
	require.NotEmpty(t, polls)
	for _, p := range polls {
		assert.Equal(t, fakebroker.PlanSmallID, p.Query.Get("plan_id"), "last_operation after an update names the plan from before it")
	}
	records := h.records(t)
	require.Len(t, records, 1)
	assert.Equal(t, fakebroker.PlanLargeID, records[0].Spec.PlanID)
	assert.Equal(t, fakebroker.PlanSmallID, records[0].Spec.PreviousPlanID, "the reconciler follows it with the plan from before too")
}

func TestInstanceLockRejectsAConcurrentChange(t *testing.T) {
	h := newHarness(t)
	h.broker.Script(fakebroker.OpProvision, fakebroker.Respond{Async: &fakebroker.Async{InProgressPolls: 1 << 20, ProgressDescription: "creating"}})
	h.validator.Budget = 2 * time.Second

	warnings, err := h.admit(admissionv1.Create, nil, instance("small", ""), false)
	require.NoError(t, err, "a create still running at the budget is allowed")
	require.Len(t, warnings, 1)
	assert.Contains(t, warnings[0], `broker "acme" is still working to provision instance "db"`)
	assert.Contains(t, warnings[0], "creating")

	_, err = h.admit(admissionv1.Update, instance("small", ""), instance("large", ""), false)
	require.Error(t, err)
	assert.True(t, apierrors.IsConflict(err))
	assert.Contains(t, err.Error(), `another change of instance "db" is in flight at the broker: provision by "alice"`)
	assert.Zero(t, h.broker.Count(fakebroker.OpUpdate), "the second change never reached the broker")
	assert.Len(t, h.records(t), 1, "the second change's record, written with the lock it did not get, is deleted")
}

func TestInstanceDeleteStillRunningIsRejectedAndLeftToTheReconciler(t *testing.T) {
	h := newHarness(t)
	h.broker.PutInstance(fakebroker.Instance{ID: "ext-1", ServiceID: fakebroker.ServiceDBID, PlanID: fakebroker.PlanSmallID})
	h.broker.Script(fakebroker.OpDeprovision, fakebroker.Respond{Async: &fakebroker.Async{InProgressPolls: 1 << 20}})
	h.validator.Budget = 2 * time.Second

	_, err := h.admit(admissionv1.Delete, instance("small", ""), nil, false)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "the instance stays until the broker finishes, then lockstep deletes it")

	var ops v1alpha1.BrokerOperationList
	require.NoError(t, h.client.List(context.Background(), &ops))
	require.Len(t, ops.Items, 1)
	assert.Equal(t, v1alpha1.PhaseInProgress, ops.Items[0].Status.Phase, "the operations reconciler follows it")
	assert.NotEmpty(t, ops.Items[0].Status.OperationKey)
	holder, err := h.leases.Holder(context.Background(), journal.Key{Kind: "ServiceInstance", Namespace: "team", Name: "db", ExternalID: "ext-1"})
	require.NoError(t, err)
	require.NotNil(t, holder, "the lock stays with the running operation")
	assert.Equal(t, ops.Items[0].Name, holder.Record)
}
