package journal

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
	"github.com/lockstep-dev/lockstep/internal/broker"
	"github.com/lockstep-dev/lockstep/internal/catalog"
)

// InstanceFinalizer removes the lockstep.dev/broker finalizer from a
// ServiceInstance being deleted once the broker no longer holds the
// instance. When the journal records that the broker confirmed the deprovision
// (the usual case) it
// removes the finalizer at once; otherwise the delete bypassed admission
// (webhook down or not installed) and it deprovisions first.
type InstanceFinalizer struct {
	Client   client.Client
	Catalogs *catalog.Cache
	// Poll tunes polling of an asynchronous deprovision.
	Poll broker.PollOptions
	// Timeout bounds one deprovision attempt.
	Timeout time.Duration
}

// SetupWithManager registers the reconciler.
func (r *InstanceFinalizer) SetupWithManager(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).For(&v1alpha1.ServiceInstance{}).Named("serviceinstance-finalizer").Complete(r)
}

// Reconcile implements reconcile.Reconciler.
func (r *InstanceFinalizer) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	var si v1alpha1.ServiceInstance
	if err := r.Client.Get(ctx, req.NamespacedName, &si); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if si.DeletionTimestamp == nil || !controllerutil.ContainsFinalizer(&si, v1alpha1.Finalizer) {
		return ctrl.Result{}, nil
	}
	if !Confirmed(ctx, r.Client, si.Namespace, si.UID, v1alpha1.VerbDeprovision) {
		done, err := r.deprovision(ctx, &si)
		if err != nil {
			return ctrl.Result{}, err
		}
		if !done {
			return ctrl.Result{RequeueAfter: 5 * time.Second}, nil
		}
	}
	patch := client.MergeFrom(si.DeepCopy())
	controllerutil.RemoveFinalizer(&si, v1alpha1.Finalizer)
	if err := r.Client.Patch(ctx, &si, patch); err != nil && !apierrors.IsNotFound(err) {
		return ctrl.Result{}, fmt.Errorf("removing the finalizer of instance %s: %w", req.NamespacedName, err)
	}
	return ctrl.Result{}, nil
}

// deprovision asks the broker to delete an instance whose delete bypassed
// admission. It reports done when the broker no longer holds it.
func (r *InstanceFinalizer) deprovision(ctx context.Context, si *v1alpha1.ServiceInstance) (bool, error) {
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
	done, err := removeAtBroker(ctx, entry.Client, brokerTarget{instanceID: si.Spec.ExternalID, serviceID: plan.Service.ID, planID: plan.Plan.ID}, r.Poll)
	if err != nil {
		return false, fmt.Errorf("deprovisioning instance %s/%s at broker %q: %w", si.Namespace, si.Name, entry.Broker, err)
	}
	if done {
		log.FromContext(ctx).Info("deprovisioned an instance whose delete bypassed admission", "instance", si.Name)
	}
	return done, nil
}
