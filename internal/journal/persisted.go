package journal

import (
	"context"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/lockstep-dev/lockstep/api/v1alpha1"
	"github.com/lockstep-dev/lockstep/internal/typed/object"
)

// Target reads the object an operation's record is about; nil when reader
// does not hold it with the operation's uid. An object of a typed kind
// (the record names its group) is returned as its model, a
// *v1alpha1.ServiceInstance with the typed kind in its TypeMeta
// (object.ToInstance), whose spec is the one its records hash. opts are
// for the read of a ServiceInstance or ServiceBinding (a typed kind's is
// converted, a copy already).
func Target(ctx context.Context, reader client.Reader, op *v1alpha1.BrokerOperation, opts ...client.GetOption) (client.Object, error) {
	if op.Spec.Target.APIGroup != "" {
		return typedTarget(ctx, reader, op)
	}
	var obj client.Object = &v1alpha1.ServiceInstance{}
	if op.Spec.Target.Kind == v1alpha1.KindServiceBinding {
		obj = &v1alpha1.ServiceBinding{}
	}
	err := reader.Get(ctx, client.ObjectKey{Namespace: TargetNamespace(op), Name: op.Spec.Target.Name}, obj, opts...)
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if op.Spec.Target.UID != "" && obj.GetUID() != op.Spec.Target.UID {
		return nil, nil
	}
	return obj, nil
}

// Persisted reports whether the API server holds what a successful
// operation changed, target being the object as it holds it (nil: none
// with the operation's uid): the object a create made; the spec an update
// applied, or a later one, or the object being deleted or gone; the delete
// a deprovision or unbind carried out. Such an operation is committed.
func Persisted(op *v1alpha1.BrokerOperation, target client.Object) bool {
	switch op.Spec.Verb {
	case v1alpha1.VerbProvision, v1alpha1.VerbBind, v1alpha1.VerbAdopt:
		return target != nil
	case v1alpha1.VerbUpdate:
		return target == nil || target.GetDeletionTimestamp() != nil ||
			Applies(op, target) || target.GetGeneration() > op.Spec.Generation
	case v1alpha1.VerbDeprovision, v1alpha1.VerbUnbind:
		return target == nil || target.GetDeletionTimestamp() != nil
	}
	return false
}

// typedTarget reads the object of a typed kind a record is about, as
// Target does.
func typedTarget(ctx context.Context, reader client.Reader, op *v1alpha1.BrokerOperation) (client.Object, error) {
	k, ok, err := object.KindNamed(ctx, reader, op.Spec.Target.APIGroup, string(op.Spec.Target.Kind))
	if err != nil || !ok {
		return nil, err
	}
	_, si, err := object.Read(ctx, reader, k, TargetNamespace(op), op.Spec.Target.Name)
	if err != nil || si == nil {
		return nil, err
	}
	if op.Spec.Target.UID != "" && si.UID != op.Spec.Target.UID {
		return nil, nil
	}
	return si, nil
}
