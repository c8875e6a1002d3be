package admission

import (
	"context"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionv1 "k8s.io/api/admission/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/lockstep-dev/lockstep/api/v1alpha1"
	"github.com/lockstep-dev/lockstep/internal/broker/fakebroker"
)

func withAnnotations(kv ...string) func(*v1alpha1.ServiceInstance) {
	return func(si *v1alpha1.ServiceInstance) {
		si.Annotations = map[string]string{}
		for i := 0; i+1 < len(kv); i += 2 {
			si.Annotations[kv[i]] = kv[i+1]
		}
	}
}

// TestReconcilePolicy: the lockstep.dev/reconcile-policy annotation keeps
// the broker out of a request, or refuses what it forbids.
func TestReconcilePolicy(t *testing.T) {
	policy := v1alpha1.AnnotationReconcilePolicy
	existing := fakebroker.Instance{ID: "ext-1", ServiceID: fakebroker.ServiceDBID, PlanID: fakebroker.PlanSmallID}
	tests := []struct {
		name       string
		op         admissionv1.Operation
		old, new   Instance
		dryRun     bool
		asks       int // how often admission is asked for the request; 0 is once
		objects    []runtime.Object
		wantCode   int32
		wantMsg    []string
		wantWarn   string
		wantCalls  int
		wantRecord v1alpha1.Verb // the journal's record, if any
	}{
		{name: "detach-on-delete: deleted without the broker, journaled as a detach", op: admissionv1.Delete,
			old:        instance("small", "", withAnnotations(policy, "detach-on-delete")),
			wantWarn:   `serviceinstance "db" is deleted without its broker (lockstep.dev/reconcile-policy=detach-on-delete): the broker keeps what it holds`,
			wantRecord: v1alpha1.VerbDetach},
		{name: "detach-on-delete asked again for the same delete (the API server re-runs admission after a write conflict): one record", op: admissionv1.Delete,
			old: instance("small", "", withAnnotations(policy, "detach-on-delete")), asks: 2, wantRecord: v1alpha1.VerbDetach,
			wantWarn: "deleted without its broker"},
		{name: "observe: deleted without the broker", op: admissionv1.Delete,
			old: instance("small", "", withAnnotations(policy, "observe")), wantRecord: v1alpha1.VerbDetach,
			wantWarn: `serviceinstance "db" is deleted without its broker (lockstep.dev/reconcile-policy=observe)`},
		{name: "detach-on-delete with its ServiceBroker gone: the way out works", op: admissionv1.Delete,
			old:        instance("small", "", withAnnotations(policy, "detach-on-delete"), func(si *v1alpha1.ServiceInstance) { si.Spec.BrokerName = "gone" }),
			wantRecord: v1alpha1.VerbDetach, wantWarn: "deleted without its broker"},
		{name: "detach-on-delete of an instance with a binding: refused as every delete of one, with the bindings named", op: admissionv1.Delete,
			old: instance("small", "", withAnnotations(policy, "detach-on-delete")), objects: []runtime.Object{binding("")},
			wantCode: http.StatusConflict, wantMsg: []string{`instance "db" still has 1 binding(s): creds; delete them first`,
				"kubectl annotate servicebinding creds -n team lockstep.dev/reconcile-policy=detach-on-delete"}},
		{name: "observe, dry run of a delete of an instance with a binding: refused too", op: admissionv1.Delete, dryRun: true,
			old: instance("small", "", withAnnotations(policy, "observe")), objects: []runtime.Object{binding("")},
			wantCode: http.StatusConflict, wantMsg: []string{`instance "db" still has 1 binding(s)`}},
		{name: "detach-on-delete, dry run: nothing written", op: admissionv1.Delete, dryRun: true,
			old: instance("small", "", withAnnotations(policy, "detach-on-delete"))},
		{name: "detach-on-delete: updates still go to the broker", op: admissionv1.Update,
			old: instance("small", "", withAnnotations(policy, "detach-on-delete")), new: instance("large", "", withAnnotations(policy, "detach-on-delete")),
			wantCalls: 1, wantRecord: v1alpha1.VerbUpdate},
		{name: "manage: the delete deprovisions", op: admissionv1.Delete,
			old: instance("small", "", withAnnotations(policy, "manage")), wantCalls: 1, wantRecord: v1alpha1.VerbDeprovision},
		{name: "observe: a spec change is refused and says how to manage it", op: admissionv1.Update,
			old: instance("small", "", withAnnotations(policy, "observe")), new: instance("large", "", withAnnotations(policy, "observe")),
			wantCode: http.StatusConflict,
			wantMsg: []string{`serviceinstance "db" is observed (lockstep.dev/reconcile-policy=observe): lockstep never changes it at the broker, so its spec cannot change`,
				"kubectl annotate serviceinstance db -n team lockstep.dev/reconcile-policy=manage --overwrite"}},
		{name: "observe: a create must adopt", op: admissionv1.Create, new: instance("small", "", withAnnotations(policy, "observe")),
			wantCode: 422, wantMsg: []string{`metadata.annotations[lockstep.dev/reconcile-policy]`, "also set lockstep.dev/adopt=true and spec.externalID"}},
		{name: "a value that is no policy is refused with the ones there are", op: admissionv1.Delete,
			old:      instance("small", "", withAnnotations(policy, "keep")),
			wantCode: 422, wantMsg: []string{`metadata.annotations[lockstep.dev/reconcile-policy]: Unsupported value: "keep"`, `"detach-on-delete"`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, tt.objects...)
			h.broker.PutInstance(existing)
			warnings, err := h.admit(tt.op, tt.old, tt.new, tt.dryRun)
			for range tt.asks - 1 {
				require.NoError(t, err)
				warnings, err = h.admit(tt.op, tt.old, tt.new, tt.dryRun)
			}
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
				require.Len(t, warnings, 1)
				assert.Contains(t, warnings[0], tt.wantWarn)
			}
			assert.Len(t, h.broker.Calls(), tt.wantCalls, "broker calls")
			var ops v1alpha1.BrokerOperationList
			require.NoError(t, h.client.List(context.Background(), &ops))
			if tt.wantRecord == "" {
				assert.Empty(t, ops.Items)
				return
			}
			require.Len(t, ops.Items, 1)
			assert.Equal(t, tt.wantRecord, ops.Items[0].Spec.Verb)
			assert.Equal(t, "alice", ops.Items[0].Spec.Requester.Username)
			if tt.wantRecord == v1alpha1.VerbDetach {
				assert.Equal(t, v1alpha1.PhaseCommitted, ops.Items[0].Status.Phase, "nothing to follow or undo")
			}
		})
	}
}

