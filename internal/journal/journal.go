package journal

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/lockstep-dev/lockstep/api/v1alpha1"
	"github.com/lockstep-dev/lockstep/internal/metrics"
)

// Labels on every BrokerOperation, to find an object's operations.
const (
	LabelTargetKind = "lockstep.dev/target-kind"
	LabelTargetName = "lockstep.dev/target-name"
	LabelTargetUID  = "lockstep.dev/target-uid"
)

// Journal writes the BrokerOperation records: one for every broker call,
// with the broker's answer (the lock carries it until then, see Carrier).
// Records never hold credentials:
// only who asked, what, the spec hash, the broker's status and description.
type Journal struct {
	Client client.Client
	// Namespace is lockstep's own namespace, where the records of deletes
	// in a namespace being deleted go (see where.go).
	Namespace string
	// Recorder, when set, also reports every outcome as an event on the
	// target object (kubectl describe shows them).
	Recorder record.EventRecorder
	// Clock stamps the records; nil means the real clock.
	Clock clock.PassiveClock

	closing closing
}

// Intent is what an operation is about to do.
type Intent struct {
	// ID identifies the operation; it is sent to the broker as
	// X-Broker-API-Request-Identity.
	ID     string
	Target client.Object
	Kind   v1alpha1.TargetKind
	// APIGroup is Kind's group when it is not lockstep.dev (a typed kind).
	APIGroup   string
	ExternalID string
	Broker     string
	Verb       v1alpha1.Verb
	User       authenticationv1.UserInfo
	// SpecHash is the SpecHash of the target's spec the operation applies
	// (the spec itself is never stored).
	SpecHash string
	// ServiceID and PlanID are the OSB ids used; InstanceID is a binding's
	// instance.
	ServiceID, PlanID, InstanceID string
	// PreviousPlanID is the plan before an update that changes it.
	PreviousPlanID string
	// ParametersDigest is the digest of the parameters sent when some came
	// from Secrets (never their values).
	ParametersDigest string
	// CreateOnlyDigest is, with ParametersDigest, the digest of the
	// create-only parameters sent.
	CreateOnlyDigest string
}

// Answer is the broker's answer to an operation.
type Answer struct {
	Phase        v1alpha1.OperationPhase
	HTTPStatus   int
	Description  string
	OperationKey string
	// DashboardURL is what a provision or update answered.
	DashboardURL string
	// Mitigate says that a failed provision or bind may still have left
	// something at the broker (5xx, timeout, malformed answer): the OSB
	// spec's orphan mitigation is due.
	Mitigate bool
	// InSync, when set, is what the operation tells of its target's
	// InSync condition (see BrokerOperationStatus.TargetInSync).
	InSync *v1alpha1.InSyncNote
}

// annotationStarted on a record is when its operation began (RFC 3339):
// the record is written after the broker call, or later still when the
// operations reconciler restores it from the lock.
const annotationStarted = "lockstep.dev/started"

// Draft is the record of an operation as it is to be written: no status
// (no phase means Pending). Run carries it in the object's lock before the
// broker call and writes it after the reply.
func (j *Journal) Draft(in Intent) *v1alpha1.BrokerOperation {
	return &v1alpha1.BrokerOperation{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: in.Target.GetNamespace(),
			Name:      OperationName(in.Target.GetName(), in.Verb, in.ID),
			Labels: map[string]string{
				LabelTargetKind: string(in.Kind),
				LabelTargetName: labelValue(in.Target.GetName()),
				LabelTargetUID:  string(in.Target.GetUID()),
			},
			Annotations: map[string]string{annotationStarted: j.clock().Now().UTC().Format(time.RFC3339Nano)},
		},
		Spec: v1alpha1.BrokerOperationSpec{
			Target: v1alpha1.OperationTarget{
				Kind: in.Kind, APIGroup: in.APIGroup, Name: in.Target.GetName(), Namespace: in.Target.GetNamespace(), UID: in.Target.GetUID(),
				ExternalID: in.ExternalID, InstanceID: in.InstanceID,
			},
			BrokerName:       in.Broker,
			ServiceID:        in.ServiceID,
			PlanID:           in.PlanID,
			PreviousPlanID:   in.PreviousPlanID,
			Verb:             in.Verb,
			Requester:        v1alpha1.Requester{Username: in.User.Username, UID: in.User.UID, Groups: in.User.Groups},
			SpecHash:         in.SpecHash,
			ParametersDigest: in.ParametersDigest,
			CreateOnlyDigest: in.CreateOnlyDigest,
			Generation:       in.Target.GetGeneration(),
		},
	}
}

