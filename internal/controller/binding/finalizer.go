package binding

import (
	"context"
	"fmt"
	"time"

	"github.com/lockstep-dev/lockstep/api/v1alpha1"
	"github.com/lockstep-dev/lockstep/internal/credentials"
	"github.com/lockstep-dev/lockstep/internal/journal"
	"github.com/lockstep-dev/lockstep/internal/osbclient"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
)

// finalize removes the Secret of a binding being deleted and then the
// lockstep.dev/broker finalizer, once the broker no longer holds the
// binding: confirmed during admission (the journal says so), or unbound
// here when the delete bypassed admission. A binding whose reconcile
// policy keeps the broker's binding on delete is let go without a broker
// call.
func (r *Reconciler) finalize(ctx context.Context, b *v1alpha1.ServiceBinding) (ctrl.Result, error) {
	if !controllerutil.ContainsFinalizer(b, v1alpha1.Finalizer) {
		return ctrl.Result{}, nil
	}
	recorded, err := journal.DeleteConfirmed, error(nil)
	if !v1alpha1.KeepsBrokerOnDelete(b) { // else the broker keeps the binding
		recorded, err = journal.DeleteRecorded(ctx, r.Client, r.APIReader, r.Namespace, b.Namespace, b.UID, v1alpha1.VerbUnbind)
	}
	if err != nil {
		return ctrl.Result{}, err
	}
	switch recorded {
	case journal.DeleteUnderWay:
		return ctrl.Result{RequeueAfter: underWayRecheck}, nil
	case journal.DeleteNotRecorded:
		done, err := r.unbind(ctx, b)
		if err != nil {
			return ctrl.Result{}, err
		}
		if !done {
			return ctrl.Result{RequeueAfter: 5 * time.Second}, nil
		}
	}
	if err := credentials.Delete(ctx, r.Client, b); err != nil {
		return ctrl.Result{}, err
	}
	patch := client.MergeFrom(b.DeepCopy())
	controllerutil.RemoveFinalizer(b, v1alpha1.Finalizer)
	if err := r.Client.Patch(ctx, b, patch); err != nil && !apierrors.IsNotFound(err) {
		return ctrl.Result{}, fmt.Errorf("removing the finalizer of binding %s/%s: %w", b.Namespace, b.Name, err)
	}
	return ctrl.Result{}, nil
}

// underWayRecheck is how soon a finalizer looks again at a delete whose
// record has no final answer yet.
const underWayRecheck = time.Second

// unbind asks the broker to delete a binding whose delete bypassed
// admission. It reports done when the broker no longer holds it.
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
	done, err := entry.Client.Remove(ctx, osbclient.RequestMeta{}, osbclient.Removal{InstanceID: si.Spec.ExternalID,
		BindingID: b.Spec.ExternalID, ServiceID: plan.Service.ID, PlanID: plan.Plan.ID}, r.Poll)
	if err != nil {
		return false, fmt.Errorf("unbinding %s/%s at broker %q: %w", b.Namespace, b.Name, entry.Broker, err)
	}
	return done, nil
}
