package instance

import (
	"context"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/lockstep-dev/lockstep/api/v1alpha1"
	"github.com/lockstep-dev/lockstep/internal/journal"
	"github.com/lockstep-dev/lockstep/internal/osbclient"
)

// finalize removes the lockstep.dev/broker finalizer from an instance
// being deleted once the broker no longer holds the instance. When the
// journal records that the broker confirmed the deprovision (the usual
// case) it removes the finalizer at once; while the journal's record has no
// final answer yet it waits for it; only when there is no record at all did
// the delete bypass admission (webhook down or not installed), and it
// deprovisions first. An instance whose reconcile policy keeps the broker's
// instance on delete (detach-on-delete, observe) is let go without a
// broker call.
func (r *Reconciler) finalize(ctx context.Context, si *v1alpha1.ServiceInstance) (ctrl.Result, error) {
	if !controllerutil.ContainsFinalizer(si, v1alpha1.Finalizer) {
		return ctrl.Result{}, nil
	}
	recorded, err := journal.DeleteConfirmed, error(nil)
	if !v1alpha1.KeepsBrokerOnDelete(si) { // else the broker keeps the instance
		recorded, err = journal.DeleteRecorded(ctx, r.Client, r.APIReader, r.Namespace, si.Namespace, si.UID, v1alpha1.VerbDeprovision)
	}
	if err != nil {
		return ctrl.Result{}, err
	}
	switch recorded {
	case journal.DeleteUnderWay:
		return ctrl.Result{RequeueAfter: underWayRecheck}, nil
	case journal.DeleteNotRecorded:
		done, err := r.deprovision(ctx, si)
		if err != nil {
			return ctrl.Result{}, err
		}
		if !done {
			return ctrl.Result{RequeueAfter: 5 * time.Second}, nil
		}
	}
	patch := client.MergeFrom(si.DeepCopy())
	controllerutil.RemoveFinalizer(si, v1alpha1.Finalizer)
	if err := r.Client.Patch(ctx, si, patch); err != nil && !apierrors.IsNotFound(err) {
		return ctrl.Result{}, fmt.Errorf("removing the finalizer of instance %s/%s: %w", si.Namespace, si.Name, err)
	}
	return ctrl.Result{}, nil
}

// deprovision asks the broker to delete an instance whose delete bypassed
// admission. It reports done when the broker no longer holds it.
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
	done, err := entry.Client.Remove(ctx, osbclient.RequestMeta{}, osbclient.Removal{InstanceID: si.Spec.ExternalID, ServiceID: plan.Service.ID, PlanID: plan.Plan.ID}, r.Poll)
	if err != nil {
		return false, fmt.Errorf("deprovisioning instance %s/%s at broker %q: %w", si.Namespace, si.Name, entry.Broker, err)
	}
	if done {
		log.FromContext(ctx).Info("deprovisioned an instance whose delete bypassed admission (the journal holds no deprovision of it)", "instance", si.Name)
	}
	return done, nil
}

// underWayRecheck is how soon a finalizer looks again at a delete whose
// record has no final answer yet.
const underWayRecheck = time.Second
