package admission

import (
	"context"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionv1 "k8s.io/api/admission/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/lockstep-dev/lockstep/api/v1alpha1"
	"github.com/lockstep-dev/lockstep/internal/broker/fakebroker"
	"github.com/lockstep-dev/lockstep/internal/journal"
)

// grants is an Authorizer that allows what one of its rules allows; a
// rule is "user verb resource namespace/name", with * for any part.
type grants []string

func (g grants) Allowed(_ context.Context, user authenticationv1.UserInfo, attrs authorizationv1.ResourceAttributes) (bool, error) {
	asked := []string{user.Username, attrs.Verb, resourceName(attrs), attrs.Namespace + "/" + attrs.Name}
	for _, rule := range g {
		parts := strings.Fields(rule)
		match := len(parts) == len(asked)
		for i := 0; match && i < len(parts); i++ {
			match = parts[i] == "*" || parts[i] == asked[i]
		}
		if match {
			return true, nil
		}
	}
	return false, nil
}

// admitAs runs a request of user through the chain of its kind.
func admitAs[T client.Object](h *harness, v *Validator[T], user string, op admissionv1.Operation, old, new T) (admission.Warnings, error) {
	defer h.answers.Wait()
	ctx := admission.NewContextWithRequest(context.Background(), admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{
		Operation: op, UserInfo: authenticationv1.UserInfo{Username: user},
	}})
	switch op {
	case admissionv1.Create:
		return v.ValidateCreate(ctx, new)
	case admissionv1.Update:
		return v.ValidateUpdate(ctx, old, new)
	default:
		return v.ValidateDelete(ctx, old)
	}
}

// theirs is namespace other's instance that holds external id ext-1.
func theirs() Instance {
	return instance("small", "", func(si *v1alpha1.ServiceInstance) {
		si.Namespace, si.Name, si.UID = "other", "their-db", "uid-theirs"
	})
}

func leases(t *testing.T, h *harness) []coordinationv1.Lease {
	t.Helper()
	var ls coordinationv1.LeaseList
	require.NoError(t, h.client.List(context.Background(), &ls))
	return ls.Items
}

// A create that names an external id another object holds is refused
// before the lock: no broker call, no lock, no record; the refusal names
// the other object only to who may read it.
func TestExternalIDHeldByAnotherObjectIsRefused(t *testing.T) {
	adopting := func(si *v1alpha1.ServiceInstance) {
		si.Annotations = map[string]string{v1alpha1.AnnotationAdopt: "true"}
	}
	tests := []struct {
		name    string
		access  grants
		new     Instance
		want    string
		notWant []string
	}{
		{
			name: "a requester who may not read the holder learns only that the id is held", new: instance("small", ""),
			want:    `external id "ext-1" is already held by another instance in this cluster: a broker's id belongs to one object; nothing was created and the broker was not called; leave spec.externalID out to get a new id, or name another one`,
			notWant: []string{`"other"`, "their-db"},
		},
		{
			name: "a requester who may read it learns which", new: instance("small", ""), access: grants{"alice get serviceinstances.lockstep.dev other/their-db"},
			want: `external id "ext-1" is already held by instance "their-db" in namespace "other"`,
		},
		{
			name: "an adoption is refused too, and told how to let the holder go", new: instance("small", "", adopting),
			access: grants{"alice get serviceinstances.lockstep.dev other/their-db", "alice adopt * *"},
			want:   `to adopt it here, let that instance go first without its broker: kubectl annotate serviceinstances their-db -n other lockstep.dev/reconcile-policy=detach-on-delete, then delete it`,
		},
		{
			name: "an adoption without the right to read the holder does not learn it", new: instance("small", "", adopting), access: grants{"alice adopt * *"},
			want: `is already held by another instance in this cluster`, notWant: []string{`"other"`, "their-db", "annotate"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, theirs())
			h.broker.PutInstance(fakebroker.Instance{ID: "ext-1", ServiceID: fakebroker.ServiceDBID, PlanID: fakebroker.PlanSmallID})
			d := h.deps
			d.Access = tt.access
			v := NewInstanceValidator(d, nil)
			_, err := admitAs(h, v, "alice", admissionv1.Create, nil, tt.new)
			require.Error(t, err)
			assert.True(t, apierrors.IsConflict(err), err.Error())
			assert.Contains(t, err.Error(), tt.want)
			for _, s := range tt.notWant {
				assert.NotContains(t, err.Error(), s)
			}
			assert.Empty(t, h.broker.Calls(), "the broker is not called")
			assert.Empty(t, h.records(t), "no record")
			assert.Empty(t, leases(t, h), "the holder's lock is never taken")
		})
	}
}

