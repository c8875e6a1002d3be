package brokered_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/lockstep-dev/lockstep/api/v1alpha1"
	"github.com/lockstep-dev/lockstep/internal/broker/fakebroker"
	"github.com/lockstep-dev/lockstep/internal/broker/osbapi"
	"github.com/lockstep-dev/lockstep/internal/controller/binding"
	"github.com/lockstep-dev/lockstep/internal/controller/brokered"
	"github.com/lockstep-dev/lockstep/internal/controller/controllertest"
	"github.com/lockstep-dev/lockstep/internal/controller/instance"
	"github.com/lockstep-dev/lockstep/internal/credentials"
)

const (
	interval  = controllertest.Interval
	dashboard = "https://dashboard.example/ext-1"
)

// kindCase is one kind of broker-backed object under the shared tests:
// an object of it the broker confirmed, in namespace "team", and how to
// see it at the broker.
type kindCase struct {
	kind v1alpha1.TargetKind
	// word is how messages name the kind.
	word string
	name string
	uid  types.UID
	new  func(brokered.Config) reconcile.Reconciler
	// object is the object as the broker confirmed it; others are what
	// it needs in the cluster besides.
	object func() client.Object
	others func() []client.Object
	// unconfirmed makes obj one the broker never confirmed.
	unconfirmed func(obj client.Object)
	empty       func() client.Object
	conditions  func(obj client.Object) []metav1.Condition
	// hold makes the broker hold the object as lockstep applied it;
	// holds reports whether it holds it.
	hold          func(b *fakebroker.Broker)
	holds         func(b *fakebroker.Broker) bool
	fetch, delete fakebroker.Op
	deleteVerb    v1alpha1.Verb
}

func (k kindCase) key() types.NamespacedName {
	return types.NamespacedName{Namespace: "team", Name: k.name}
}

func (k kindCase) target() v1alpha1.OperationTarget {
	return v1alpha1.OperationTarget{Kind: k.kind, Name: k.name, Namespace: "team", UID: k.uid}
}

var kinds = []kindCase{
	{
		kind: v1alpha1.KindServiceInstance, word: "instance", name: "db", uid: "uid-1", deleteVerb: v1alpha1.VerbDeprovision,
		new:    func(c brokered.Config) reconcile.Reconciler { return instance.New(c) },
		object: func() client.Object { return confirmedInstance() },
		others: func() []client.Object { return nil },
		unconfirmed: func(o client.Object) {
			o.(*v1alpha1.ServiceInstance).Status = v1alpha1.ServiceInstanceStatus{}
		},
		empty:      func() client.Object { return &v1alpha1.ServiceInstance{} },
		conditions: func(o client.Object) []metav1.Condition { return o.(*v1alpha1.ServiceInstance).Status.Conditions },
		hold:       holdInstance,
		holds:      func(b *fakebroker.Broker) bool { _, ok := b.Instance("ext-1"); return ok },
		fetch:      fakebroker.OpGetInstance, delete: fakebroker.OpDeprovision,
	},
	{
		kind: v1alpha1.KindServiceBinding, word: "binding", name: "creds", uid: "uid-b", deleteVerb: v1alpha1.VerbUnbind,
		new:    func(c brokered.Config) reconcile.Reconciler { return binding.New(c, c.Client) },
		object: func() client.Object { return boundBinding() },
		others: func() []client.Object {
			secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "creds", Namespace: "team",
				Labels: map[string]string{credentials.LabelBindingUID: "uid-b"}}}
			return []client.Object{confirmedInstance(), secret}
		},
		unconfirmed: func(o client.Object) {
			o.(*v1alpha1.ServiceBinding).Status = v1alpha1.ServiceBindingStatus{}
		},
		empty:      func() client.Object { return &v1alpha1.ServiceBinding{} },
		conditions: func(o client.Object) []metav1.Condition { return o.(*v1alpha1.ServiceBinding).Status.Conditions },
		hold: func(b *fakebroker.Broker) {
			holdInstance(b)
			b.PutBinding(fakebroker.Binding{InstanceID: "ext-1", ID: "bind-1", ServiceID: fakebroker.ServiceDBID, PlanID: fakebroker.PlanSmallID,
				Parameters: map[string]any{"role": "reader"}, Credentials: map[string]any{"password": "hunter2"}})
		},
		holds: func(b *fakebroker.Broker) bool { _, ok := b.Binding("ext-1", "bind-1"); return ok },
		fetch: fakebroker.OpGetBinding, delete: fakebroker.OpUnbind,
	},
}

