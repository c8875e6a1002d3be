package brokered_test

import (
	"context"
	"net/http"
	"reflect"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/lockstep-dev/lockstep/api/v1alpha1"
	"github.com/lockstep-dev/lockstep/internal/broker/fakebroker"
	"github.com/lockstep-dev/lockstep/internal/brokercall"
	"github.com/lockstep-dev/lockstep/internal/controller/brokered"
	"github.com/lockstep-dev/lockstep/internal/controller/controllertest"
)

// TestFinalizer: lockstep's finalizer leaves an object being deleted once
// the broker no longer holds it; it deletes it at the broker itself only
// when the journal holds no delete of it (the delete bypassed admission),
// as lockstep's own journaled call.
func TestFinalizer(t *testing.T) {
	tests := []struct {
		name        string
		policy      v1alpha1.ReconcilePolicy
		record      *controllertest.Record
		script      *fakebroker.Respond
		wantRelease bool // lockstep's finalizer is off the object afterwards
		wantDeletes int  // broker calls that delete the object
		wantErr     string
		wantRequeue bool
		wantHeld    bool // the broker still holds the object
		// wantRecord is the phase of the record of the finalizer's own
		// delete, when it makes one.
		wantRecord v1alpha1.OperationPhase
	}{
		{name: "confirmed in the journal: no broker call", record: &controllertest.Record{Namespace: "team", Phase: v1alpha1.PhaseSucceeded},
			wantRelease: true, wantHeld: true},
		{name: "committed in the journal: no broker call", record: &controllertest.Record{Namespace: "team", Phase: v1alpha1.PhaseCommitted},
			wantRelease: true, wantHeld: true},
		{name: "confirmed in lockstep's namespace (the object's namespace is being deleted): no broker call",
			record: &controllertest.Record{Namespace: "lockstep-system", Phase: v1alpha1.PhaseSucceeded}, wantRelease: true, wantHeld: true},
		{name: "confirmed, not in the cache yet: read past it, no broker call",
			record: &controllertest.Record{Namespace: "team", Phase: v1alpha1.PhaseSucceeded, Uncached: true}, wantRelease: true, wantHeld: true},
		{name: "answer still being written (Pending): waits, no broker call",
			record: &controllertest.Record{Namespace: "team", Phase: ""}, wantRequeue: true, wantHeld: true},
		{name: "delete still followed (InProgress): waits, no broker call",
			record: &controllertest.Record{Namespace: "team", Phase: v1alpha1.PhaseInProgress}, wantRequeue: true, wantHeld: true},
		{name: "an earlier delete failed, this one bypassed admission: deleted at the broker",
			record: &controllertest.Record{Namespace: "team", Phase: v1alpha1.PhaseFailed}, wantRelease: true, wantDeletes: 1, wantRecord: v1alpha1.PhaseSucceeded},
		{name: "bypassed admission: deleted at the broker first", wantRelease: true, wantDeletes: 1, wantRecord: v1alpha1.PhaseSucceeded},
		{name: "manage, named: deleted at the broker", policy: v1alpha1.PolicyManage, wantRelease: true, wantDeletes: 1, wantRecord: v1alpha1.PhaseSucceeded},
		{name: "detach-on-delete: the broker keeps the object", policy: v1alpha1.PolicyDetachOnDelete, wantRelease: true, wantHeld: true},
		{name: "observe: the broker keeps the object", policy: v1alpha1.PolicyObserve, wantRelease: true, wantHeld: true},
		{name: "bypassed admission, async delete", script: &fakebroker.Respond{Async: &fakebroker.Async{InProgressPolls: 1}},
			wantRelease: true, wantDeletes: 1, wantRecord: v1alpha1.PhaseSucceeded},
		{name: "bypassed admission, broker refuses: finalizer stays", script: &fakebroker.Respond{Status: http.StatusBadRequest, Description: "protected"},
			wantDeletes: 1, wantErr: "protected", wantHeld: true, wantRecord: v1alpha1.PhaseFailed},
		{name: "bypassed admission, broker answers 500: outcome unknown, followed; finalizer stays",
			script:      &fakebroker.Respond{Status: http.StatusInternalServerError, Description: "down"},
			wantDeletes: 1, wantRequeue: true, wantHeld: true, wantRecord: v1alpha1.PhaseInProgress},
	}
	for _, k := range kinds {
		for _, tt := range tests {
			t.Run(k.word+": "+tt.name, func(t *testing.T) {
				b, cache := controllertest.Broker(t, nil)
				k.hold(b)
				if tt.script != nil {
					b.Script(k.delete, *tt.script)
				}
				obj := k.object()
				now := metav1.Now()
				obj.SetDeletionTimestamp(&now)
				obj.SetFinalizers([]string{v1alpha1.Finalizer, "keep"})
				if tt.policy != "" {
					obj.SetAnnotations(map[string]string{v1alpha1.AnnotationReconcilePolicy: string(tt.policy)})
				}
				c, apiReader := controllertest.Clients(controllertest.Scheme(t), append([]client.Object{obj}, k.others()...), tt.record,
					k.name+"-delete-1", k.deleteVerb, k.target())
				r := k.new(brokered.Config{Client: c, APIReader: apiReader, Namespace: "lockstep-system", Catalogs: cache, Timeout: 5 * time.Second,
					Protocol: controllertest.Protocol(c, "lockstep-system")})

				ctx := context.Background()
				res, err := r.Reconcile(ctx, reconcile.Request{NamespacedName: k.key()})
				if tt.wantErr != "" {
					assert.ErrorContains(t, err, tt.wantErr)
				} else {
					require.NoError(t, err)
				}
				assert.Equal(t, tt.wantRequeue, res.RequeueAfter > 0, "looks again later")
				got := k.empty()
				require.NoError(t, c.Get(ctx, k.key(), got), "another finalizer keeps the object")
				assert.Equal(t, tt.wantRelease, !controllerutil.ContainsFinalizer(got, v1alpha1.Finalizer), "lockstep's finalizer removed")
				assert.Equal(t, tt.wantDeletes, b.Count(k.delete))
				assert.Equal(t, tt.wantHeld, k.holds(b), "the broker holds the object")
				if tt.wantDeletes == 0 {
					return
				}
				call, ok := b.LastCall(k.delete)
				require.True(t, ok)
				id := controllertest.Identity(t, call)
				assert.Equal(t, controllertest.Self, id.Username, "the finalizer's delete is lockstep's own call")
				assert.Equal(t, []string{brokercall.ReasonFinalizer}, id.Extra[brokercall.ExtraReason], "and says why")
				var ops v1alpha1.BrokerOperationList
				require.NoError(t, c.List(ctx, &ops))
				var phases []v1alpha1.OperationPhase
				for _, op := range ops.Items {
					if op.Spec.Requester.Username == controllertest.Self {
						phases = append(phases, op.Status.Phase)
					}
				}
				assert.Equal(t, []v1alpha1.OperationPhase{tt.wantRecord}, phases, "one record of the finalizer's delete")
			})
		}
	}
}

