package journal

import (
	"fmt"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"

	"github.com/lockstep-dev/lockstep/api/v1alpha1"
)

// Operation is a broker operation in flight for one object.
type Operation struct {
	// ID is the operation's id, sent as X-Broker-API-Request-Identity.
	ID string
	// Verb is what was asked of the broker.
	Verb v1alpha1.Verb
	// User is who asked.
	User string
	// Started is when the operation began.
	Started time.Time
	// Record names the operation's BrokerOperation.
	Record string
	// Namespace and Name are the object the operation changes, for a
	// holder read back from a lock: a lock keyed by an external id may be
	// held for another object than the one asking for it.
	Namespace, Name string
	// Kind and APIGroup are the kind of that object, and its group when
	// that is not lockstep.dev (a typed kind); Kind is empty for a holder
	// read back from a lock that does not say (written by a replica of a
	// release that does not write it), which is taken to be of the kind of
	// the object asking.
	Kind     v1alpha1.TargetKind
	APIGroup string
	// Carried is the operation's record as it is to be written, carried
	// by the lock until the record itself is (see Carrier.Run); nil for
	// a holder read back from a lock that carries none.
	Carried *v1alpha1.BrokerOperation
	// Version is the resourceVersion of the lock as the operation wrote
	// it (set by TryAcquire), so that it can be released without reading
	// it first (Leases.ReleaseAt).
	Version string
}

// Repeats reports whether the operation is change asked for by user: the
// same verb of the same spec of the same object, by the same user. The
// API server asks the webhooks again for a request whose webhook call was
// cut short (the replica serving it stopped), and the retry then finds
// the lock held by its own first try.
func (o *Operation) Repeats(change Change, user authenticationv1.UserInfo) bool {
	if o == nil || o.Carried == nil {
		return false
	}
	who := o.Carried.Spec.Requester
	return ChangeOf(o.Carried) == change && who.Username == user.Username && who.UID == user.UID
}

// About reports whether the operation changes the object key names (a
// holder read back from a lock that does not name its object is taken
// to; one that does not name its kind is taken to be of key's): objects
// of different kinds may share a namespace, a name and a lock.
func (o *Operation) About(key Key) bool {
	if o.Name == "" {
		return true
	}
	sameKind := o.Kind == "" || (o.Kind == key.Kind && o.APIGroup == key.APIGroup)
	return sameKind && o.Namespace == key.Namespace && o.Name == key.Name
}

// String describes the operation for a person: verb, user, age, record.
func (o *Operation) String() string {
	if o == nil {
		return "another operation, which took the lock a moment ago"
	}
	name := o.Record
	if name == "" {
		name = o.ID
	}
	return fmt.Sprintf("%s by %q, started %s ago (operation %s)", o.Verb, o.User, time.Since(o.Started).Round(time.Second), name)
}
