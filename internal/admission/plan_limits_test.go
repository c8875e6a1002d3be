package admission

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"

	"github.com/lockstep-dev/lockstep/api/v1alpha1"
	"github.com/lockstep-dev/lockstep/internal/access"
	"github.com/lockstep-dev/lockstep/internal/broker/fakebroker"
	"github.com/lockstep-dev/lockstep/internal/journal"
)

// another is an instance of namespace team other than the one the tests
// admit (db), on plan.
func another(name, plan string, mutate ...func(*v1alpha1.ServiceInstance)) *v1alpha1.ServiceInstance {
	return instance(plan, "", append([]func(*v1alpha1.ServiceInstance){func(si *v1alpha1.ServiceInstance) {
		si.Name, si.UID, si.Spec.ExternalID = name, types.UID("uid-"+name), "ext-"+name
	}}, mutate...)...)
}

// typedInstances is a fixed list of the models of typed objects.
type typedInstances []*v1alpha1.ServiceInstance

func (t typedInstances) InstancesIn(namespace string) []*v1alpha1.ServiceInstance {
	var out []*v1alpha1.ServiceInstance
	for _, si := range t {
		if si.Namespace == namespace {
			out = append(out, si)
		}
	}
	return out
}

// A provision, an adoption or a plan change that would take the namespace
// over a per-plan limit is refused before the broker is called, naming
// the limit, what it counts and the count; what stays within the limits
// goes through.
func TestPlanLimits(t *testing.T) {
	rules := []v1alpha1.AccessRule{
		{Name: "everyone", Services: []string{"*"}, Plans: []string{"*"}, Limits: []v1alpha1.PlanLimit{
			{Name: "paid", NotFree: true, MaxInstances: 1},
			{Name: "small", Plans: []string{"small"}, MaxInstances: 2},
		}},
		{Name: "team-a", NamespaceSelector: metav1.LabelSelector{MatchLabels: map[string]string{"team": "a"}}, Services: []string{"db"}, Plans: []string{"*"},
			Limits: []v1alpha1.PlanLimit{{Name: "none", MaxInstances: 0}}},
	}
	paidFull := `plan "large" of service "db" (broker "acme") is limited in namespace "team": limit "paid" of access rule "everyone" allows 1 instance(s) of its plans ` +
		`(plans not free among "*" of services "*"), and the namespace holds 1; delete one of them, or ask a cluster administrator to raise the limit ` +
		`(spec.access of ServiceBroker "acme"); kubectl lockstep marketplace shows the namespace's limits and use`
	deleting := func(si *v1alpha1.ServiceInstance) {
		si.DeletionTimestamp = &metav1.Time{Time: time.Now()}
		si.Finalizers = []string{v1alpha1.Finalizer}
	}
	elsewhere := func(si *v1alpha1.ServiceInstance) { si.Namespace = "other" }
	otherBroker := func(si *v1alpha1.ServiceInstance) { si.Spec.BrokerName = "other" }
	tests := []struct {
		name     string
		team     string
		existing []runtime.Object
		typed    typedInstances
		inFlight *v1alpha1.ServiceInstance // another replica's provision, by its lock
		op       admissionv1.Operation
		old, new Instance
		dryRun   bool
		wantMsg  string
		wantOp   fakebroker.Op
	}{
		{name: "within the limit", op: admissionv1.Create, new: instance("large", ""), wantOp: fakebroker.OpProvision},
		{name: "at the limit: refused", existing: []runtime.Object{another("a", "large")}, op: admissionv1.Create, new: instance("large", ""),
			wantMsg: paidFull + "; nothing was created and the broker was not called"},
		{name: "a dry run at the limit is refused too", existing: []runtime.Object{another("a", "large")}, op: admissionv1.Create, new: instance("large", ""), dryRun: true,
			wantMsg: paidFull},
		{name: "an adoption is a create", existing: []runtime.Object{another("a", "large")}, op: admissionv1.Create,
			new: instance("large", "", withAnnotations(v1alpha1.AnnotationAdopt, "true")), wantMsg: paidFull},
		{name: "a free plan the paid limit does not count", existing: []runtime.Object{another("a", "large")}, op: admissionv1.Create, new: instance("small", ""),
			wantOp: fakebroker.OpProvision},
		{name: "the small limit counts its own plan", existing: []runtime.Object{another("a", "small"), another("b", "small")}, op: admissionv1.Create, new: instance("small", ""),
			wantMsg: `limit "small" of access rule "everyone" allows 2 instance(s) of its plans (plans "small" of services "*"), and the namespace holds 2`},
		{name: "a plan change into a limited plan counts", existing: []runtime.Object{another("a", "large")}, op: admissionv1.Update,
			old: instance("small", ""), new: instance("large", ""),
			wantMsg: paidFull + `; the instance keeps plan "small" and the broker was not called`},
		{name: "a plan change within what a limit counts already does not", existing: []runtime.Object{another("a", "small")}, op: admissionv1.Update,
			old: instance("small", ""), new: instance("small", `{"storageGB": 3}`), wantOp: fakebroker.OpUpdate},
		{name: "a parameter update at the limit goes on", existing: []runtime.Object{another("a", "large")}, op: admissionv1.Update,
			old: instance("large", ""), new: instance("large", `{"storageGB": 3}`), wantOp: fakebroker.OpUpdate},
		{name: "a delete at the limit goes on", existing: []runtime.Object{another("a", "large")}, op: admissionv1.Delete, old: instance("large", ""),
			wantOp: fakebroker.OpDeprovision},
		{name: "an instance being deleted is not counted", existing: []runtime.Object{another("a", "large", deleting)}, op: admissionv1.Create, new: instance("large", ""),
			wantOp: fakebroker.OpProvision},
		{name: "nor one of another namespace", existing: []runtime.Object{another("a", "large", elsewhere)}, op: admissionv1.Create, new: instance("large", ""),
			wantOp: fakebroker.OpProvision},
		{name: "nor one of another broker", existing: []runtime.Object{another("a", "large", otherBroker)}, op: admissionv1.Create, new: instance("large", ""),
			wantOp: fakebroker.OpProvision},
		{name: "an object of a typed kind counts", typed: typedInstances{another("a", "large")}, op: admissionv1.Create, new: instance("large", ""),
			wantMsg: paidFull},
		{name: "a provision in flight through another replica counts", inFlight: another("a", "large"), op: admissionv1.Create, new: instance("large", ""),
			wantMsg: paidFull},
		{name: "the limits of every rule that selects the namespace apply", team: "a", op: admissionv1.Create, new: instance("small", ""),
			wantMsg: `limit "none" of access rule "team-a" allows 0 instance(s) of its plans (plans "*" of services "db"), and the namespace holds 0`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			objects := append([]runtime.Object{&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team", Labels: map[string]string{"team": tt.team}}}}, tt.existing...)
			h := newHarness(t, objects...)
			if tt.op != admissionv1.Create {
				plan := fakebroker.PlanSmallID
				if tt.old.Spec.PlanName == "large" {
					plan = fakebroker.PlanLargeID
				}
				h.broker.PutInstance(fakebroker.Instance{ID: "ext-1", ServiceID: fakebroker.ServiceDBID, PlanID: plan})
			}
			if tt.inFlight != nil {
				holdLock(t, h, tt.inFlight)
			}
			d := h.deps
			d.AccessRules = access.NewStore()
			d.AccessRules.Set("acme", access.Compile("acme", rules))
			d.TypedInstances = tt.typed
			h.validator = NewInstanceValidator(d, nil)
			_, err := h.admit(tt.op, tt.old, tt.new, tt.dryRun)
			changes := h.broker.Count(fakebroker.OpProvision, fakebroker.OpUpdate, fakebroker.OpDeprovision)
			if tt.wantMsg == "" {
				require.NoError(t, err)
				assert.Equal(t, 1, h.broker.Count(tt.wantOp))
				assert.Equal(t, 1, changes)
				return
			}
			require.Error(t, err)
			assert.True(t, apierrors.IsForbidden(err), "403: %v", err)
			assert.Contains(t, err.Error(), tt.wantMsg)
			assert.Zero(t, changes, "the broker is not called")
		})
	}
}

// holdLock takes the lock of a provision of si, as another replica
// carrying it out would hold it.
func holdLock(t *testing.T, h *harness, si *v1alpha1.ServiceInstance) {
	t.Helper()
	rec := &v1alpha1.BrokerOperation{Spec: v1alpha1.BrokerOperationSpec{
		Target:     v1alpha1.OperationTarget{Kind: v1alpha1.KindServiceInstance, Name: si.Name, Namespace: si.Namespace, UID: si.UID, ExternalID: si.Spec.ExternalID},
		BrokerName: "acme", ServiceID: fakebroker.ServiceDBID, PlanID: fakebroker.PlanLargeID, Verb: v1alpha1.VerbProvision,
	}}
	rec.Name = "op-" + si.Name
	_, ok, err := h.leases.TryAcquire(context.Background(), journal.KeyOf(v1alpha1.KindServiceInstance, si),
		&journal.Operation{ID: "op", Verb: v1alpha1.VerbProvision, User: "ann", Started: time.Now(), Record: rec.Name, Carried: rec})
	require.NoError(t, err)
	require.True(t, ok)
}

// Creates racing through one replica for the last unit of a limit: one
// reaches the broker.
func TestPlanLimitsConcurrentCreatesTakeTheLastUnitOnce(t *testing.T) {
	h := newHarness(t, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team"}}, another("a", "large"))
	d := h.deps
	d.AccessRules = access.NewStore()
	d.AccessRules.Set("acme", access.Compile("acme", []v1alpha1.AccessRule{{Name: "everyone", Services: []string{"*"}, Plans: []string{"*"},
		Limits: []v1alpha1.PlanLimit{{Name: "large", Plans: []string{"large"}, MaxInstances: 2}}}}))
	h.validator = NewInstanceValidator(d, nil)
	var wg sync.WaitGroup
	errs := make([]error, 8)
	for i := range errs {
		wg.Go(func() {
			_, errs[i] = h.admitNoWait(admissionv1.Create, nil, another(string(rune('b'+i)), "large"), false)
		})
	}
	wg.Wait()
	h.answers.Wait()
	allowed := 0
	for _, err := range errs {
		if err == nil {
			allowed++
			continue
		}
		assert.True(t, apierrors.IsForbidden(err), "%v", err)
	}
	assert.Equal(t, 1, allowed)
	assert.Equal(t, 1, h.broker.Count(fakebroker.OpProvision))
}
