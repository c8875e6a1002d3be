package admission

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionv1 "k8s.io/api/admission/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/lockstep-dev/lockstep/api/v1alpha1"
	"github.com/lockstep-dev/lockstep/internal/broker/fakebroker"
)

const lockstepUser = "system:serviceaccount:lockstep:lockstep"

var instancesResource = schema.GroupVersionResource{Group: v1alpha1.GroupVersion.Group, Version: v1alpha1.GroupVersion.Version, Resource: "serviceinstances"}

// dryRuns is a dynamic client that records the preflights it gets and
// answers each with answer.
func dryRuns(answer error) (*dynamicfake.FakeDynamicClient, *[]clienttesting.Action) {
	c := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{instancesResource: "ServiceInstanceList"})
	var got []clienttesting.Action
	c.PrependReactor("*", "*", func(a clienttesting.Action) (bool, runtime.Object, error) {
		got = append(got, a)
		return true, nil, answer
	})
	return c, &got
}

// admissionRequest is the admission request of op on the instances old and new
// by alice, with their raw objects, as the API server sends it.
func admissionRequest(t *testing.T, op admissionv1.Operation, old, new Instance) admission.Request {
	t.Helper()
	raw := func(o Instance) runtime.RawExtension {
		if o == nil {
			return runtime.RawExtension{}
		}
		o.GetObjectKind().SetGroupVersionKind(v1alpha1.GroupVersion.WithKind("ServiceInstance"))
		b, err := json.Marshal(o)
		require.NoError(t, err)
		return runtime.RawExtension{Raw: b}
	}
	name := ""
	if new != nil {
		name = new.GetName()
	} else {
		name = old.GetName()
	}
	return admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{
		Operation: op, DryRun: ptr.To(false), Namespace: "team", Name: name,
		Resource: metav1.GroupVersionResource(instancesResource),
		UserInfo: authenticationv1.UserInfo{Username: "alice"},
		Object:   raw(new), OldObject: raw(old),
	}}
}