// TestFinalizerRemovedOnce: a reconcile queued before the object went
// (its record's writes queue one) may still find it, finalizer and all,
// in the cache: the finalizer lockstep removed is not removed again.
func TestFinalizerRemovedOnce(t *testing.T) {
	for _, k := range kinds {
		t.Run(k.word, func(t *testing.T) {
			b, cache := controllertest.Broker(t, nil)
			k.hold(b)
			obj := k.object()
			now := metav1.Now()
			obj.SetDeletionTimestamp(&now)
			obj.SetFinalizers([]string{v1alpha1.Finalizer, "keep"})
			stale := obj.DeepCopyObject().(client.Object)
			c, apiReader := controllertest.Clients(controllertest.Scheme(t), append([]client.Object{obj}, k.others()...),
				&controllertest.Record{Namespace: "team", Phase: v1alpha1.PhaseCommitted}, k.name+"-delete-1", k.deleteVerb, k.target())
			staleCache, patches := behindItsWrites(c, k.key(), stale, false)
			r := k.new(brokered.Config{Client: staleCache, APIReader: apiReader, Namespace: "lockstep-system", Catalogs: cache,
				Timeout: 5 * time.Second, Protocol: controllertest.Protocol(c, "lockstep-system")})

			for range 2 {
				_, err := r.Reconcile(context.Background(), reconcile.Request{NamespacedName: k.key()})
				require.NoError(t, err)
			}
			assert.Equal(t, 1, *patches, "the finalizer removed once; the stale copy costs no request")
			got := k.empty()
			require.NoError(t, c.Get(context.Background(), k.key(), got))
			assert.False(t, controllerutil.ContainsFinalizer(got, v1alpha1.Finalizer))
		})
	}
}

