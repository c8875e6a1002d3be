package binding

import (
	"context"
	"fmt"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/lockstep-dev/lockstep/api/v1alpha1"
	"github.com/lockstep-dev/lockstep/internal/brokercall"
	"github.com/lockstep-dev/lockstep/internal/controller/brokered"
	"github.com/lockstep-dev/lockstep/internal/credentials"
)

// finalize removes the Secret of a binding being deleted and then the
// lockstep.dev/broker finalizer, once the broker no longer holds the
// binding, unbinding it first when the delete bypassed admission (see
// brokered.Finalize).
func (r *Reconciler) finalize(ctx context.Context, b *v1alpha1.ServiceBinding) (ctrl.Result, error) {
	return brokered.Finalize(ctx, r.journalReaders(), b, brokered.Removal{
		Kind: kind, Verb: v1alpha1.VerbUnbind,
		Remove:  func(ctx context.Context) (bool, error) { return r.unbind(ctx, b) },
		Release: func(ctx context.Context) error { return credentials.Delete(ctx, r.Client, b) },
	})
}

// unbind asks the broker to delete a binding whose delete bypassed
// admission, as a journaled operation lockstep makes on its own. It
// reports done when the broker no longer holds it.
func (r *Reconciler) unbind(ctx context.Context, b *v1alpha1.ServiceBinding) (bool, error) {
	ctx, cancel := context.WithTimeout(ctx, r.Timeout)
	defer cancel()
	var si v1alpha1.ServiceInstance
	if err := r.Client.Get(ctx, client.ObjectKey{Namespace: b.Namespace, Name: b.Spec.InstanceName}, &si); err != nil {
		return false, fmt.Errorf("unbinding %s/%s: reading its instance: %w", b.Namespace, b.Name, err)
	}
	entry, err := r.Catalogs.Wait(ctx, si.Spec.BrokerName)
	if err != nil {
		return false, fmt.Errorf("unbinding %s/%s: %w", b.Namespace, b.Name, err)
	}
	plan, err := entry.Find(si.Spec.ServiceName, si.Spec.PlanName)
	if err != nil {
		return false, fmt.Errorf("unbinding %s/%s: %w", b.Namespace, b.Name, err)
	}
	res := r.Protocol.Carry(ctx, brokercall.ForBinding(v1alpha1.VerbUnbind, b, &si, entry, plan, r.Protocol.Lockstep("", brokercall.ReasonFinalizer)))
	done, err := brokered.Removed(res)
	if err != nil {
		return false, fmt.Errorf("unbinding %s/%s at broker %q: %w", b.Namespace, b.Name, entry.Broker, err)
	}
	return done, nil
}
