package brokered

import (
	"context"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/lockstep-dev/lockstep/api/v1alpha1"
	"github.com/lockstep-dev/lockstep/internal/brokercall"
	"github.com/lockstep-dev/lockstep/internal/catalog"
	"github.com/lockstep-dev/lockstep/internal/controller/resync"
)

// Kind is what the Reconciler needs to know of one kind of broker-backed
// object: T is a pointer to the object, S its status. Everything else (the
// order of a pass, resync's schedule, lock, fetch and comparison, the
// finalizer, the status write) is the same for every kind.
type Kind[T client.Object, S any] interface {
	// Kind is the kind the journal's records and the locks name.
	Kind() v1alpha1.TargetKind
	// New returns an empty object to read into.
	New() T
	// Status points at obj's status, Conditions at a status's conditions.
	Status(obj T) *S
	Conditions(status *S) *[]metav1.Condition
	// Watch adds what the controller watches besides the objects and
	// their BrokerOperations.
	Watch(b *builder.Builder) *builder.Builder

	// FromJournal folds what the object's operation records say into
	// status.
	FromJournal(obj T, status *S, records []v1alpha1.BrokerOperation)
	// Observe writes into status what the cluster says of the object
	// besides the journal; it runs last in a pass, after resync.
	Observe(ctx context.Context, obj T, status *S) error
	// Confirmed reports whether the broker confirmed the object at least
	// once: only then is it compared with what the broker holds.
	Confirmed(status *S) bool

	// Instance is the instance obj lives on (an instance's is itself):
	// its spec names the broker, service and plan.
	Instance(ctx context.Context, obj T) (*v1alpha1.ServiceInstance, error)
	// Request is the broker call of verb about obj at t, for who.
	Request(verb v1alpha1.Verb, obj T, t Target, who brokercall.Who) brokercall.Request

	// Applied is what lockstep last applied of obj at the broker, as
	// resync compares it.
	Applied(obj T, status *S, t Target) Applied
	// Held is what the broker holds, as resync compares it; it writes
	// into status what the broker reports of the object besides (an
	// instance's dashboard URL), and nothing it must not keep (a
	// binding's credentials).
	Held(status *S, held brokercall.Held) resync.State
	// Rekey writes into status, for an object found in sync whose digest
	// of parameters from Secrets was made under an older key (or before
	// digests were keyed), the digests of held's parameters under the
	// current key: each only where the broker's parameters verify
	// against the digest it replaces.
	Rekey(status *S, t Target, held resync.State)
	// Drifted is what the kind does about drift d: it returns what is
	// left of it (d, or less: what is no drift for the kind), and what
	// lockstep did, appended to the message that names the drift.
	Drifted(ctx context.Context, obj T, t Target, applied Applied, held resync.State, d resync.Drift) (resync.Drift, string)
	// GoneAdvice is what a person does about an object its broker no
	// longer holds.
	GoneAdvice(obj T) string

	// Delete is the broker call that deletes the object there
	// (VerbDeprovision, VerbUnbind).
	Delete() v1alpha1.Verb
	// Release runs once the broker no longer holds an object being
	// deleted, before its finalizer goes.
	Release(ctx context.Context, obj T) error
}

// Target is where an object lives at its broker: its instance, the
// broker's catalog, and the plan.
type Target struct {
	Instance *v1alpha1.ServiceInstance
	Entry    *catalog.Entry
	Plan     catalog.Plan
}

// Applied is what lockstep last applied of an object at its broker.
type Applied struct {
	resync.State
	// PlanName is the applied plan's name, for messages.
	PlanName string
	// FromSecrets says that some parameters came from Secrets
	// (spec.parametersFrom): without a digest of what was sent, the
	// broker's parameters are then not compared, and never shown.
	FromSecrets bool
}
