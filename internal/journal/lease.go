package journal

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"regexp"
	"strings"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/lockstep-dev/lockstep/api/v1alpha1"
)

// Annotations on a lock's Lease describing the operation that holds it and
// the object it locks.
const (
	annotationVerb = "lockstep.dev/verb"
	annotationUser = "lockstep.dev/user"
	// AnnotationNamespace names the namespace of the object a lock locks
	// (locks all live in lockstep's namespace).
	AnnotationNamespace = "lockstep.dev/namespace"
	annotationName      = "lockstep.dev/name"
	// annotationKind and annotationGroup name the kind of the object a
	// lock locks, and its group when that is not lockstep.dev (a typed
	// kind): objects of different kinds that name one external id share
	// its lock.
	annotationKind  = "lockstep.dev/kind"
	annotationGroup = "lockstep.dev/group"
	// annotationCarried holds the operation's record as it is to be
	// written (JSON): the lock is the write-ahead record until the record
	// itself is written. Every release reads it under this key, so that
	// a lock taken by a replica of another release is read too.
	annotationCarried = "lockstep.dev/intent"
	// LabelLock marks lockstep's per-object locks among the Leases of its
	// namespace, so that the operations reconciler lists only those.
	LabelLock = "lockstep.dev/lock"
)

// retryInterval is how often Acquire and AwaitFree look again at a lock
// held by another operation while they wait.
const retryInterval = 50 * time.Millisecond

// Key names the object a lock protects. An instance or binding is locked
// by its kind and external id, the broker's id of what it holds: the id is
// create-only, so it names one object for the object's whole life, and two
// creates that name the same id, in any namespaces, contend for one lock,
// so that at most one of them reaches the broker. Namespace and name say
// which object holds the lock, for messages and for the operations
// reconciler; Kind and APIGroup say of which kind it is (ServiceInstances
// and the objects of typed kinds share the locks of instance ids).
type Key struct {
	Kind v1alpha1.TargetKind
	// APIGroup is Kind's group when it is not lockstep.dev: the group of
	// typed kinds.
	APIGroup   string
	Namespace  string
	Name       string
	ExternalID string
}

// String is "Kind namespace/name".
func (k Key) String() string { return string(k.Kind) + " " + k.Namespace + "/" + k.Name }

// KeyOf is the key of the lock of obj, of kind; its group is obj's (an
// object of a typed kind, or its model, carries it in its TypeMeta).
func KeyOf(kind v1alpha1.TargetKind, obj client.Object) Key {
	key := Key{Kind: kind, Namespace: obj.GetNamespace(), Name: obj.GetName(), ExternalID: v1alpha1.ExternalIDOf(obj)}
	if group := obj.GetObjectKind().GroupVersionKind().Group; group != v1alpha1.GroupVersion.Group {
		key.APIGroup = group
	}
	return key
}

// KeyOfRecord is the key of the lock of the object an operation's record
// is about.
func KeyOfRecord(op *v1alpha1.BrokerOperation) Key {
	t := op.Spec.Target
	return Key{Kind: t.Kind, APIGroup: t.APIGroup, Namespace: TargetNamespace(op), Name: t.Name, ExternalID: t.ExternalID}
}

// LeaseName is the deterministic name of the key's Lease (all locks share
// lockstep's namespace): kind and external id; or, where the id is not a
// valid object name (capitals, underscores), the id made one with a hash
// of the id itself, so that distinct ids keep distinct locks. A key
// without an external id (lockstep gives every object one) is named by
// namespace and name instead, shortened with a hash of the whole when that
// would be longer than an object name may be.
func (k Key) LeaseName() string {
	prefix := "lockstep-instance-"
	if k.Kind == v1alpha1.KindServiceBinding {
		prefix = "lockstep-binding-"
	}
	if k.ExternalID != "" {
		name := prefix + k.ExternalID
		if plainName(name) || len(validation.IsDNS1123Subdomain(name)) == 0 {
			return name
		}
		sum := sha256.Sum256([]byte(k.ExternalID))
		return prefix + strings.Trim(notNameChars.ReplaceAllString(strings.ToLower(k.ExternalID), "-"), "-") + "-" + hex.EncodeToString(sum[:8])
	}
	name := prefix + k.Namespace + "." + k.Name
	if len(name) <= 253 {
		return name
	}
	sum := sha256.Sum256([]byte(k.Namespace + "/" + k.Name))
	return strings.TrimRight(name[:253-17], "-.") + "-" + hex.EncodeToString(sum[:8])
}

