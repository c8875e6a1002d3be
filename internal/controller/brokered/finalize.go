package brokered

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/lockstep-dev/lockstep/api/v1alpha1"
	"github.com/lockstep-dev/lockstep/internal/brokercall"
	"github.com/lockstep-dev/lockstep/internal/journal"
)

// JournalReaders are where a finalizer reads whether admission recorded an
// object's delete: the cache, the API server past it, the locks, and
// lockstep's namespace (records of deletes in a namespace being deleted
// live there).
type JournalReaders struct {
	Client    client.Client
	APIReader client.Reader
	Leases    *journal.Leases
	Namespace string
}

// Removal is what lockstep's finalizer does for one object being deleted.
type Removal struct {
	Kind v1alpha1.TargetKind
	// Verb is the broker call that deletes the object there:
	// VerbDeprovision or VerbUnbind.
	Verb v1alpha1.Verb
	// Remove makes that call when the delete bypassed admission (webhook
	// down or not installed), through the one protocol of a broker call
	// (journaled, see Removed); done is true once the broker no longer
	// holds the object.
	Remove func(ctx context.Context) (done bool, err error)
	// Release, when set, runs once the broker no longer holds the object,
	// before the finalizer goes (a binding deletes its Secret).
	Release func(ctx context.Context) error
}

// The waits of a finalizer: for a delete whose record has no final answer
// yet, and before it asks the broker again about a removal that is not
// done.
const (
	underWayRecheck = time.Second
	removalRecheck  = 5 * time.Second
)

// Finalize removes lockstep's finalizer from obj, being deleted, once the
// broker no longer holds it. When the journal records that the broker
// confirmed the delete (the usual case) the finalizer goes at once; while
// the record has no final answer yet it waits for it; only when there is no
// record at all did the delete bypass admission, and the removal is made
// first. An object whose reconcile policy keeps the broker's resource on
// delete is let go without a broker call.
func Finalize(ctx context.Context, j JournalReaders, obj client.Object, r Removal) (ctrl.Result, error) {
	if !controllerutil.ContainsFinalizer(obj, v1alpha1.Finalizer) {
		return ctrl.Result{}, nil
	}
	recorded := journal.DeleteConfirmed
	if !v1alpha1.KeepsBrokerOnDelete(obj) {
		var err error
		recorded, err = journal.DeleteRecorded(ctx, j.Client, j.APIReader, j.Leases, j.Namespace, journal.KeyOf(r.Kind, obj), obj.GetUID(), r.Verb)
		if err != nil {
			return ctrl.Result{}, err
		}
	}
	switch recorded {
	case journal.DeleteUnderWay:
		return ctrl.Result{RequeueAfter: underWayRecheck}, nil
	case journal.DeleteNotRecorded:
		done, err := r.Remove(ctx)
		if err != nil {
			return ctrl.Result{}, err
		}
		if !done {
			return ctrl.Result{RequeueAfter: removalRecheck}, nil
		}
	}
	if r.Release != nil {
		if err := r.Release(ctx); err != nil {
			return ctrl.Result{}, err
		}
	}
	if err := setFinalizers(ctx, j.Client, obj, "", without(obj.GetFinalizers(), v1alpha1.Finalizer)); err != nil && !apierrors.IsNotFound(err) {
		return ctrl.Result{}, fmt.Errorf("removing the finalizer of %s %s/%s: %w", word(r.Kind), obj.GetNamespace(), obj.GetName(), err)
	}
	return ctrl.Result{}, nil
}

// RestoreFinalizer puts lockstep's finalizer back on obj, not being
// deleted, when an update took it off an object that lockstep's mutating
// webhook defaulted and labelled (v1alpha1.DefaultedLabel): the webhook
// no longer sees the updates of such an object, so it is the reconciler
// that keeps the finalizer on. An object without the label is left as it
// is (the webhook puts the finalizer back on its updates, or never saw
// it).
func RestoreFinalizer(ctx context.Context, c client.Client, obj client.Object) error {
	if obj.GetLabels()[v1alpha1.DefaultedLabel] != "true" || controllerutil.ContainsFinalizer(obj, v1alpha1.Finalizer) {
		return nil
	}
	return setFinalizers(ctx, c, obj, obj.GetResourceVersion(), append(slices.Clip(obj.GetFinalizers()), v1alpha1.Finalizer))
}