// Write creates the record op (a Draft), next to its object or, when the
// object's namespace is being deleted or gone, in lockstep's namespace. A
// record that exists already (the operations reconciler restored it from
// the lock first) is read into op instead.
func (j *Journal) Write(ctx context.Context, op *v1alpha1.BrokerOperation) error {
	_, err := j.create(ctx, op)
	return err
}

// Record writes the record op (a Draft) with the broker's answer a, in
// one write, and reports it on target as SetPhase does. A record that
// exists already is read into op: one still Pending (the operations
// reconciler restored it from the lock first) is given the answer then; one
// with an answer keeps it, nothing is reported, and Record reports false.
func (j *Journal) Record(ctx context.Context, op *v1alpha1.BrokerOperation, target client.Object, a Answer) (bool, error) {
	answered := op.DeepCopy()
	j.answer(answered, a)
	existed, err := j.create(ctx, answered)
	if err != nil {
		return false, err
	}
	*op = *answered // as written, or as it was found
	switch {
	case !existed:
		j.report(op, target, a)
		metrics.OperationPhase(string(a.Phase))
		return true, nil
	case !IsPending(op):
		return false, nil
	}
	return true, j.SetPhase(ctx, op, target, a)
}

// create creates op; it reports whether the record existed already, and
// reads it into op then.
func (j *Journal) create(ctx context.Context, op *v1alpha1.BrokerOperation) (bool, error) {
	draft := op.DeepCopy()
	if j.Namespace != "" && j.closing.has(op.Namespace, j.clock().Now()) {
		op.Namespace = j.Namespace // refused a moment ago: see below
	}
	err := j.Client.Create(ctx, op)
	if err != nil && (terminating(err) || namespaceGone(err)) && j.Namespace != "" && j.Namespace != op.Namespace {
		// The object's namespace is being deleted and takes no new
		// objects, or is gone (a record written from the lock of an
		// operation cut short); it is recorded in lockstep's namespace,
		// as are the next records of its objects for a while.
		j.closing.remember(op.Namespace, j.clock().Now())
		op.Namespace = j.Namespace
		op.ResourceVersion = ""
		err = j.Client.Create(ctx, op)
	}
	if apierrors.IsAlreadyExists(err) {
		found, ferr := j.Find(ctx, TargetNamespace(draft), draft.Name)
		if ferr == nil && found != nil {
			*op = *found
			return true, nil
		}
	}
	if err != nil {
		return false, fmt.Errorf("writing the operation record %s/%s: %w", op.Namespace, op.Name, err)
	}
	if op.CreationTimestamp.IsZero() { // a server that does not set it
		op.CreationTimestamp = metav1.NewTime(j.clock().Now())
	}
	if IsPending(op) {
		metrics.OperationPhase(string(v1alpha1.PhasePending))
	}
	return false, nil
}

// Started is when the operation of a record began.
func Started(op *v1alpha1.BrokerOperation) time.Time {
	if t, err := time.Parse(time.RFC3339Nano, op.Annotations[annotationStarted]); err == nil {
		return t
	}
	return op.CreationTimestamp.Time
}

// Find reads the record called name of an object in namespace, wherever
// it lives; nil when there is none.
func (j *Journal) Find(ctx context.Context, namespace, name string) (*v1alpha1.BrokerOperation, error) {
	return findRecord(ctx, j.Client, j.Namespace, namespace, name)
}