// plainName reports, without a regular expression, whether name is a
// valid object name made of lowercase letters, digits and inner dashes
// only, as every lock of a generated (UUID) external id is; a name it
// does not recognize is checked by the API machinery's validation.
func plainName(name string) bool {
	if name == "" || len(name) > validation.DNS1123SubdomainMaxLength || name[len(name)-1] == '-' || name[0] == '-' {
		return false
	}
	for i := range len(name) {
		c := name[i]
		if (c < 'a' || c > 'z') && (c < '0' || c > '9') && c != '-' {
			return false
		}
	}
	return true
}

// notNameChars are the runs of characters of a lowercased external id
// that are replaced by one '-' when the id is not a valid object name.
var notNameChars = regexp.MustCompile(`[^a-z0-9]+`)

// Leases is the lock across webhook replicas: at most one broker operation
// in flight per object, coordinated through the API server with one
// coordination.k8s.io Lease per object, created if absent. A lock whose
// holder stopped renewing it expires after Duration, so nothing stays
// locked forever; only a holder whose record is not written yet or still
// Pending keeps it until the operations reconciler settled that record
// (see live).
type Leases struct {
	Client client.Client
	// Namespace is where the Leases live: lockstep's own namespace, never
	// the object's, which may be being deleted and then takes no new
	// objects; and one namespace for all, so that objects of different
	// namespaces that name one external id share its lock. Empty means the
	// object's namespace (in tests of one namespace).
	Namespace string
	// Duration is how long a lock lasts without renewal.
	Duration time.Duration
	// Wait is how long Acquire waits for a lock held by another operation
	// (typically one whose commit is a moment away) before giving up.
	Wait time.Duration
	// Clock stamps the leases and judges their expiry; nil means the real
	// clock. Waiting (Wait) is on real time.
	Clock clock.PassiveClock
	// Released, when set, remembers the records whose locks this process
	// saw released, or is releasing, so that releasing one of them again
	// (the operations reconciler looks at every final record) costs no
	// request.
	Released *Recent
	// Deleted, when set, remembers the objects whose delete (deprovision
	// or unbind) this process carried out at the broker, so that their
	// finalizers go without reading the journal or the lock
	// (DeleteRecorded).
	Deleted *Recent
}

// Acquire takes the lock of key for op. When another live operation holds
// it (after waiting up to Wait), it returns that operation and false.
func (l *Leases) Acquire(ctx context.Context, key Key, op *Operation) (*Operation, bool, error) {
	return l.AcquireUnless(ctx, key, op, nil)
}

// AcquireUnless is Acquire that stops waiting as soon as enough(holder)
// says the holder makes the lock unnecessary (nil: never).
func (l *Leases) AcquireUnless(ctx context.Context, key Key, op *Operation, enough func(holder *Operation) bool) (*Operation, bool, error) {
	var (
		holder *Operation
		ok     bool
		err    error
	)
	// The condition uses ctx, not the poll's own context: with Wait zero
	// that one has already expired, and the one attempt must still be made.
	_ = wait.PollUntilContextTimeout(ctx, retryInterval, l.Wait, true, func(context.Context) (bool, error) {
		holder, ok, err = l.TryAcquire(ctx, key, op)
		return err != nil || ok || (enough != nil && enough(holder)), nil
	})
	return holder, ok, err
}

// TryAcquire takes the lock of key for op if it is free or expired,
// without waiting. When another live operation holds it, it returns that
// operation (nil when the lock changed hands meanwhile) and false.
func (l *Leases) TryAcquire(ctx context.Context, key Key, op *Operation) (*Operation, bool, error) {
	lease := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: l.namespace(key), Name: key.LeaseName()}}
	l.fill(lease, key, op)
	err := l.Client.Create(ctx, lease)
	if err == nil {
		op.Version = lease.ResourceVersion
		return nil, true, nil
	}
	if !apierrors.IsAlreadyExists(err) {
		return nil, false, fmt.Errorf("taking the lock of %s: %w", key, err)
	}
	var current coordinationv1.Lease
	if err := l.Client.Get(ctx, client.ObjectKeyFromObject(lease), &current); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, false, nil // released meanwhile; the next try takes it
		}
		return nil, false, fmt.Errorf("reading the lock of %s: %w", key, err)
	}
	live, err := l.live(ctx, &current)
	if err != nil {
		return nil, false, fmt.Errorf("reading the holder of the lock of %s: %w", key, err)
	}
	if live {
		return holderOf(&current), false, nil
	}
	// The holder stopped renewing: take the lock over, unless another
	// replica does so first (the update then conflicts).
	l.fill(&current, key, op)
	if err := l.Client.Update(ctx, &current); err != nil {
		if apierrors.IsConflict(err) {
			return nil, false, nil
		}
		return nil, false, fmt.Errorf("taking over the expired lock of %s: %w", key, err)
	}
	op.Version = current.ResourceVersion
	return nil, true, nil
}

