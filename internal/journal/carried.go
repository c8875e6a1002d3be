package journal

import (
	"context"
	"encoding/json"
	"fmt"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/lockstep-dev/lockstep/api/v1alpha1"
)

// The lock is the write-ahead record: the one write admission waits for
// before the broker call is the object's Lease, and it carries the whole
// record to be written (its name, labels and spec; never credentials). The
// record itself is written after the reply. Should lockstep stop before
// that, the operations reconciler writes it from the lock (Restore) and
// settles it from what the API server holds.

// carried is what a lock carries of its operation's record.
type carried struct {
	Namespace   string                       `json:"namespace"`
	Name        string                       `json:"name"`
	Labels      map[string]string            `json:"labels,omitempty"`
	Annotations map[string]string            `json:"annotations,omitempty"`
	Spec        v1alpha1.BrokerOperationSpec `json:"spec"`
}

func encodeCarried(op *v1alpha1.BrokerOperation) string {
	raw, err := json.Marshal(carried{Namespace: op.Namespace, Name: op.Name, Labels: op.Labels, Annotations: op.Annotations, Spec: op.Spec})
	if err != nil {
		return "" // a spec of strings and numbers always encodes
	}
	return string(raw)
}

// CarriedRecord is the record a lock carries, as it is to be written; nil when
// the lock carries none.
func CarriedRecord(lease *coordinationv1.Lease) (*v1alpha1.BrokerOperation, error) {
	raw, ok := lease.Annotations[annotationCarried]
	if !ok || raw == "" {
		return nil, nil
	}
	var in carried
	if err := json.Unmarshal([]byte(raw), &in); err != nil {
		return nil, fmt.Errorf("reading the operation carried by lock %s/%s: %w", lease.Namespace, lease.Name, err)
	}
	return &v1alpha1.BrokerOperation{
		ObjectMeta: metav1.ObjectMeta{Namespace: in.Namespace, Name: in.Name, Labels: in.Labels, Annotations: in.Annotations},
		Spec:       in.Spec,
	}, nil
}

// Restore writes the record a lock carries when nobody wrote it: lockstep
// stopped between the lock and the record (before the broker call, during
// it, or after the reply). The record is written without an answer, as
// Pending; the operations reconciler settles it from what the API server
// holds. It reports whether it wrote the record.
func (j *Journal) Restore(ctx context.Context, lease *coordinationv1.Lease) (bool, error) {
	op, err := CarriedRecord(lease)
	if err != nil || op == nil {
		return false, err
	}
	found, err := j.Find(ctx, TargetNamespace(op), op.Name)
	if err != nil || found != nil {
		return false, err
	}
	if err := j.Write(ctx, op); err != nil {
		return false, err
	}
	return true, nil
}

// Carries reports whether the lock of key carries an operation of the
// object and verb of change, whose record may not be written yet.
func (l *Leases) Carries(ctx context.Context, key Key, change Change) (bool, error) {
	var lease coordinationv1.Lease
	if err := l.Client.Get(ctx, l.objectKey(key), &lease); err != nil {
		return false, client.IgnoreNotFound(err)
	}
	op, err := CarriedRecord(&lease)
	if err != nil || op == nil {
		return false, err
	}
	return op.Spec.Target.UID == change.UID && op.Spec.Verb == change.Verb, nil
}