// Discard deletes a record.
func (j *Journal) Discard(ctx context.Context, op *v1alpha1.BrokerOperation) error {
	err := j.Client.Delete(ctx, op, client.Preconditions{UID: &op.UID})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("deleting the unused operation record %s/%s: %w", op.Namespace, op.Name, err)
	}
	return nil
}

// SetPhase moves an operation to a.Phase with the broker's answer, and
// reports it as an event on target when target is not nil.
//
// The patch carries the record's resourceVersion: two writers that read
// the same record (a replica that lost the lead a moment ago, say) cannot
// both move it; the second gets a conflict and reads it again.
func (j *Journal) SetPhase(ctx context.Context, op *v1alpha1.BrokerOperation, target client.Object, a Answer) error {
	from := op.Status.Phase
	j.answer(op, a)
	j.report(op, target, a)
	if err := j.patchStatus(ctx, op); err != nil {
		return fmt.Errorf("recording the broker's answer in %s/%s: %w", op.Namespace, op.Name, err)
	}
	if from != a.Phase {
		metrics.OperationPhase(string(a.Phase))
	}
	return nil
}

// answer moves op's status to a.Phase with the broker's answer.
func (j *Journal) answer(op *v1alpha1.BrokerOperation, a Answer) {
	from := op.Status.Phase
	op.Status.Phase = a.Phase
	if start := Started(op); op.Status.StartTime == nil && !start.IsZero() {
		op.Status.StartTime = &metav1.Time{Time: start}
	}
	if a.HTTPStatus != 0 {
		op.Status.HTTPStatus = int32(a.HTTPStatus)
	}
	if a.Description != "" {
		op.Status.Description = a.Description
	}
	if a.OperationKey != "" {
		op.Status.OperationKey = a.OperationKey
	}
	if a.DashboardURL != "" {
		op.Status.DashboardURL = a.DashboardURL
	}
	if a.InSync != nil {
		op.Status.TargetInSync = a.InSync
	}
	// An orphaned record is compensated (or found failed) later: it is
	// complete then, so that what its compensation says of the object is
	// newer than the notes it left while it was under way.
	ends := from == v1alpha1.PhaseOrphaned && a.Phase != v1alpha1.PhaseOrphaned
	if a.Phase != v1alpha1.PhaseInProgress && a.Phase != v1alpha1.PhasePending && (op.Status.CompletionTime == nil || ends) {
		now := metav1.NewTime(j.clock().Now())
		op.Status.CompletionTime = &now
	}
}

// report tells the answer a of op as an event on target, when target is
// not nil.
func (j *Journal) report(op *v1alpha1.BrokerOperation, target client.Object, a Answer) {
	if j.Recorder != nil && target != nil {
		eventType, reason := corev1.EventTypeNormal, eventReason(op.Spec.Verb, a.Phase)
		if a.Phase == v1alpha1.PhaseFailed {
			eventType = corev1.EventTypeWarning
		}
		msg := fmt.Sprintf("%s at broker %q asked by %q: %s (operation %s)", op.Spec.Verb, op.Spec.BrokerName, op.Spec.Requester.Username, strings.ToLower(string(a.Phase)), op.Name)
		if a.Description != "" {
			msg += ": " + a.Description
		}
		j.Recorder.Event(target, eventType, reason, msg)
	}
}

// NoteInSync hands the operation's target an InSync condition, without a
// change of phase (an outcome the broker could not tell yet). It writes
// only when the note changes.
func (j *Journal) NoteInSync(ctx context.Context, op *v1alpha1.BrokerOperation, note v1alpha1.InSyncNote) error {
	if op.Status.TargetInSync != nil && *op.Status.TargetInSync == note {
		return nil
	}
	op.Status.TargetInSync = &note
	if err := j.patchStatus(ctx, op); err != nil {
		return fmt.Errorf("noting the target's InSync in %s/%s: %w", op.Namespace, op.Name, err)
	}
	return nil
}

