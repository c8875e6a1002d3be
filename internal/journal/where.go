package journal

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/lockstep-dev/lockstep/api/v1alpha1"
)

// Where lockstep keeps what it writes for an operation:
//
//   - locks (Leases) always live in lockstep's own namespace, so that an
//     object in a namespace being deleted can still be locked, and so
//     deleted;
//   - a BrokerOperation lives next to its object, where the namespace's
//     users see their own operations, except when that namespace is being
//     deleted, or is gone already (the record of an operation cut short
//     is written later, from its lock): it accepts no new objects, and the
//     record goes to lockstep's own namespace (Spec.Target.Namespace still
//     names the object's namespace).

// TargetNamespace is the namespace of the object an operation is about.
func TargetNamespace(op *v1alpha1.BrokerOperation) string {
	if op.Spec.Target.Namespace != "" {
		return op.Spec.Target.Namespace
	}
	return op.Namespace
}

// terminating reports whether err is the API server's refusal to create an
// object in a namespace that is being deleted.
func terminating(err error) bool {
	return apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause)
}

// namespaceGone reports whether err is the API server's refusal to create
// an object in a namespace that does not exist.
func namespaceGone(err error) bool {
	var status apierrors.APIStatus
	if !apierrors.IsNotFound(err) || !errors.As(err, &status) {
		return false
	}
	d := status.Status().Details
	return d != nil && d.Kind == "namespaces"
}

// closingMemory is how long a namespace that refused a record, being
// deleted or gone, has the records of its objects written straight to
// lockstep's namespace: long enough for the deletes of a namespace's
// objects, short enough that a namespace made again under the same name
// soon has its records next to its objects again.
const closingMemory = 30 * time.Second

// closing remembers the namespaces that refused a record lately: the
// deletion of a namespace of thousands of objects would otherwise ask it
// once per record, each time refused, before writing the record at home.
type closing struct {
	mu   sync.Mutex
	seen map[string]time.Time
}

func (c *closing) remember(namespace string, now time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.seen == nil {
		c.seen = map[string]time.Time{}
	}
	for ns, at := range c.seen {
		if now.Sub(at) > closingMemory {
			delete(c.seen, ns)
		}
	}
	c.seen[namespace] = now
}

func (c *closing) has(namespace string, now time.Time) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	at, ok := c.seen[namespace]
	return ok && now.Sub(at) <= closingMemory
}

// findRecord reads the record called name of an object in namespace: next
// to the object, or else in home (lockstep's namespace). It returns nil
// when neither holds it.
func findRecord(ctx context.Context, c client.Reader, home, namespace, name string) (*v1alpha1.BrokerOperation, error) {
	var op v1alpha1.BrokerOperation
	err := c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, &op)
	if err == nil {
		return &op, nil
	}
	if !apierrors.IsNotFound(err) || home == "" || home == namespace {
		return nil, client.IgnoreNotFound(err)
	}
	if err := c.Get(ctx, client.ObjectKey{Namespace: home, Name: name}, &op); err != nil {
		return nil, client.IgnoreNotFound(err)
	}
	return &op, nil
}

// Records lists the records of the object with uid in namespace: next to
// the object and in home (lockstep's namespace). It selects them by their
// label, so c may be the API server; read from a cache, CachedRecords
// reads only the object's records.
func Records(ctx context.Context, c client.Reader, home, namespace, uid string) ([]v1alpha1.BrokerOperation, error) {
	return listRecords(ctx, c, home, namespace, client.MatchingLabels{LabelTargetUID: uid})
}

// CachedRecords is Records from a cache that has TargetUIDIndex
// (IndexTargetUID): it finds the object's records through the index
// instead of passing over every record of the namespace.
func CachedRecords(ctx context.Context, cache client.Reader, home, namespace, uid string) ([]v1alpha1.BrokerOperation, error) {
	return listRecords(ctx, cache, home, namespace, client.MatchingFields{TargetUIDIndex: uid})
}

