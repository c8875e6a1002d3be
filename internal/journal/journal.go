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

// Journal writes the BrokerOperation records: one before every broker call
// (write-ahead), then the broker's answer. Records never hold credentials:
// only who asked, what, the spec hash, the broker's status and description.
type Journal struct {
	Client client.Client
	// Namespace is lockstep's own namespace, where the records of deletes
	// in a namespace being deleted go (see where.go).
	Namespace string
	// Recorder, when set, also reports every outcome as an event on the
	// target object (kubectl describe shows them).
	Recorder record.EventRecorder
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

// Intent is what an operation is about to do.
type Intent struct {
	// ID identifies the operation; it is sent to the broker as
	// X-Broker-API-Request-Identity.
	ID         string
	Target     client.Object
	Kind       string // ServiceInstance or ServiceBinding
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

// Begin writes the record of an operation before the broker is called.
// It is one write, the only one an allowed admission waits for besides the
// lock: the record has no status yet, and no phase means Pending (the API
// server drops the status of a create, so writing Pending would cost a
// second round trip). The record's creationTimestamp is its start.
func (j *Journal) Begin(ctx context.Context, in Intent) (*v1alpha1.BrokerOperation, error) {
	op := &v1alpha1.BrokerOperation{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: in.Target.GetNamespace(),
			Name:      OperationName(in.Target.GetName(), in.Verb, in.ID),
			Labels: map[string]string{
				LabelTargetKind: in.Kind,
				LabelTargetName: labelValue(in.Target.GetName()),
				LabelTargetUID:  string(in.Target.GetUID()),
			},
		},
		Spec: v1alpha1.BrokerOperationSpec{
			Target: v1alpha1.OperationTarget{
				Kind: in.Kind, Name: in.Target.GetName(), Namespace: in.Target.GetNamespace(), UID: in.Target.GetUID(),
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
	started := metav1.NewTime(j.now())
	err := j.Client.Create(ctx, op)
	if err != nil && terminating(err) && j.Namespace != "" && j.Namespace != op.Namespace {
		// The object's namespace is being deleted and takes no new
		// objects; its deletes are recorded in lockstep's namespace.
		op.Namespace = j.Namespace
		op.ResourceVersion = ""
		err = j.Client.Create(ctx, op)
	}
	if err != nil {
		return nil, fmt.Errorf("writing the operation record %s/%s: %w", op.Namespace, op.Name, err)
	}
	if op.CreationTimestamp.IsZero() { // a server that does not set it
		op.CreationTimestamp = started
	}
	metrics.OperationPhase(string(v1alpha1.PhasePending))
	return op, nil
}

// Find reads the record called name of an object in namespace, wherever
// it lives; nil when there is none.
func (j *Journal) Find(ctx context.Context, namespace, name string) (*v1alpha1.BrokerOperation, error) {
	return findRecord(ctx, j.Client, j.Namespace, namespace, name)
}

// Discard deletes the record of an operation that never reached the
// broker: it was written together with the lock, and the lock went to
// another operation (or could not be taken).
func (j *Journal) Discard(ctx context.Context, op *v1alpha1.BrokerOperation) error {
	err := j.Client.Delete(ctx, op, client.Preconditions{UID: &op.UID})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("deleting the unused operation record %s/%s: %w", op.Namespace, op.Name, err)
	}
	return nil
}

// Record writes the broker's answer into the operation's record and
// reports it as an event on the target.
func (j *Journal) Record(ctx context.Context, op *v1alpha1.BrokerOperation, target client.Object, a Answer) error {
	return j.SetPhase(ctx, op, target, a)
}

// SetPhase moves an operation to a.Phase with the broker's answer, and
// reports it as an event on target when target is not nil.
//
// The patch carries the record's resourceVersion: two writers that read
// the same record (a replica that lost the lead a moment ago, say) cannot
// both move it; the second gets a conflict and reads it again.
func (j *Journal) SetPhase(ctx context.Context, op *v1alpha1.BrokerOperation, target client.Object, a Answer) error {
	patch := client.MergeFromWithOptions(op.DeepCopy(), client.MergeFromWithOptimisticLock{})
	from := op.Status.Phase
	op.Status.Phase = a.Phase
	if op.Status.StartTime == nil && !op.CreationTimestamp.IsZero() {
		start := op.CreationTimestamp
		op.Status.StartTime = &start
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
	if a.Phase != v1alpha1.PhaseInProgress && a.Phase != v1alpha1.PhasePending && op.Status.CompletionTime == nil {
		now := metav1.NewTime(j.now())
		op.Status.CompletionTime = &now
	}
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
	if err := j.Client.Status().Patch(ctx, op, patch); err != nil {
		return fmt.Errorf("recording the broker's answer in %s/%s: %w", op.Namespace, op.Name, err)
	}
	if from != a.Phase {
		metrics.OperationPhase(string(a.Phase))
	}
	return nil
}

// NoteInSync hands the operation's target an InSync condition, without a
// change of phase (an outcome the broker could not tell yet). It writes
// only when the note changes.
func (j *Journal) NoteInSync(ctx context.Context, op *v1alpha1.BrokerOperation, note v1alpha1.InSyncNote) error {
	if op.Status.TargetInSync != nil && *op.Status.TargetInSync == note {
		return nil
	}
	patch := client.MergeFromWithOptions(op.DeepCopy(), client.MergeFromWithOptimisticLock{})
	op.Status.TargetInSync = &note
	if err := j.Client.Status().Patch(ctx, op, patch); err != nil {
		return fmt.Errorf("noting the target's InSync in %s/%s: %w", op.Namespace, op.Name, err)
	}
	return nil
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

func (j *Journal) now() time.Time {
	if j.Now != nil {
		return j.Now()
	}
	return time.Now()
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
// with uid in namespace, so that a finalizer never repeats a delete that
// admission carried out. home is lockstep's namespace. It reads cached
// first and, before it concludes that nothing was recorded, direct (past
// the cache; nil to skip): a record written a moment ago may not have
// reached the cache yet, and a finalizer that missed it would delete at the
// broker a second time.
func DeleteRecorded(ctx context.Context, cached, direct client.Reader, home, namespace string, uid types.UID, verb v1alpha1.Verb) (DeleteRecord, error) {
	recorded, err := deleteRecorded(ctx, cached, home, namespace, uid, verb)
	if err != nil || recorded != DeleteNotRecorded || direct == nil {
		return recorded, err
	}
	return deleteRecorded(ctx, direct, home, namespace, uid, verb)
}

func deleteRecorded(ctx context.Context, reader client.Reader, home, namespace string, uid types.UID, verb v1alpha1.Verb) (DeleteRecord, error) {
	ops, err := Records(ctx, reader, home, namespace, string(uid))
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
