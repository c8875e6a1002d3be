// The instance controller adds and removes the lockstep.dev/broker
// finalizer (patch) and writes status from what the broker confirmed.
//
// +kubebuilder:rbac:groups=lockstep.dev,resources=serviceinstances,verbs=get;list;watch;patch
// +kubebuilder:rbac:groups=lockstep.dev,resources=serviceinstances/status,verbs=patch
package instance

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/lockstep-dev/lockstep/api/v1alpha1"
	"github.com/lockstep-dev/lockstep/internal/brokercall"
	"github.com/lockstep-dev/lockstep/internal/controller/brokered"
	"github.com/lockstep-dev/lockstep/internal/typed/object"
)

// New returns the controller of ServiceInstances: the reconciler of
// broker-backed objects, of this Kind.
func New(c brokered.Config) *brokered.Reconciler[*v1alpha1.ServiceInstance, v1alpha1.ServiceInstanceStatus] {
	return &brokered.Reconciler[*v1alpha1.ServiceInstance, v1alpha1.ServiceInstanceStatus]{Config: c, Kind: Kind{Secrets: c.APIReader, Protocol: c.Protocol}}
}

// NewTyped returns the controller of the objects of a typed kind: the
// reconciler of broker-backed objects, of this Kind, over the model of
// those objects (a ServiceInstance whose TypeMeta is the typed kind, see
// internal/typed/object). c's Client and APIReader read and write them
// as the model; internal/controller/typedkinds makes them.
func NewTyped(c brokered.Config, typed object.Kind) *brokered.Reconciler[*v1alpha1.ServiceInstance, v1alpha1.ServiceInstanceStatus] {
	return &brokered.Reconciler[*v1alpha1.ServiceInstance, v1alpha1.ServiceInstanceStatus]{Config: c,
		Kind: Kind{Secrets: c.APIReader, Protocol: c.Protocol, Typed: &typed}}
}

// Kind is what is particular to ServiceInstances (see brokered.Kind), and
// to the objects of a typed kind, which are instances too.
type Kind struct {
	// Secrets reads the Secrets of spec.parametersFrom again for a
	// correction.
	Secrets client.Reader
	// Protocol carries out corrections.
	Protocol *brokercall.Protocol
	// Typed, when set, is the typed kind whose objects are reconciled,
	// as the model; nil: ServiceInstances.
	Typed *object.Kind
}

var _ brokered.Kind[*v1alpha1.ServiceInstance, v1alpha1.ServiceInstanceStatus] = Kind{}

// Kind is the kind the journal's records and the locks name:
// ServiceInstance, or the typed kind.
func (k Kind) Kind() v1alpha1.TargetKind {
	if k.Typed != nil {
		return v1alpha1.TargetKind(k.Typed.GVK.Kind)
	}
	return v1alpha1.KindServiceInstance
}

// New is an empty instance; of a typed kind, its TypeMeta says which.
func (k Kind) New() *v1alpha1.ServiceInstance {
	si := &v1alpha1.ServiceInstance{}
	if k.Typed != nil {
		si.SetGroupVersionKind(k.Typed.GVK)
	}
	return si
}

func (Kind) Delete() v1alpha1.Verb                     { return v1alpha1.VerbDeprovision }
func (Kind) Watch(b *builder.Builder) *builder.Builder { return b }

func (Kind) Status(si *v1alpha1.ServiceInstance) *v1alpha1.ServiceInstanceStatus { return &si.Status }

func (Kind) Conditions(s *v1alpha1.ServiceInstanceStatus) *[]metav1.Condition { return &s.Conditions }

// Observe: the journal and the broker say all there is of an instance.
func (Kind) Observe(context.Context, *v1alpha1.ServiceInstance, *v1alpha1.ServiceInstanceStatus) error {
	return nil
}

// Release: nothing of an instance stays in the cluster once its broker
// deleted it.
func (Kind) Release(context.Context, *v1alpha1.ServiceInstance) error { return nil }

// Confirmed reports whether the broker confirmed the instance at least
// once.
func (Kind) Confirmed(status *v1alpha1.ServiceInstanceStatus) bool {
	return status.LastApplied != nil || meta.FindStatusCondition(status.Conditions, v1alpha1.ConditionReady) != nil
}

// Instance is the instance itself.
func (Kind) Instance(_ context.Context, si *v1alpha1.ServiceInstance) (*v1alpha1.ServiceInstance, error) {
	return si, nil
}

func (Kind) Request(verb v1alpha1.Verb, si *v1alpha1.ServiceInstance, t brokered.Target, who brokercall.Who) brokercall.Request {
	return brokercall.ForInstance(verb, si, t.Entry, t.Plan, who)
}

func (k Kind) GoneAdvice(si *v1alpha1.ServiceInstance) string {
	resource := "serviceinstance"
	if k.Typed != nil {
		resource = k.Typed.Plural + "." + k.Typed.GVK.Group
	}
	return fmt.Sprintf("kubectl delete %s %s -n %s lets go of this object", resource, si.Name, si.Namespace)
}