// Renew extends the hold of the operation named record on the lock of key.
func (l *Leases) Renew(ctx context.Context, key Key, record string) error {
	var lease coordinationv1.Lease
	if err := l.Client.Get(ctx, l.objectKey(key), &lease); err != nil {
		return client.IgnoreNotFound(err)
	}
	if ptr.Deref(lease.Spec.HolderIdentity, "") != record {
		return nil
	}
	lease.Spec.RenewTime = &metav1.MicroTime{Time: l.clock().Now()}
	return client.IgnoreNotFound(l.Client.Update(ctx, &lease))
}

// Release frees the lock of key if the operation named record holds it.
// A lock this process saw released already is not read again: a lock that
// no longer names a record never names it again (every operation names a
// record of its own).
func (l *Leases) Release(ctx context.Context, key Key, record string) error {
	if l.Released.Has(record) {
		return nil
	}
	var lease coordinationv1.Lease
	if err := l.Client.Get(ctx, l.objectKey(key), &lease); err != nil {
		if apierrors.IsNotFound(err) {
			l.Released.Remember(record)
			return nil
		}
		return err
	}
	if ptr.Deref(lease.Spec.HolderIdentity, "") != record {
		l.Released.Remember(record)
		return nil
	}
	return l.ReleaseAt(ctx, key, record, lease.ResourceVersion)
}

// ReleaseAt frees the lock of key that the operation named record holds,
// as it was at version (the resourceVersion its holder wrote, or read):
// one delete on the condition that the lock did not change since, without
// reading it first. A lock that did change (renewed meanwhile) is read and
// released as Release does; an empty version is Release.
func (l *Leases) ReleaseAt(ctx context.Context, key Key, record, version string) error {
	if version == "" {
		return l.Release(ctx, key, record)
	}
	lease := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: l.namespace(key), Name: key.LeaseName()}}
	err := l.Client.Delete(ctx, lease, &client.DeleteOptions{Preconditions: &metav1.Preconditions{ResourceVersion: &version}})
	switch {
	case err == nil || apierrors.IsNotFound(err):
		l.Released.Remember(record)
		return nil
	case apierrors.IsConflict(err):
		var current coordinationv1.Lease
		if err := l.Client.Get(ctx, l.objectKey(key), &current); err != nil {
			return client.IgnoreNotFound(err)
		}
		if ptr.Deref(current.Spec.HolderIdentity, "") != record || current.ResourceVersion == version {
			l.Released.Remember(record)
			return nil
		}
		return l.ReleaseAt(ctx, key, record, current.ResourceVersion)
	}
	return fmt.Errorf("releasing the lock of %s: %w", key, err)
}

// Holder returns the live operation holding the lock of key, or nil.
func (l *Leases) Holder(ctx context.Context, key Key) (*Operation, error) {
	var lease coordinationv1.Lease
	if err := l.Client.Get(ctx, l.objectKey(key), &lease); err != nil {
		return nil, client.IgnoreNotFound(err)
	}
	live, err := l.live(ctx, &lease)
	if err != nil || !live {
		return nil, err
	}
	return holderOf(&lease), nil
}

// HeldBy returns the name of the record the lock of key names, expired or
// not; "" when there is no lock.
func (l *Leases) HeldBy(ctx context.Context, key Key) (string, error) {
	var lease coordinationv1.Lease
	if err := l.Client.Get(ctx, l.objectKey(key), &lease); err != nil {
		return "", client.IgnoreNotFound(err)
	}
	return ptr.Deref(lease.Spec.HolderIdentity, ""), nil
}

// live reports whether a lock still holds: it was renewed within its
// duration, or its holder's record is not written yet or still Pending.
//
// The lock carries the operation's record and is written before the
// broker call; the record is written after the reply (see Carrier.Run).
// Until the record has an answer, the lock is the only trace that the
// broker may have acted, so nobody takes it over: the operations
// reconciler writes the record from the lock if admission could not
// (Restore), settles it, and releases the lock then.
func (l *Leases) live(ctx context.Context, lease *coordinationv1.Lease) (bool, error) {
	if !l.expired(lease) {
		return true, nil
	}
	record := ptr.Deref(lease.Spec.HolderIdentity, "")
	if record == "" {
		return false, nil
	}
	namespace := lease.Annotations[AnnotationNamespace]
	if namespace == "" {
		namespace = lease.Namespace
	}
	op, err := findRecord(ctx, l.Client, l.Namespace, namespace, record)
	if err != nil {
		return false, err
	}
	if op == nil {
		_, carries := lease.Annotations[annotationCarried]
		return carries, nil
	}
	return IsPending(op), nil
}

// IsPending reports whether a record has no answer yet (no phase is how
// Write leaves it).
func IsPending(op *v1alpha1.BrokerOperation) bool {
	return op.Status.Phase == "" || op.Status.Phase == v1alpha1.PhasePending
}