func holdInstance(b *fakebroker.Broker) {
	b.PutInstance(fakebroker.Instance{ID: "ext-1", ServiceID: fakebroker.ServiceDBID, PlanID: fakebroker.PlanSmallID, DashboardURL: dashboard})
}

// confirmedInstance is an instance the broker confirmed: Ready, InSync,
// with what was applied in its status.
func confirmedInstance() *v1alpha1.ServiceInstance {
	now := metav1.Now()
	return &v1alpha1.ServiceInstance{
		ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: "team", UID: "uid-1", Generation: 1},
		Spec:       v1alpha1.ServiceInstanceSpec{BrokerName: "acme", ServiceName: "db", PlanName: "small", ExternalID: "ext-1"},
		Status: v1alpha1.ServiceInstanceStatus{
			Conditions: []metav1.Condition{
				{Type: v1alpha1.ConditionReady, Status: metav1.ConditionTrue, Reason: "Provisioned", LastTransitionTime: now, ObservedGeneration: 1},
				{Type: v1alpha1.ConditionInSync, Status: metav1.ConditionTrue, Reason: "Committed", LastTransitionTime: now, ObservedGeneration: 1},
			},
			LastApplied:  &v1alpha1.AppliedInstance{PlanName: "small", PlanID: fakebroker.PlanSmallID},
			DashboardURL: dashboard,
		},
	}
}

// boundBinding is a binding the broker confirmed, its credentials in its
// Secret.
func boundBinding() *v1alpha1.ServiceBinding {
	now := metav1.Now()
	return &v1alpha1.ServiceBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "creds", Namespace: "team", UID: "uid-b", Generation: 1},
		Spec: v1alpha1.ServiceBindingSpec{InstanceName: "db", ExternalID: "bind-1", SecretName: "creds",
			Parameters: &runtime.RawExtension{Raw: json.RawMessage(`{"role":"reader"}`)}},
		Status: v1alpha1.ServiceBindingStatus{
			LastOperation: &v1alpha1.LastOperation{Verb: v1alpha1.VerbBind, State: v1alpha1.StateSucceeded},
			Conditions: []metav1.Condition{
				{Type: v1alpha1.ConditionReady, Status: metav1.ConditionTrue, Reason: "CredentialsStored", Message: `credentials are in Secret "creds"`,
					LastTransitionTime: now, ObservedGeneration: 1},
				{Type: v1alpha1.ConditionInSync, Status: metav1.ConditionTrue, Reason: "Committed", LastTransitionTime: now, ObservedGeneration: 1},
			},
			ObservedGeneration: 1,
		},
	}
}

// harness is the reconciler of one kind under test.
type harness struct {
	*controllertest.Harness
	k kindCase
}

// newHarness holds obj and what it needs; change edits the catalog
// lockstep sees.
func newHarness(t *testing.T, k kindCase, change func(*osbapi.Catalog), obj client.Object) *harness {
	t.Helper()
	h := &harness{Harness: controllertest.NewHarness(t, change, append([]client.Object{obj}, k.others()...)...), k: k}
	h.R = k.new(h.Config)
	return h
}

func (h *harness) pass(t *testing.T) reconcile.Result { return h.Pass(t, h.k.key()) }

// resync fetches the object once it is due; it returns the object's
// version before the fetch.
func (h *harness) resync(t *testing.T) string {
	before := h.k.empty()
	h.Resync(t, h.k.key(), before)
	return before.GetResourceVersion()
}

func (h *harness) object(t *testing.T) client.Object {
	t.Helper()
	obj := h.k.empty()
	require.NoError(t, h.Client.Get(context.Background(), h.k.key(), obj))
	return obj
}

// recorded drains the events recorded so far.
func (h *harness) recorded() []string {
	var got []string
	for {
		select {
		case e := <-h.Events.Events:
			got = append(got, e)
		default:
			return got
		}
	}
}