// setFinalizers makes finalizers the finalizers of obj, at
// resourceVersion when one is given (a conflict when the object moved
// since), and gives obj the finalizers and version written.
func setFinalizers(ctx context.Context, c client.Client, obj client.Object, resourceVersion string, finalizers []string) error {
	data, err := finalizersPatch(resourceVersion, finalizers)
	if err != nil {
		return err
	}
	if err := patch(ctx, c, obj, data, false); err != nil {
		return err
	}
	obj.SetFinalizers(finalizers)
	return nil
}

// finalizersPatch is the merge patch that makes the object's finalizers
// finalizers (none: the field goes), at resourceVersion when one is given
// (a conflict when the object moved) or whatever the object holds.
func finalizersPatch(resourceVersion string, finalizers []string) ([]byte, error) {
	return json.Marshal(metadataWrite{Metadata: finalizersAt{ResourceVersion: resourceVersion, Finalizers: finalizers}})
}

type metadataWrite struct {
	Metadata finalizersAt `json:"metadata"`
}

type finalizersAt struct {
	ResourceVersion string   `json:"resourceVersion,omitempty"`
	Finalizers      []string `json:"finalizers"`
}

// without is list without name, in a new slice (nil when nothing is left).
func without(list []string, name string) []string {
	var out []string
	for _, s := range list {
		if s != name {
			out = append(out, s)
		}
	}
	return out
}

// Removed is what the result of a finalizer's removal (a deprovision or
// unbind carried out with brokercall.Protocol.Carry) means to Finalize:
// done once the broker confirmed; not done while the broker works or
// lockstep learns an unknown outcome (the operations reconciler follows
// the record, and the next pass waits for it), or while another operation
// holds the object's lock; the broker's refusal is an error, so that the
// removal is asked again, later each time.
func Removed(res brokercall.Result) (bool, error) {
	switch {
	case res.LockErr != nil:
		return false, res.LockErr
	case !res.Called():
		return false, nil
	case res.Verdict == brokercall.Refused:
		return false, res.Err
	}
	return res.Verdict == brokercall.Done, nil
}

// word is how messages name a kind: "instance", "binding".
func word(k v1alpha1.TargetKind) string {
	return strings.ToLower(strings.TrimPrefix(string(k), "Service"))
}

// finalize removes lockstep's finalizer from obj, being deleted, once the
// broker no longer holds it, removing it there first when the delete
// bypassed admission (see Finalize).
func (r *Reconciler[T, S]) finalize(ctx context.Context, obj T) (ctrl.Result, error) {
	readers := JournalReaders{Client: r.Client, APIReader: r.APIReader, Leases: r.Leases, Namespace: r.Namespace}
	return Finalize(ctx, readers, obj, Removal{
		Kind: r.Kind.Kind(), Verb: r.Kind.Delete(),
		Remove:  func(ctx context.Context) (bool, error) { return r.remove(ctx, obj) },
		Release: func(ctx context.Context) error { return r.Kind.Release(ctx, obj) },
	})
}

// remove asks the broker to delete an object whose delete bypassed
// admission, as a journaled operation lockstep makes on its own. It
// reports done when the broker no longer holds it.
func (r *Reconciler[T, S]) remove(ctx context.Context, obj T) (bool, error) {
	ctx, cancel := context.WithTimeout(ctx, r.Timeout)
	defer cancel()
	verb := r.Kind.Delete()
	doing := map[v1alpha1.Verb]string{v1alpha1.VerbDeprovision: "deprovisioning", v1alpha1.VerbUnbind: "unbinding"}[verb]
	t, _, err := r.target(ctx, obj, true)
	if err != nil {
		return false, fmt.Errorf("%s %s: %w", doing, r.named(obj), err)
	}
	res := r.Protocol.Carry(ctx, r.Kind.Request(verb, obj, t, r.Protocol.Lockstep("", brokercall.ReasonFinalizer)))
	done, err := Removed(res)
	if err != nil {
		return false, fmt.Errorf("%s %s at broker %q: %w", doing, r.named(obj), t.Entry.Broker, err)
	}
	if done {
		log.FromContext(ctx).Info("removed at its broker an object whose delete bypassed admission (the journal holds no delete of it)",
			"kind", r.Kind.Kind(), "name", obj.GetName(), "verb", verb)
	}
	return done, nil
}
