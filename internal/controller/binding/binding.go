// The binding controller adds and removes the lockstep.dev/broker
// finalizer (patch), writes status, and watches the credential Secrets it
// wrote: only those labelled lockstep.dev/binding-uid are in its cache
// (RBAC cannot restrict by label), as trimmed metadata. It lets the binding adopt its Secret
// (patch: ownerReference), removes it after unbind (delete), and finds by
// label the Secrets of a binding that never persisted (list).
//
// +kubebuilder:rbac:groups=lockstep.dev,resources=servicebindings,verbs=get;list;watch;patch
// +kubebuilder:rbac:groups=lockstep.dev,resources=servicebindings/status,verbs=patch
// +kubebuilder:rbac:groups="",resources=secrets,verbs=list;watch;patch;delete
// +kubebuilder:rbac:groups=services.lockstep.dev,resources=*,verbs=get
package binding

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/lockstep-dev/lockstep/api/v1alpha1"
	"github.com/lockstep-dev/lockstep/internal/brokercall"
	"github.com/lockstep-dev/lockstep/internal/controller/brokered"
	"github.com/lockstep-dev/lockstep/internal/credentials"
	"github.com/lockstep-dev/lockstep/internal/typed/object"
)

// New returns the controller of ServiceBindings: the reconciler of
// broker-backed objects, of this Kind. secrets reads the binding Secrets
// lockstep wrote (the manager's cache, which holds only those); a Secret
// not there is read through c.Client.
func New(c brokered.Config, secrets client.Reader) *brokered.Reconciler[*v1alpha1.ServiceBinding, v1alpha1.ServiceBindingStatus] {
	return &brokered.Reconciler[*v1alpha1.ServiceBinding, v1alpha1.ServiceBindingStatus]{Config: c,
		Kind: Kind{Client: c.Client, Secrets: credentials.CacheFirst{Cache: secrets, Direct: c.Client}}}
}

// Kind is what is particular to ServiceBindings (see brokered.Kind).
type Kind struct {
	// Client reads a binding's instance, and writes its Secret.
	Client client.Client
	// Secrets reads the binding's Secret.
	Secrets client.Reader
}

var _ brokered.Kind[*v1alpha1.ServiceBinding, v1alpha1.ServiceBindingStatus] = Kind{}

const kind = v1alpha1.KindServiceBinding

func (Kind) Kind() v1alpha1.TargetKind     { return kind }
func (Kind) New() *v1alpha1.ServiceBinding { return &v1alpha1.ServiceBinding{} }
func (Kind) Delete() v1alpha1.Verb         { return v1alpha1.VerbUnbind }

func (Kind) Status(b *v1alpha1.ServiceBinding) *v1alpha1.ServiceBindingStatus { return &b.Status }

func (Kind) Conditions(s *v1alpha1.ServiceBindingStatus) *[]metav1.Condition { return &s.Conditions }

// Watch adds the Secrets lockstep wrote for bindings, as metadata (the
// cache holds no Secret's data).
func (Kind) Watch(b *builder.Builder) *builder.Builder {
	return b.WatchesMetadata(&corev1.Secret{}, handler.EnqueueRequestsFromMapFunc(bindingOfSecret))
}

// bindingOfSecret maps a Secret lockstep wrote to its binding.
func bindingOfSecret(_ context.Context, o client.Object) []reconcile.Request {
	name := credentials.BindingName(o)
	if name == "" {
		return nil
	}
	return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: o.GetNamespace(), Name: name}}}
}

// Release deletes the binding's Secret (never one lockstep did not write).
func (k Kind) Release(ctx context.Context, b *v1alpha1.ServiceBinding) error {
	return credentials.Delete(ctx, k.Secrets, k.Client, b)
}

// Instance reads the binding's instance: a ServiceInstance, or the model
// of an object of a typed kind.
func (k Kind) Instance(ctx context.Context, b *v1alpha1.ServiceBinding) (*v1alpha1.ServiceInstance, error) {
	si, err := object.Instance(ctx, k.Client, b.Spec.InstanceKind, client.ObjectKey{Namespace: b.Namespace, Name: b.Spec.InstanceName})
	if err != nil {
		return nil, fmt.Errorf("reading its instance: %w", err)
	}
	return si, nil
}

func (Kind) Request(verb v1alpha1.Verb, b *v1alpha1.ServiceBinding, t brokered.Target, who brokercall.Who) brokercall.Request {
	return brokercall.ForBinding(verb, b, t.Instance, t.Entry, t.Plan, who)
}

func (Kind) GoneAdvice(b *v1alpha1.ServiceBinding) string {
	return fmt.Sprintf("its credentials may no longer work: kubectl delete servicebinding %s -n %s, then create it again", b.Name, b.Namespace)
}
