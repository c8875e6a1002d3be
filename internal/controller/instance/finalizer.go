package instance

import (
	"context"
	"fmt"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/lockstep-dev/lockstep/api/v1alpha1"
	"github.com/lockstep-dev/lockstep/internal/brokercall"
	"github.com/lockstep-dev/lockstep/internal/controller/brokered"
)

// finalize removes the lockstep.dev/broker finalizer from an instance
// being deleted once the broker no longer holds the instance, deprovisioning
// it first when the delete bypassed admission (see brokered.Finalize).
func (r *Reconciler) finalize(ctx context.Context, si *v1alpha1.ServiceInstance) (ctrl.Result, error) {
	return brokered.Finalize(ctx, r.journalReaders(), si, brokered.Removal{
		Kind: kind, Verb: v1alpha1.VerbDeprovision,
		Remove: func(ctx context.Context) (bool, error) { return r.deprovision(ctx, si) },
	})
}

// deprovision asks the broker to delete an instance whose delete bypassed
// admission, as a journaled operation lockstep makes on its own. It
// reports done when the broker no longer holds it.
func (r *Reconciler) deprovision(ctx context.Context, si *v1alpha1.ServiceInstance) (bool, error) {
	ctx, cancel := context.WithTimeout(ctx, r.Timeout)
	defer cancel()
	entry, err := r.Catalogs.Wait(ctx, si.Spec.BrokerName)
	if err != nil {
		return false, fmt.Errorf("deprovisioning instance %s/%s: %w", si.Namespace, si.Name, err)
	}
	plan, err := entry.Find(si.Spec.ServiceName, si.Spec.PlanName)
	if err != nil {
		return false, fmt.Errorf("deprovisioning instance %s/%s: %w", si.Namespace, si.Name, err)
	}
	res := r.Protocol.Carry(ctx, brokercall.ForInstance(v1alpha1.VerbDeprovision, si, entry, plan, r.Protocol.Lockstep("", brokercall.ReasonFinalizer)))
	done, err := brokered.Removed(res)
	if err != nil {
		return false, fmt.Errorf("deprovisioning instance %s/%s at broker %q: %w", si.Namespace, si.Name, entry.Broker, err)
	}
	if done {
		log.FromContext(ctx).Info("deprovisioned an instance whose delete bypassed admission (the journal holds no deprovision of it)", "instance", si.Name)
	}
	return done, nil
}
