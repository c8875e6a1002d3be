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
)

// New returns the controller of ServiceInstances: the reconciler of
// broker-backed objects, of this Kind.
func New(c brokered.Config) *brokered.Reconciler[*v1alpha1.ServiceInstance, v1alpha1.ServiceInstanceStatus] {
	return &brokered.Reconciler[*v1alpha1.ServiceInstance, v1alpha1.ServiceInstanceStatus]{Config: c, Kind: Kind{Secrets: c.APIReader, Protocol: c.Protocol}}
}

// Kind is what is particular to ServiceInstances (see brokered.Kind).
type Kind struct {
	// Secrets reads the Secrets of spec.parametersFrom again for a
	// correction.
	Secrets client.Reader
	// Protocol carries out corrections.
	Protocol *brokercall.Protocol
}

var _ brokered.Kind[*v1alpha1.ServiceInstance, v1alpha1.ServiceInstanceStatus] = Kind{}

const kind = v1alpha1.KindServiceInstance

func (Kind) Kind() v1alpha1.TargetKind                 { return kind }
func (Kind) New() *v1alpha1.ServiceInstance            { return &v1alpha1.ServiceInstance{} }
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

func (Kind) GoneAdvice(si *v1alpha1.ServiceInstance) string {
	return fmt.Sprintf("kubectl delete serviceinstance %s -n %s lets go of this object", si.Name, si.Namespace)
}
