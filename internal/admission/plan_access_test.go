package admission

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/lockstep-dev/lockstep/api/v1alpha1"
	"github.com/lockstep-dev/lockstep/internal/access"
	"github.com/lockstep-dev/lockstep/internal/broker/fakebroker"
)

// A provision, a plan change or a bind outside the broker's access rules
// is refused before the broker is called, naming the rules; parameter
// updates and deletes of an instance on a plan that is not open go on.
func TestPlanAccess(t *testing.T) {
	rules := []v1alpha1.AccessRule{
		{Name: "team-a", NamespaceSelector: metav1.LabelSelector{MatchLabels: map[string]string{"team": "a"}}, Services: []string{"*"}, Plans: []string{"*"}},
		{Name: "everyone-small", Services: []string{"db"}, Plans: []string{"small"}},
	}
	large := instance("large", `{"storageGB": 1}`)
	held := fakebroker.Instance{ID: "ext-1", ServiceID: fakebroker.ServiceDBID, PlanID: fakebroker.PlanLargeID}
	refusal := `plan "large" of service "db" (broker "acme") is not open to namespace "team": access rule "team-a" opens the plan only to namespaces matching team=a; ` +
		`access rule "everyone-small" selects it but opens only plans "small" of services "db"`
	tests := []struct {
		name      string
		team      string
		op        admissionv1.Operation
		old, new  Instance
		bind      bool
		dryRun    bool
		wantMsg   string
		wantCalls map[fakebroker.Op]int
	}{
		{name: "provision of a plan that is not open: refused", team: "b", op: admissionv1.Create, new: large,
			wantMsg: `spec.planName: Forbidden: ` + refusal},
		{name: "a dry run is refused too", team: "b", op: admissionv1.Create, new: large, dryRun: true, wantMsg: refusal},
		{name: "adopting it is using it: refused", team: "b", op: admissionv1.Create, new: instance("large", "", withAnnotations(v1alpha1.AnnotationAdopt, "true")),
			wantMsg: refusal},
		{name: "provision of an open plan", team: "b", op: admissionv1.Create, new: instance("small", ""),
			wantCalls: map[fakebroker.Op]int{fakebroker.OpProvision: 1}},
		{name: "provision in a namespace a rule selects", team: "a", op: admissionv1.Create, new: large,
			wantCalls: map[fakebroker.Op]int{fakebroker.OpProvision: 1}},
		{name: "plan change to a plan that is not open: refused", team: "b", op: admissionv1.Update, old: instance("small", ""), new: instance("large", ""),
			wantMsg: `spec.planName: Forbidden: ` + refusal},
		{name: "parameter update on a plan that is not open: carried out", team: "b", op: admissionv1.Update, old: large, new: instance("large", `{"storageGB": 2}`),
			wantCalls: map[fakebroker.Op]int{fakebroker.OpUpdate: 1}},
		{name: "delete on a plan that is not open: carried out", team: "b", op: admissionv1.Delete, old: large,
			wantCalls: map[fakebroker.Op]int{fakebroker.OpDeprovision: 1}},
		{name: "bind to an instance on a plan that is not open: refused", team: "b", bind: true,
			wantMsg: `spec.instanceName: Forbidden: instance "db" cannot be bound: ` + refusal},
		{name: "bind where it is open", team: "a", bind: true, wantCalls: map[fakebroker.Op]int{fakebroker.OpBind: 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			objects := []runtime.Object{&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team", Labels: map[string]string{"team": tt.team}}}}
			if tt.bind {
				objects = append(objects, large)
			}
			h := newHarness(t, objects...)
			if tt.op != admissionv1.Create {
				h.broker.PutInstance(held)
			}
			d := h.deps
			d.AccessRules = access.NewStore()
			d.AccessRules.Set("acme", access.Compile("acme", rules))
			var err error
			if tt.bind {
				_, err = admitAs(h, NewBindingValidator(d, nil), "alice", admissionv1.Create, nil, binding(""))
			} else {
				v := NewInstanceValidator(d, nil)
				h.validator = v
				_, err = h.admit(tt.op, tt.old, tt.new, tt.dryRun)
			}
			calls := map[fakebroker.Op]int{}
			for _, c := range h.broker.Calls() {
				calls[c.Op]++
			}
			if tt.wantMsg == "" {
				require.NoError(t, err)
				assert.Equal(t, tt.wantCalls, calls)
				return
			}
			require.Error(t, err)
			assert.True(t, apierrors.IsInvalid(err), err.Error())
			assert.Contains(t, err.Error(), tt.wantMsg)
			assert.Empty(t, calls, "the broker is not called")
			assert.Empty(t, h.records(t), "nothing is journaled")
		})
	}
}