func (l *Leases) fill(lease *coordinationv1.Lease, key Key, op *Operation) {
	now := metav1.MicroTime{Time: l.clock().Now()}
	start := metav1.MicroTime{Time: op.Started}
	lease.Spec = coordinationv1.LeaseSpec{
		HolderIdentity:       ptr.To(op.Record),
		LeaseDurationSeconds: ptr.To(int32(max(l.Duration/time.Second, 1))),
		AcquireTime:          &start,
		RenewTime:            &now,
	}
	if lease.Annotations == nil {
		lease.Annotations = map[string]string{}
	}
	if lease.Labels == nil {
		lease.Labels = map[string]string{}
	}
	lease.Labels[LabelLock] = "true"
	delete(lease.Annotations, annotationCarried)
	if op.Carried != nil {
		lease.Annotations[annotationCarried] = encodeCarried(op.Carried)
	}
	lease.Annotations[annotationVerb] = string(op.Verb)
	lease.Annotations[annotationUser] = op.User
	lease.Annotations[AnnotationNamespace] = key.Namespace
	lease.Annotations[annotationName] = key.Name
	lease.Annotations[annotationKind] = string(key.Kind)
	delete(lease.Annotations, annotationGroup)
	if key.APIGroup != "" {
		lease.Annotations[annotationGroup] = key.APIGroup
	}
}

// namespace is where the lock of key lives.
func (l *Leases) namespace(key Key) string {
	if l.Namespace != "" {
		return l.Namespace
	}
	return key.Namespace
}

func (l *Leases) objectKey(key Key) client.ObjectKey {
	return client.ObjectKey{Namespace: l.namespace(key), Name: key.LeaseName()}
}

func (l *Leases) expired(lease *coordinationv1.Lease) bool {
	if lease.Spec.RenewTime == nil || lease.Spec.LeaseDurationSeconds == nil {
		return true
	}
	end := lease.Spec.RenewTime.Add(time.Duration(*lease.Spec.LeaseDurationSeconds) * time.Second)
	return !l.clock().Now().Before(end)
}

// holderOf is the operation that holds lease. A lock written without its
// object's kind (by a replica of a release that does not write it) names
// the kind its carried record names, if any.
func holderOf(lease *coordinationv1.Lease) *Operation {
	op := &Operation{
		Verb:      v1alpha1.Verb(lease.Annotations[annotationVerb]),
		User:      lease.Annotations[annotationUser],
		Record:    ptr.Deref(lease.Spec.HolderIdentity, ""),
		Namespace: lease.Annotations[AnnotationNamespace],
		Name:      lease.Annotations[annotationName],
		Kind:      v1alpha1.TargetKind(lease.Annotations[annotationKind]),
		APIGroup:  lease.Annotations[annotationGroup],
	}
	if lease.Spec.AcquireTime != nil {
		op.Started = lease.Spec.AcquireTime.Time
	}
	op.Carried, _ = CarriedRecord(lease) // a lock whose record cannot be read carries none
	if op.Kind == "" && op.Carried != nil {
		op.Kind, op.APIGroup = op.Carried.Spec.Target.Kind, op.Carried.Spec.Target.APIGroup
	}
	return op
}

func (l *Leases) clock() clock.PassiveClock {
	if l.Clock != nil {
		return l.Clock
	}
	return clock.RealClock{}
}

// AwaitFree waits up to Wait for the lock of key to be free; it returns the
// live holder when it is still held.
func (l *Leases) AwaitFree(ctx context.Context, key Key) (*Operation, error) {
	var (
		holder *Operation
		err    error
	)
	_ = wait.PollUntilContextTimeout(ctx, retryInterval, l.Wait, true, func(context.Context) (bool, error) {
		holder, err = l.Holder(ctx, key)
		return err != nil || holder == nil, nil
	})
	return holder, err
}

// Locks lists lockstep's per-object locks.
func (l *Leases) Locks(ctx context.Context) ([]coordinationv1.Lease, error) {
	var leases coordinationv1.LeaseList
	opts := []client.ListOption{client.MatchingLabels{LabelLock: "true"}}
	if l.Namespace != "" {
		opts = append(opts, client.InNamespace(l.Namespace))
	}
	if err := l.Client.List(ctx, &leases, opts...); err != nil {
		return nil, fmt.Errorf("listing the locks: %w", err)
	}
	return leases.Items, nil
}

// Acquired is when the holder of a lock took it.
func Acquired(lease *coordinationv1.Lease) time.Time {
	if lease.Spec.AcquireTime != nil {
		return lease.Spec.AcquireTime.Time
	}
	return lease.CreationTimestamp.Time
}