func TestExternalIDOfABindingHeldByAnotherBindingIsRefused(t *testing.T) {
	held := binding("", func(b *v1alpha1.ServiceBinding) { b.Namespace, b.Name, b.UID = "other", "their-creds", "b-theirs" })
	h := newHarness(t, instance("small", ""), held)
	d := h.deps
	d.Access = grants{}
	_, err := admitAs(h, NewBindingValidator(d, nil), "alice", admissionv1.Create, nil, binding(""))
	require.Error(t, err)
	assert.Contains(t, err.Error(), `external id "bind-1" is already held by another binding in this cluster`)
	assert.Empty(t, h.broker.Calls())
	assert.Empty(t, h.records(t))
}

// Only another object counts: the object itself (the API server asks
// again for the same create) and an object the cache still holds but the
// API server no longer does take nothing.
func TestExternalIDHeldOnlyByAnotherLiveObject(t *testing.T) {
	t.Run("the same object", func(t *testing.T) {
		h := newHarness(t, instance("small", ""))
		_, err := h.admit(admissionv1.Create, nil, instance("small", ""), false)
		require.NoError(t, err)
		assert.Equal(t, 1, h.broker.Count(fakebroker.OpProvision))
	})
	t.Run("gone from the API server, not yet from the cache", func(t *testing.T) {
		h := newHarness(t, theirs())
		d := h.deps
		d.APIReader = newHarness(t).client // holds no instance
		v := NewInstanceValidator(d, nil)
		_, err := admitAs(h, v, "alice", admissionv1.Create, nil, instance("small", ""))
		require.NoError(t, err)
		assert.Equal(t, 1, h.broker.Count(fakebroker.OpProvision))
	})
}

// Two creates of one id pass the check before the lock while neither is
// persisted; the lock (keyed on the id) lets one through, and the other,
// once the first is committed, is refused under the lock before its broker
// call.
func TestExternalIDIsCheckedAgainUnderTheLock(t *testing.T) {
	var lists atomic.Int32
	var h *harness
	h = newInterceptedHarness(t, interceptor.Funcs{
		List: func(ctx context.Context, c client.WithWatch, list client.ObjectList, opts ...client.ListOption) error {
			if _, ok := list.(*v1alpha1.ServiceInstanceList); ok && lists.Add(1) == 2 {
				// The first create persisted and was committed while this
				// one waited for the lock.
				require.NoError(t, c.Create(ctx, theirs()))
			}
			return c.List(ctx, list, opts...)
		},
	})
	d := h.deps
	d.Access = grants{}
	_, err := admitAs(h, NewInstanceValidator(d, nil), "alice", admissionv1.Create, nil, instance("small", ""))
	require.Error(t, err)
	assert.True(t, apierrors.IsConflict(err))
	assert.Contains(t, err.Error(), `external id "ext-1" is already held by another instance in this cluster`)
	assert.Empty(t, h.broker.Calls(), "the broker is not called")
	records := h.records(t)
	require.Len(t, records, 1, "the lock was taken: its record says who tried and why it was refused")
	assert.Equal(t, v1alpha1.PhaseFailed, records[0].Status.Phase)
	assert.Empty(t, h.lockHeldBy(t), "the refusal's lock is released")
}