func listRecords(ctx context.Context, c client.Reader, home, namespace string, selector client.ListOption) ([]v1alpha1.BrokerOperation, error) {
	var all []v1alpha1.BrokerOperation
	for _, ns := range namespaces(home, namespace) {
		var ops v1alpha1.BrokerOperationList
		if err := c.List(ctx, &ops, client.InNamespace(ns), selector); err != nil {
			return nil, err
		}
		for _, op := range ops.Items {
			if TargetNamespace(&op) == namespace {
				all = append(all, op)
			}
		}
	}
	return all, nil
}

// TargetUIDIndex indexes BrokerOperations in a cache by their object's uid
// (IndexTargetUID registers it).
const TargetUIDIndex = "spec.target.uid"

// IndexTargetUID registers TargetUIDIndex with a cache's indexer, before
// the cache starts.
func IndexTargetUID(ctx context.Context, indexer client.FieldIndexer) error {
	if err := indexer.IndexField(ctx, &v1alpha1.BrokerOperation{}, TargetUIDIndex, TargetUID); err != nil {
		return fmt.Errorf("indexing BrokerOperations by their object's uid: %w", err)
	}
	return nil
}

// TargetUID is the TargetUIDIndex value of a BrokerOperation (for a fake
// client's WithIndex in tests).
func TargetUID(o client.Object) []string {
	op, ok := o.(*v1alpha1.BrokerOperation)
	if !ok || op.Spec.Target.UID == "" {
		return nil
	}
	return []string{string(op.Spec.Target.UID)}
}

func namespaces(home, namespace string) []string {
	if home == "" || home == namespace {
		return []string{namespace}
	}
	return []string{namespace, home}
}

// NamespaceGone reports whether err is the API server's refusal to write
// in a namespace that does not exist (see Rehome).
func NamespaceGone(err error) bool {
	return namespaceGone(err)
}

// Rehome moves the record op, whose namespace is gone, to lockstep's
// namespace with its status, and deletes it where it was. The namespace
// controller may remove a namespace without the records in it (after a
// kube-apiserver restart, before lockstep's kinds are served again); the
// API server then refuses every write of them, and the operation could
// never be settled, nor what it left at a broker undone. The copy is
// followed from lockstep's namespace (Spec.Target.Namespace names the
// object's); a record moved before is not written again, unless its copy
// never got the status (it is written with the copy, in one create).
func (j *Journal) Rehome(ctx context.Context, op *v1alpha1.BrokerOperation) error {
	if j.Namespace == "" || op.Namespace == j.Namespace {
		return fmt.Errorf("the namespace of the operation record %s/%s is gone, and lockstep has no namespace of its own to move it to", op.Namespace, op.Name)
	}
	moved := &v1alpha1.BrokerOperation{
		ObjectMeta: metav1.ObjectMeta{Namespace: j.Namespace, Name: op.Name, Labels: op.Labels, Annotations: op.Annotations},
		Spec:       op.Spec,
		Status:     op.Status,
	}
	if moved.Spec.Target.Namespace == "" {
		moved.Spec.Target.Namespace = op.Namespace
	}
	err := j.Client.Create(ctx, moved)
	if apierrors.IsAlreadyExists(err) {
		err = j.Client.Get(ctx, client.ObjectKeyFromObject(moved), moved)
	}
	if err != nil {
		return fmt.Errorf("moving the operation record %s/%s to %s, its namespace being gone: %w", op.Namespace, op.Name, j.Namespace, err)
	}
	if IsPending(moved) && !IsPending(op) {
		moved.Status = op.Status
		if err := j.Client.Update(ctx, moved); err != nil {
			return fmt.Errorf("moving the status of the operation record %s/%s to %s, its namespace being gone: %w", op.Namespace, op.Name, j.Namespace, err)
		}
	}
	if err := j.Client.Delete(ctx, op, client.Preconditions{UID: &op.UID}); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("deleting the operation record %s/%s, moved to %s: %w", op.Namespace, op.Name, j.Namespace, err)
	}
	return nil
}
