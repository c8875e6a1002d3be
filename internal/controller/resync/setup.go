package resync

import (
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/lockstep-dev/lockstep/api/v1alpha1"
)

// SetupWithManager registers the instance resync; it runs in the elected
// replica only (the manager's default for controllers).
func (r *Instances) SetupWithManager(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).Named("resync-instances").For(&v1alpha1.ServiceInstance{}).Complete(r)
}

// SetupWithManager registers the binding resync; it runs in the elected
// replica only.
func (r *Bindings) SetupWithManager(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).Named("resync-bindings").For(&v1alpha1.ServiceBinding{}).Complete(r)
}