// statusPatch is a record's status as a JSON merge patch, on the record
// as it was read (its resourceVersion).
type statusPatch struct {
	Metadata struct {
		ResourceVersion string `json:"resourceVersion"`
	} `json:"metadata"`
	Status v1alpha1.BrokerOperationStatus `json:"status"`
}

// patchStatus writes op's status (records have no status subresource: see
// v1alpha1.BrokerOperation). SetPhase and NoteInSync only ever set
// fields, never remove one, so the status itself is the merge patch: it
// is encoded once, where a patch computed from the record before and
// after encodes both and compares them. Two writers that read the same
// record cannot both write it: the second gets a conflict.
func (j *Journal) patchStatus(ctx context.Context, op *v1alpha1.BrokerOperation) error {
	var p statusPatch
	p.Metadata.ResourceVersion = op.ResourceVersion
	p.Status = op.Status
	raw, err := json.Marshal(p)
	if err != nil {
		return err
	}
	return j.Client.Patch(ctx, op, client.RawPatch(types.MergePatchType, raw))
}

// OperationName is the record's name: the target's name, the verb and the
// start of the operation id, within the limits of an object name.
func OperationName(target string, verb v1alpha1.Verb, id string) string {
	short := strings.ReplaceAll(id, "-", "")
	if len(short) > 8 {
		short = short[:8]
	}
	if max := 253 - len(verb) - len(short) - 2; len(target) > max {
		target = target[:max]
	}
	return fmt.Sprintf("%s-%s-%s", target, verb, short)
}

// SpecHash is a short hash of a spec's JSON meaning (keys sorted, numbers
// normalized), to match an operation with the object the API server
// persisted: the webhook and the cache may see the same spec encoded
// differently (raw parameters in particular).
func SpecHash(spec any) string {
	raw, err := json.Marshal(spec)
	if err != nil {
		return ""
	}
	var canonical any
	if err := json.Unmarshal(raw, &canonical); err == nil {
		if again, err := json.Marshal(canonical); err == nil {
			raw = again
		}
	}
	sum := sha256.Sum256(raw)
	return hex.EncodeToString(sum[:8])
}

// SameSpec reports whether two specs mean the same: the same SpecHash.
func SameSpec(a, b any) bool {
	return SpecHash(a) == SpecHash(b)
}

// SpecOf is the spec of an operation's object (nil for another kind).
func SpecOf(obj client.Object) any {
	switch t := obj.(type) {
	case *v1alpha1.ServiceInstance:
		return t.Spec
	case *v1alpha1.ServiceBinding:
		return t.Spec
	}
	return nil
}

// Applies reports whether op applies the spec obj holds: the one
// definition of "the same spec" between a record and an object.
func Applies(op *v1alpha1.BrokerOperation, obj client.Object) bool {
	return obj != nil && SpecHash(SpecOf(obj)) == op.Spec.SpecHash
}

// Change names a change of one object at its broker: the object, the verb
// and the spec it applies. Two requests with the same Change ask the
// broker for the same thing.
type Change struct {
	UID      types.UID
	Verb     v1alpha1.Verb
	SpecHash string
}

// Deletes reports whether the change takes the object away at the broker.
func (c Change) Deletes() bool {
	return c.Verb == v1alpha1.VerbDeprovision || c.Verb == v1alpha1.VerbUnbind
}

// deleted names a delete carried out, as Leases.Deleted remembers it.
func (c Change) deleted() string { return string(c.UID) + "/" + string(c.Verb) }

// Creates reports whether the intent creates something at the broker under
// its external id, or takes over what the broker holds there: a create
// that finds the id's lock held for another object does not wait for it
// (that object will hold the id, or the create may be tried again).
func (in Intent) Creates() bool {
	return in.Verb == v1alpha1.VerbProvision || in.Verb == v1alpha1.VerbBind || in.Verb == v1alpha1.VerbAdopt
}