// TestStatusNotWrittenFromBehindItsOwnWrite: a reconcile queued by this
// process's own writes (the binding's Secret adopted, a record answered)
// may read the object from a cache that does not hold the status this
// process just wrote: it does not write it again over the version it
// already wrote over (which kube-apiserver refuses with a conflict).
func TestStatusNotWrittenFromBehindItsOwnWrite(t *testing.T) {
	for _, k := range kinds {
		t.Run(k.word, func(t *testing.T) {
			b, cache := controllertest.Broker(t, nil)
			k.hold(b)
			obj := k.object()
			k.unconfirmed(obj)
			create := v1alpha1.VerbProvision
			if k.kind == v1alpha1.KindServiceBinding {
				create = v1alpha1.VerbBind
			}
			// The create's answer, committed: a status to write.
			c, apiReader := controllertest.Clients(controllertest.Scheme(t), append([]client.Object{obj}, k.others()...),
				&controllertest.Record{Namespace: "team", Phase: v1alpha1.PhaseCommitted}, k.name+"-create-1", create, k.target())
			stale := k.empty()
			require.NoError(t, c.Get(context.Background(), k.key(), stale))
			behind, statusPatches := behindItsWrites(c, k.key(), stale, true)
			r := k.new(brokered.Config{Client: behind, APIReader: apiReader, Namespace: "lockstep-system", Catalogs: cache,
				Timeout: 5 * time.Second, Protocol: controllertest.Protocol(c, "lockstep-system")})

			for range 2 {
				_, err := r.Reconcile(context.Background(), reconcile.Request{NamespacedName: k.key()})
				require.NoError(t, err, "no conflict: the stale copy is not written over")
			}
			assert.Equal(t, 1, *statusPatches, "the status written once")
		})
	}
}

// behindItsWrites is c seen through a cache behind this process's own
// writes: once a write of the kind counted (a status patch when status,
// else a patch) was made, reading key gives stale. It returns the client
// and the count of those writes. These fakes serve no status subresource,
// so a status patch is written with the object.
func behindItsWrites(c client.Client, key client.ObjectKey, stale client.Object, status bool) (client.Client, *int) {
	writes := 0
	funcs := interceptor.Funcs{
		Get: func(ctx context.Context, cl client.WithWatch, k client.ObjectKey, o client.Object, opts ...client.GetOption) error {
			if k == key && writes > 0 && reflect.TypeOf(o) == reflect.TypeOf(stale) {
				return cl.Scheme().Convert(stale.DeepCopyObject(), o, nil)
			}
			return cl.Get(ctx, k, o, opts...)
		},
	}
	if status {
		funcs.SubResourcePatch = func(ctx context.Context, cl client.Client, _ string, o client.Object, p client.Patch, _ ...client.SubResourcePatchOption) error {
			writes++
			return cl.Patch(ctx, o, p)
		}
	} else {
		funcs.Patch = func(ctx context.Context, cl client.WithWatch, o client.Object, p client.Patch, opts ...client.PatchOption) error {
			writes++
			return cl.Patch(ctx, o, p, opts...)
		}
	}
	return interceptor.NewClient(c.(client.WithWatch), funcs), &writes
}
