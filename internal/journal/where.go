package journal

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
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
