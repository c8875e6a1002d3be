package controllertest

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/lockstep-dev/lockstep/api/v1alpha1"
	"github.com/lockstep-dev/lockstep/internal/journal"
)

// Record is the record of an operation on the object under test that a
// finalizer test starts with.
type Record struct {
	// Namespace is where the record lives: the object's, or lockstep's.
	Namespace string
	Phase     v1alpha1.OperationPhase
	// Uncached: the record is only in the API server, not yet in the
	// reconciler's cache.
	Uncached bool
}

// Clients returns the reconciler's cache and its reader of the API server,
// both holding objs; rec, when not nil, is written as a BrokerOperation
// named name of verb on target, into the API server and, unless it is
// Uncached, into the cache.
func Clients(scheme *runtime.Scheme, objs []client.Object, rec *Record, name string, verb v1alpha1.Verb, target v1alpha1.OperationTarget) (cached client.Client, direct client.Reader) {
	inCache := objs
	inServer := make([]client.Object, 0, len(objs)+1)
	for _, o := range objs {
		inServer = append(inServer, o.DeepCopyObject().(client.Object))
	}
	if rec != nil {
		op := &v1alpha1.BrokerOperation{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: rec.Namespace, Labels: map[string]string{journal.LabelTargetUID: string(target.UID)}},
			Spec:       v1alpha1.BrokerOperationSpec{Verb: verb, Target: target},
			Status:     v1alpha1.BrokerOperationStatus{Phase: rec.Phase},
		}
		inServer = append(inServer, op)
		if !rec.Uncached {
			inCache = append(inCache, op.DeepCopy())
		}
	}
	cached = builder(scheme).WithObjects(inCache...).Build()
	direct = fake.NewClientBuilder().WithScheme(scheme).WithObjects(inServer...).Build()
	return cached, direct
}

// builder is a fake API server with the journal's index.
func builder(scheme *runtime.Scheme) *fake.ClientBuilder {
	return fake.NewClientBuilder().WithScheme(scheme).WithIndex(&v1alpha1.BrokerOperation{}, journal.TargetUIDIndex, journal.TargetUID)
}