// The preflight tries a change as a dry run where the cluster or the
// broker turns it on, before the broker is called: a refusal there is the
// answer, with nothing sent to the broker, nothing locked or journaled; a
// dry run that cannot judge (a webhook without dry-run support, lockstep
// without the right, the API server busy) lets the change go on with a
// warning.
func TestPreflight(t *testing.T) {
	webhookDenies := apierrors.NewForbidden(instancesResource.GroupResource(), "db",
		errors.New(`admission webhook "deny.policy.example" denied the request: databases need an owner label`))
	webhookDenies.ErrStatus.Message = `admission webhook "deny.policy.example" denied the request: databases need an owner label`
	quotaRefuses := apierrors.NewForbidden(instancesResource.GroupResource(), "db",
		errors.New("exceeded quota: q, requested: count/serviceinstances.lockstep.dev=1, used: count/serviceinstances.lockstep.dev=1, limited: count/serviceinstances.lockstep.dev=1"))
	webhookDown := apierrors.NewInternalError(errors.New(`Internal error occurred: failed calling webhook "deny.policy.example": connection refused`))
	webhookDown.ErrStatus.Message = `Internal error occurred: failed calling webhook "deny.policy.example": connection refused`
	noDryRun := apierrors.NewBadRequest(`admission webhook "audit.example" does not support dry run`)
	noRight := apierrors.NewForbidden(instancesResource.GroupResource(), "db",
		fmt.Errorf(`User %q cannot create resource "serviceinstances" in API group "lockstep.dev" in the namespace "team"`, lockstepUser))
	busy := apierrors.NewTooManyRequests("the API server is busy", 1)

	tests := []struct {
		name      string
		on        bool  // LOCKSTEP_PREFLIGHT
		broker    *bool // the ServiceBroker's spec.preflight
		op        admissionv1.Operation
		answer    error // the dry run's
		wantDry   string
		wantCode  int32 // 0: allowed
		wantMsg   string
		wantWarn  string
		wantCalls map[fakebroker.Op]int
	}{
		{name: "off: no dry run", op: admissionv1.Create, wantCalls: map[fakebroker.Op]int{fakebroker.OpProvision: 1}},
		{name: "on, allowed: the broker is called after the dry run", on: true, op: admissionv1.Create, wantDry: "create",
			wantCalls: map[fakebroker.Op]int{fakebroker.OpProvision: 1}},
		{name: "the broker turns it off", on: true, broker: ptr.To(false), op: admissionv1.Create, answer: webhookDenies,
			wantCalls: map[fakebroker.Op]int{fakebroker.OpProvision: 1}},
		{name: "the broker turns it on", broker: ptr.To(true), op: admissionv1.Create, answer: webhookDenies, wantDry: "create",
			wantCode: http.StatusForbidden,
			wantMsg: `admission webhook "deny.policy.example" denied the request: databases need an owner label; lockstep tried this create first as a dry run ` +
				`(its preflight), and the API server refused it: nothing was created and the broker was not called`},
		{name: "a quota refuses", on: true, op: admissionv1.Create, answer: quotaRefuses, wantDry: "create", wantCode: http.StatusForbidden,
			wantMsg: `exceeded quota: q, requested: count/serviceinstances.lockstep.dev=1`},
		{name: "a webhook that cannot be called refuses, as it would the change", on: true, op: admissionv1.Create, answer: webhookDown, wantDry: "create",
			wantCode: http.StatusInternalServerError, wantMsg: `failed calling webhook "deny.policy.example": connection refused; lockstep tried this create first`},
		{name: "a webhook without dry-run support cannot judge", on: true, op: admissionv1.Create, answer: noDryRun, wantDry: "create",
			wantWarn:  `lockstep could not try this create first as a dry run (admission webhook "audit.example" does not support dry run)`,
			wantCalls: map[fakebroker.Op]int{fakebroker.OpProvision: 1}},
		{name: "lockstep without the right cannot judge", on: true, op: admissionv1.Create, answer: noRight, wantDry: "create",
			wantWarn: "lockstep could not try this create first", wantCalls: map[fakebroker.Op]int{fakebroker.OpProvision: 1}},
		{name: "the API server busy cannot judge", on: true, op: admissionv1.Create, answer: busy, wantDry: "create",
			wantWarn: "lockstep could not try this create first", wantCalls: map[fakebroker.Op]int{fakebroker.OpProvision: 1}},
		{name: "an update refused", on: true, op: admissionv1.Update, answer: webhookDenies, wantDry: "update", wantCode: http.StatusForbidden,
			wantMsg: "lockstep tried this change first as a dry run (its preflight), and the API server refused it: nothing was changed and the broker was not called"},
		{name: "an update allowed", on: true, op: admissionv1.Update, wantDry: "update", wantCalls: map[fakebroker.Op]int{fakebroker.OpUpdate: 1}},
		{name: "a delete refused", on: true, op: admissionv1.Delete, answer: webhookDenies, wantDry: "delete", wantCode: http.StatusForbidden,
			wantMsg: "lockstep tried this delete first as a dry run (its preflight), and the API server refused it: nothing was deleted and the broker was not called"},
		{name: "a delete allowed", on: true, op: admissionv1.Delete, wantDry: "delete", wantCalls: map[fakebroker.Op]int{fakebroker.OpDeprovision: 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t)
			if tt.op != admissionv1.Create {
				h.broker.PutInstance(fakebroker.Instance{ID: "ext-1", ServiceID: fakebroker.ServiceDBID, PlanID: fakebroker.PlanSmallID})
			}
			if tt.broker != nil {
				var sb v1alpha1.ServiceBroker
				require.NoError(t, h.client.Get(context.Background(), client.ObjectKey{Name: "acme"}, &sb))
				sb.Spec.Preflight = tt.broker
				require.NoError(t, h.client.Update(context.Background(), &sb))
			}
			dyn, got := dryRuns(tt.answer)
			d := h.deps
			d.Preflight = PreflightOptions{On: tt.on, Client: dyn, Self: lockstepUser}
			h.validator = NewInstanceValidator(d, nil)

			old, new := instance("small", ""), instance("small", `{"storageGB": 3}`)
			switch tt.op {
			case admissionv1.Create:
				old = nil
			case admissionv1.Delete:
				new = nil
			}
			ctx := admission.NewContextWithRequest(context.Background(), admissionRequest(t, tt.op, old, new))
			var (
				warnings admission.Warnings
				err      error
			)
			switch tt.op {
			case admissionv1.Create:
				warnings, err = h.validator.ValidateCreate(ctx, new)
			case admissionv1.Update:
				warnings, err = h.validator.ValidateUpdate(ctx, old, new)
			default:
				warnings, err = h.validator.ValidateDelete(ctx, old)
			}
			h.answers.Wait()

			if tt.wantDry == "" {
				assert.Empty(t, *got, "no dry run")
			} else if assert.Len(t, *got, 1, "one dry run") {
				a := (*got)[0]
				assert.Equal(t, tt.wantDry, a.GetVerb())
				assert.Equal(t, instancesResource, a.GetResource())
				assert.Equal(t, "team", a.GetNamespace())
				switch a := a.(type) {
				case clienttesting.CreateActionImpl:
					assert.Equal(t, []string{metav1.DryRunAll}, a.CreateOptions.DryRun)
					assert.Equal(t, FieldManager, a.CreateOptions.FieldManager)
					obj := a.GetObject().(*unstructured.Unstructured)
					assert.Empty(t, obj.GetUID(), "as the request has it before the API server sets it")
					assert.Empty(t, obj.GetResourceVersion())
				case clienttesting.UpdateActionImpl:
					assert.Equal(t, []string{metav1.DryRunAll}, a.UpdateOptions.DryRun)
				case clienttesting.DeleteActionImpl:
					assert.Equal(t, []string{metav1.DryRunAll}, a.DeleteOptions.DryRun)
					assert.Equal(t, "db", a.GetName())
					require.NotNil(t, a.DeleteOptions.Preconditions)
					assert.Equal(t, old.GetUID(), *a.DeleteOptions.Preconditions.UID, "the object being deleted, not another of its name")
				}
			}
			calls := map[fakebroker.Op]int{}
			for _, c := range h.broker.Calls() {
				if c.Op != fakebroker.OpCatalog && c.Op != fakebroker.OpGetInstance {
					calls[c.Op]++
				}
			}
			if tt.wantCode == 0 {
				require.NoError(t, err)
				if tt.wantCalls == nil {
					tt.wantCalls = map[fakebroker.Op]int{}
				}
				assert.Equal(t, tt.wantCalls, calls)
				if tt.wantWarn != "" {
					assert.True(t, containsFragment(warnings, tt.wantWarn), "warnings %q name %q", warnings, tt.wantWarn)
				} else {
					assert.Empty(t, warnings)
				}
				return
			}
			require.Error(t, err)
			var status apierrors.APIStatus
			require.ErrorAs(t, err, &status)
			assert.Equal(t, tt.wantCode, status.Status().Code)
			assert.Contains(t, err.Error(), tt.wantMsg)
			assert.Empty(t, calls, "the broker is not called")
			var leases coordinationv1.LeaseList
			require.NoError(t, h.client.List(context.Background(), &leases))
			assert.Empty(t, leases.Items, "no lock taken")
			var ops v1alpha1.BrokerOperationList
			require.NoError(t, h.client.List(context.Background(), &ops))
			assert.Empty(t, ops.Items, "nothing journaled")
		})
	}
}