// Change is what the intent asks of the broker.
func (in Intent) Change() Change {
	return Change{UID: in.Target.GetUID(), Verb: in.Verb, SpecHash: in.SpecHash}
}

// ChangeOf is what a record asked of the broker.
func ChangeOf(op *v1alpha1.BrokerOperation) Change {
	return Change{UID: op.Spec.Target.UID, Verb: op.Spec.Verb, SpecHash: op.Spec.SpecHash}
}

func eventReason(verb v1alpha1.Verb, phase v1alpha1.OperationPhase) string {
	v := string(verb)
	return strings.ToUpper(v[:1]) + v[1:] + string(phase)
}

// labelValue fits a name into a label value (63 characters).
func labelValue(s string) string {
	if len(s) <= 63 {
		return s
	}
	return strings.TrimRight(s[:63], "-.")
}

func (j *Journal) clock() clock.PassiveClock {
	if j.Clock != nil {
		return j.Clock
	}
	return clock.RealClock{}
}

// DeleteRecord is what the journal knows of the delete (deprovision or
// unbind) of an object.
type DeleteRecord int

const (
	// DeleteNotRecorded: no record; the delete bypassed admission.
	DeleteNotRecorded DeleteRecord = iota
	// DeleteUnderWay: a record without the broker's final answer yet
	// (its answer is being written, or the operation is being followed).
	DeleteUnderWay
	// DeleteConfirmed: the broker confirmed the delete.
	DeleteConfirmed
)

// DeleteRecorded says what the journal records of the delete of the object
// key with uid, so that a finalizer never repeats a delete that admission
// carried out. home is lockstep's namespace. A delete this process carried
// out at the broker (leases.Deleted) is confirmed with no read; otherwise
// it reads cached first; then
// the object's lock (nil leases to skip), which carries the operation until
// its record is written after the reply; then direct (past the cache; nil
// to skip): a record written a moment ago may not have reached the cache
// yet, and a finalizer that missed it would delete at the broker a second
// time. The lock is released only once the record is written, so one of
// them tells.
func DeleteRecorded(ctx context.Context, cached, direct client.Reader, leases *Leases, home string, key Key, uid types.UID, verb v1alpha1.Verb) (DeleteRecord, error) {
	if leases != nil && leases.Deleted.Has(Change{UID: uid, Verb: verb}.deleted()) {
		return DeleteConfirmed, nil
	}
	recorded, err := deleteRecorded(ctx, CachedRecords, cached, home, key.Namespace, uid, verb)
	if err != nil || recorded != DeleteNotRecorded {
		return recorded, err
	}
	if leases != nil {
		carried, err := leases.Carries(ctx, key, Change{UID: uid, Verb: verb})
		if err != nil {
			return DeleteNotRecorded, err
		}
		if carried {
			return DeleteUnderWay, nil
		}
	}
	if direct == nil {
		return recorded, nil
	}
	return deleteRecorded(ctx, Records, direct, home, key.Namespace, uid, verb)
}

// recordLister is Records or CachedRecords.
type recordLister func(ctx context.Context, c client.Reader, home, namespace, uid string) ([]v1alpha1.BrokerOperation, error)

func deleteRecorded(ctx context.Context, list recordLister, reader client.Reader, home, namespace string, uid types.UID, verb v1alpha1.Verb) (DeleteRecord, error) {
	ops, err := list(ctx, reader, home, namespace, string(uid))
	if err != nil {
		return DeleteNotRecorded, fmt.Errorf("reading the operation records of %s: %w", uid, err)
	}
	found := DeleteNotRecorded
	for _, op := range ops {
		if op.Spec.Verb != verb {
			continue
		}
		switch op.Status.Phase {
		case v1alpha1.PhaseSucceeded, v1alpha1.PhaseCommitted, v1alpha1.PhaseOrphaned, v1alpha1.PhaseCompensated:
			return DeleteConfirmed, nil
		case "", v1alpha1.PhasePending, v1alpha1.PhaseInProgress:
			found = DeleteUnderWay
		}
	}
	return found, nil
}