// The lock of an id held for another object's operation refuses with a
// message that names that object only to who may read it.
func TestExternalIDInFlightForAnotherObject(t *testing.T) {
	tests := []struct {
		name    string
		access  grants
		want    string
		notWant []string
	}{
		{name: "not readable", want: `external id "ext-1" is in use: a change of another instance that names it is in flight at the broker; nothing was changed`,
			notWant: []string{`"other"`, "their-db", "bob"}},
		{name: "readable", access: grants{"alice get serviceinstances.lockstep.dev other/their-db"},
			want: `external id "ext-1" is in use: a change of instance "their-db" in namespace "other" that names it (provision by "bob"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var takes atomic.Int32
			h := newInterceptedHarness(t, interceptor.Funcs{
				Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
					if _, ok := obj.(*coordinationv1.Lease); ok {
						takes.Add(1)
					}
					return c.Create(ctx, obj, opts...)
				},
			})
			d := h.deps
			d.Access = tt.access
			// Locks live in lockstep's namespace, whatever the object's. A
			// create does not wait for another object's: the other one will
			// hold the id, or this create may be tried again.
			d.Leases = &journal.Leases{Client: h.client, Namespace: "lockstep-system", Duration: time.Minute, Wait: time.Minute}
			v := NewInstanceValidator(d, nil)
			_, ok, err := d.Leases.Acquire(context.Background(), journal.KeyOf(v1alpha1.KindServiceInstance, theirs()),
				&journal.Operation{Verb: v1alpha1.VerbProvision, User: "bob", Started: time.Now(), Record: "their-db-provision-1"})
			require.NoError(t, err)
			require.True(t, ok)
			_, err = admitAs(h, v, "alice", admissionv1.Create, nil, instance("small", ""))
			require.Error(t, err)
			assert.Equal(t, int32(http.StatusConflict), err.(apierrors.APIStatus).Status().Code)
			assert.Contains(t, err.Error(), tt.want)
			for _, s := range tt.notWant {
				assert.NotContains(t, err.Error(), s)
			}
			assert.Empty(t, h.broker.Calls())
			assert.Equal(t, int32(2), takes.Load(), "the other object's lock, and one try of this create's")
		})
	}
}

// IndexExternalIDs indexes both kinds by spec.externalID.
func TestExternalIDIndex(t *testing.T) {
	assert.Equal(t, []string{"ext-1"}, ExternalIDIndex(instance("small", "")))
	assert.Equal(t, []string{"bind-1"}, ExternalIDIndex(binding("")))
	assert.Nil(t, ExternalIDIndex(&v1alpha1.ServiceInstance{}))
}

// A change of an object whose lock another object's create holds for a
// moment (a create that names its id, about to be refused) waits for it,
// and is told so without learning the other object.
func TestChangeWaitsForAnotherObjectsCreateOnItsID(t *testing.T) {
	h := newHarness(t)
	h.broker.PutInstance(fakebroker.Instance{ID: "ext-1", ServiceID: fakebroker.ServiceDBID, PlanID: fakebroker.PlanSmallID})
	d := h.deps
	d.Access = grants{}
	d.Leases = &journal.Leases{Client: h.client, Namespace: "lockstep-system", Duration: time.Minute, Wait: 50 * time.Millisecond}
	_, ok, err := d.Leases.Acquire(context.Background(), journal.KeyOf(v1alpha1.KindServiceInstance, theirs()),
		&journal.Operation{Verb: v1alpha1.VerbProvision, User: "mallory", Started: time.Now(), Record: "their-db-provision-1"})
	require.NoError(t, err)
	require.True(t, ok)
	_, err = admitAs(h, NewInstanceValidator(d, nil), "alice", admissionv1.Update, instance("small", ""), instance("large", ""))
	require.Error(t, err)
	assert.Contains(t, err.Error(), `external id "ext-1" is in use: a change of another instance that names it is in flight at the broker; nothing was changed: retry when it has finished`)
	assert.NotContains(t, err.Error(), "mallory")
	assert.Zero(t, h.broker.Count(fakebroker.OpUpdate))
}