// TestDeleteRefusalsNameTheWayOut: every delete the broker cannot carry out
// says how to delete without it.
func TestDeleteRefusalsNameTheWayOut(t *testing.T) {
	way := "kubectl annotate serviceinstance db -n team lockstep.dev/reconcile-policy=detach-on-delete, then delete again"
	for name, respond := range map[string]fakebroker.Respond{
		"refused":     {Status: 400, Description: "protected"},
		"failing":     {Status: 500, Description: "down"},
		"unreachable": {CloseConnection: true},
	} {
		t.Run(name, func(t *testing.T) {
			h := newHarness(t)
			h.broker.Always(fakebroker.OpDeprovision, respond)
			_, err := h.admit(admissionv1.Delete, instance("small", ""), nil, false)
			require.Error(t, err)
			assert.Contains(t, err.Error(), way)
		})
	}
}

// TestDetachedBindingNamesItsBroker: the record of a binding deleted
// without its broker names the broker of its instance.
func TestDetachedBindingNamesItsBroker(t *testing.T) {
	h := newHarness(t, instance("small", ""))
	b := binding("", withBindingAnnotations(map[string]string{v1alpha1.AnnotationReconcilePolicy: string(v1alpha1.PolicyDetachOnDelete)}))
	_, err := h.admitBinding(admissionv1.Delete, b, nil, false)
	require.NoError(t, err)
	records := h.records(t)
	require.Len(t, records, 1)
	assert.Equal(t, v1alpha1.VerbDetach, records[0].Spec.Verb)
	assert.Equal(t, "acme", records[0].Spec.BrokerName)
	assert.Zero(t, h.broker.Count(fakebroker.OpUnbind), "the broker keeps the binding")
}

func withBindingAnnotations(a map[string]string) func(*v1alpha1.ServiceBinding) {
	return func(b *v1alpha1.ServiceBinding) { b.Annotations = a }
}