// containsFragment reports whether one of warnings contains fragment.
func containsFragment(warnings admission.Warnings, fragment string) bool {
	for _, w := range warnings {
		if strings.Contains(w, fragment) {
			return true
		}
	}
	return false
}

// lockstep's own dry run of a change (its preflight) is allowed at once by
// its validating webhooks, before anything is decoded or checked; a dry
// run by anyone else, and a change by lockstep that is not a dry run, go
// through the chain.
func TestOwnPreflightIsAllowedAtOnce(t *testing.T) {
	tests := []struct {
		name    string
		user    string
		dryRun  bool
		manager string
		allowed bool
	}{
		{name: "lockstep's dry run", user: lockstepUser, dryRun: true, manager: FieldManager, allowed: true},
		{name: "someone else's dry run", user: "alice", dryRun: true, manager: FieldManager},
		{name: "lockstep's change", user: lockstepUser, manager: FieldManager},
		{name: "a dry run as lockstep that is not its preflight", user: lockstepUser, dryRun: true, manager: "kubectl"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t)
			d := h.deps
			d.Preflight = PreflightOptions{Self: lockstepUser}
			webhook := InstanceValidatorWebhook(NewInstanceValidator(d, nil))
			req := admissionRequest(t, admissionv1.Create, nil, instance("no-such-plan", ""))
			req.UserInfo.Username, req.DryRun = tt.user, &tt.dryRun
			req.Options.Raw = []byte(`{"fieldManager":"` + tt.manager + `"}`)
			resp := webhook.Handle(context.Background(), req)
			assert.Equal(t, tt.allowed, resp.Allowed, "%+v", resp.Result)
			assert.Empty(t, h.broker.Calls(fakebroker.OpProvision))
		})
	}
}
