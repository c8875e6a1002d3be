package journal

import (
	"context"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
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
// instance. When the journal records that the broker confirmed the
// deprovision (the usual case) it removes the finalizer at once; while the
// journal's record has no final answer yet it waits for it; only when
// there is no record at all did the delete bypass admission (webhook down
// or not installed), and it deprovisions first. An instance whose reconcile
// policy keeps the broker's instance on delete (detach-on-delete, observe)
// is let go without a broker call.
type InstanceFinalizer struct {
	Client client.Client
	// APIReader reads the journal past the cache before the finalizer
	// concludes that a delete bypassed admission.
	APIReader client.Reader
	// Namespace is lockstep's namespace (records of deletes in a namespace
	// being deleted live there).
	Namespace string
	Catalogs  *catalog.Cache
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
	recorded, err := DeleteConfirmed, error(nil)
	if !v1alpha1.KeepsBrokerOnDelete(&si) { // else the broker keeps the instance
		recorded, err = deleteRecorded(ctx, r.Client, r.APIReader, r.Namespace, si.Namespace, si.UID, v1alpha1.VerbDeprovision)
	}
	if err != nil {
		return ctrl.Result{}, err
	}
	switch recorded {
	case DeleteUnderWay:
		return ctrl.Result{RequeueAfter: underWayRecheck}, nil
	case DeleteNotRecorded:
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
		log.FromContext(ctx).Info("deprovisioned an instance whose delete bypassed admission (the journal holds no deprovision of it)", "instance", si.Name)
	}
	return done, nil
}

// underWayRecheck is how soon a finalizer looks again at a delete whose
// record has no final answer yet.
const underWayRecheck = time.Second

// deleteRecorded is DeleteRecorded read from the cache, and read again past
// it before concluding that nothing was recorded: a record written a moment
// ago may not have reached the cache yet, and a finalizer that missed it
// would delete at the broker a second time.
func deleteRecorded(ctx context.Context, cached, direct client.Reader, home, namespace string, uid types.UID, verb v1alpha1.Verb) (DeleteRecord, error) {
	recorded, err := DeleteRecorded(ctx, cached, home, namespace, uid, verb)
	if err != nil || recorded != DeleteNotRecorded || direct == nil {
		return recorded, err
	}
	return DeleteRecorded(ctx, direct, home, namespace, uid, verb)
}
