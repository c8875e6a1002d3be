package journal

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/lockstep-dev/lockstep/api/v1alpha1"
	"github.com/lockstep-dev/lockstep/internal/broker"
	"github.com/lockstep-dev/lockstep/internal/catalog"
	"github.com/lockstep-dev/lockstep/internal/credentials"
)

// BindingFinalizer looks after ServiceBindings once they exist: it gives a
// live binding's Secret its ownerReference, and for a binding being deleted
// it removes the Secret and then the lockstep.dev/broker finalizer, once the
// broker no longer holds the binding (confirmed during admission, or unbound
// here when the delete bypassed admission).
type BindingFinalizer struct {
	Client client.Client
	// APIReader reads the journal past the cache before the finalizer
	// concludes that a delete bypassed admission.
	APIReader client.Reader
	// Namespace is lockstep's namespace (records of deletes in a namespace
	// being deleted live there).
	Namespace string
	Catalogs  *catalog.Cache
	Poll      broker.PollOptions
	Timeout   time.Duration
}

// SetupWithManager registers the reconciler.
func (r *BindingFinalizer) SetupWithManager(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).For(&v1alpha1.ServiceBinding{}).
		Watches(&corev1.Secret{}, handler.EnqueueRequestsFromMapFunc(bindingOfSecret)).
		Named("servicebinding").Complete(r)
}

// Reconcile implements reconcile.Reconciler.
func (r *BindingFinalizer) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	var b v1alpha1.ServiceBinding
	if err := r.Client.Get(ctx, req.NamespacedName, &b); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if b.DeletionTimestamp == nil {
		if err := credentials.Adopt(ctx, r.Client, &b); err != nil {
			return ctrl.Result{}, err
		}
		return ctrl.Result{}, r.writeStatus(ctx, &b)
	}
	if !controllerutil.ContainsFinalizer(&b, v1alpha1.Finalizer) {
		return ctrl.Result{}, nil
	}
	recorded, err := DeleteConfirmed, error(nil)
	if !v1alpha1.KeepsBrokerOnDelete(&b) { // else the broker keeps the binding
		recorded, err = deleteRecorded(ctx, r.Client, r.APIReader, r.Namespace, b.Namespace, b.UID, v1alpha1.VerbUnbind)
	}
	if err != nil {
		return ctrl.Result{}, err
	}
	switch recorded {
	case DeleteUnderWay:
		return ctrl.Result{RequeueAfter: underWayRecheck}, nil
	case DeleteNotRecorded:
		done, err := r.unbind(ctx, &b)
		if err != nil {
			return ctrl.Result{}, err
		}
		if !done {
			return ctrl.Result{RequeueAfter: 5 * time.Second}, nil
		}
	}
	if err := credentials.Delete(ctx, r.Client, &b); err != nil {
		return ctrl.Result{}, err
	}
	patch := client.MergeFrom(b.DeepCopy())
	controllerutil.RemoveFinalizer(&b, v1alpha1.Finalizer)
	if err := r.Client.Patch(ctx, &b, patch); err != nil && !apierrors.IsNotFound(err) {
		return ctrl.Result{}, fmt.Errorf("removing the finalizer of binding %s: %w", req.NamespacedName, err)
	}
	return ctrl.Result{}, nil
}

// unbind asks the broker to delete a binding whose delete bypassed
// admission. It reports done when the broker no longer holds it.
func (r *BindingFinalizer) unbind(ctx context.Context, b *v1alpha1.ServiceBinding) (bool, error) {
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
	done, err := removeAtBroker(ctx, entry.Client, brokerTarget{binding: true, instanceID: si.Spec.ExternalID,
		bindingID: b.Spec.ExternalID, serviceID: plan.Service.ID, planID: plan.Plan.ID}, r.Poll)
	if err != nil {
		return false, fmt.Errorf("unbinding %s/%s at broker %q: %w", b.Namespace, b.Name, entry.Broker, err)
	}
	return done, nil
}

// writeStatus sets the Ready condition: True once the credentials are in
// the binding's Secret.
func (r *BindingFinalizer) writeStatus(ctx context.Context, b *v1alpha1.ServiceBinding) error {
	stored, err := credentials.Stored(ctx, r.Client, b)
	if err != nil {
		return err
	}
	cond := metav1.Condition{Type: v1alpha1.ConditionReady, ObservedGeneration: b.Generation,
		Status: metav1.ConditionFalse, Reason: "CredentialsPending", Message: "waiting for the broker to finish the bind"}
	switch {
	case stored:
		cond.Status, cond.Reason, cond.Message = metav1.ConditionTrue, "CredentialsStored", fmt.Sprintf("credentials are in Secret %q", b.Spec.SecretName)
	case bound(b):
		cond.Reason, cond.Message = "CredentialsMissing", fmt.Sprintf(
			"the bind finished, but Secret %q with its credentials is gone (deleted?); the broker gives credentials only once: delete this binding and create it again for new ones",
			b.Spec.SecretName)
	}
	patch := client.MergeFrom(b.DeepCopy())
	if !meta.SetStatusCondition(&b.Status.Conditions, cond) && b.Status.ObservedGeneration == b.Generation {
		return nil
	}
	b.Status.ObservedGeneration = b.Generation
	if err := r.Client.Status().Patch(ctx, b, patch); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("writing the status of binding %s/%s: %w", b.Namespace, b.Name, err)
	}
	return nil
}

// bound reports whether the binding's bind finished at the broker (its
// credentials were written then).
func bound(b *v1alpha1.ServiceBinding) bool {
	last := b.Status.LastOperation
	return last != nil && (last.Verb == v1alpha1.VerbBind || last.Verb == v1alpha1.VerbAdopt) && last.State == v1alpha1.StateSucceeded
}

// bindingOfSecret maps a Secret lockstep wrote to its binding.
func bindingOfSecret(_ context.Context, o client.Object) []reconcile.Request {
	name := credentials.BindingName(o)
	if name == "" {
		return nil
	}
	return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: o.GetNamespace(), Name: name}}}
}
