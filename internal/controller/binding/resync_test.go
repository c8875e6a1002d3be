package binding

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/lockstep-dev/lockstep/api/v1alpha1"
	"github.com/lockstep-dev/lockstep/internal/broker/fakebroker"
	"github.com/lockstep-dev/lockstep/internal/controller/controllertest"
	"github.com/lockstep-dev/lockstep/internal/controller/resync"
)

type harness struct {
	*controllertest.Harness
}

// newHarness wires the binding controller to a fake API server holding
// objects and a real test broker over HTTP.
func newHarness(t *testing.T, objects ...client.Object) *harness {
	t.Helper()
	h := &harness{Harness: controllertest.NewHarness(t, nil, objects...)}
	h.R = New(h.Config, h.Config.Client)
	return h
}

// resync runs the binding reconciler once it is due: the first pass
// schedules the binding, the second, one interval later, fetches it;
// it returns the binding as the second pass left it.
func (h *harness) resync(t *testing.T) *v1alpha1.ServiceBinding {
	t.Helper()
	key := types.NamespacedName{Namespace: "team", Name: "creds"}
	var b v1alpha1.ServiceBinding
	h.Resync(t, key, &b)
	require.NoError(t, h.Client.Get(context.Background(), key, &b))
	return &b
}

// instance is the bound instance, as the broker confirmed it.
func instance() *v1alpha1.ServiceInstance {
	return &v1alpha1.ServiceInstance{
		ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: "team", UID: "uid-1"},
		Spec:       v1alpha1.ServiceInstanceSpec{BrokerName: "acme", ServiceName: "db", PlanName: "small", ExternalID: "ext-1"},
	}
}

func boundBinding(params string) *v1alpha1.ServiceBinding {
	var p *runtime.RawExtension
	if params != "" {
		p = &runtime.RawExtension{Raw: json.RawMessage(params)}
	}
	return &v1alpha1.ServiceBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "creds", Namespace: "team", UID: "uid-b"},
		Spec:       v1alpha1.ServiceBindingSpec{InstanceName: "db", ExternalID: "bind-1", SecretName: "creds", Parameters: p},
		Status: v1alpha1.ServiceBindingStatus{
			LastOperation: &v1alpha1.LastOperation{Verb: v1alpha1.VerbBind, State: v1alpha1.StateSucceeded},
			Conditions:    []metav1.Condition{{Type: v1alpha1.ConditionInSync, Status: metav1.ConditionTrue, Reason: "Committed", LastTransitionTime: metav1.Now()}},
		},
	}
}

// TestBindingResyncReportsDrift: a binding cannot be changed at its
// broker, so drift is reported, with the way to apply the spec, and never
// corrected. What resync does the same way for every kind is tested in
// internal/controller/brokered.
func TestBindingResyncReportsDrift(t *testing.T) {
	h := newHarness(t, instance(), boundBinding(`{"role":"reader"}`))
	h.Broker.PutInstance(fakebroker.Instance{ID: "ext-1", ServiceID: fakebroker.ServiceDBID, PlanID: fakebroker.PlanSmallID})
	h.Broker.PutBinding(fakebroker.Binding{InstanceID: "ext-1", ID: "bind-1", Parameters: map[string]any{"role": "admin"},
		Credentials: map[string]any{"password": "hunter2"}})
	b := h.resync(t)
	c := meta.FindStatusCondition(b.Status.Conditions, v1alpha1.ConditionInSync)
	require.NotNil(t, c)
	assert.Equal(t, metav1.ConditionFalse, c.Status)
	assert.Equal(t, resync.ReasonParametersDrift, c.Reason)
	assert.Contains(t, c.Message, `role (broker: "admin", here: "reader")`)
	assert.Contains(t, c.Message, "delete servicebinding creds and create it again")
	assert.Zero(t, h.Broker.Count(fakebroker.OpBind, fakebroker.OpUnbind), "a binding is never changed by resync")
	assert.NotContains(t, c.Message, "hunter2")
}
