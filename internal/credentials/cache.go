package credentials

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	"sigs.k8s.io/controller-runtime/pkg/cache"
)

// CacheSecrets is how lockstep's cache holds Secrets: only those labelled
// LabelBindingUID (RBAC cannot restrict a watch by label, so the label is
// the selector), read as metadata only (the API server sends no data),
// and each trimmed by TrimSecret to what lockstep reads of it. Anyone who
// may create Secrets may label one: such a Secret costs the cache about a
// kilobyte, whatever it holds (its data never reaches lockstep, its
// annotations and other owners are dropped). The binding controller
// watches them with WatchesMetadata; a Secret lockstep writes or copies
// is read past the cache.
func CacheSecrets() cache.ByObject {
	req, err := labels.NewRequirement(LabelBindingUID, selection.Exists, nil)
	if err != nil {
		panic(err) // constant input
	}
	return cache.ByObject{Label: labels.NewSelector().Add(*req), Transform: TrimSecret}
}

// TrimSecret keeps of a cached Secret (its metadata, or the Secret
// itself) what lockstep reads: its name, namespace, UID, resource
// version and deletion, lockstep's label and annotation, and its
// controller reference; never its data, other labels, annotations,
// owners, finalizers or managed fields.
func TrimSecret(in any) (any, error) {
	switch o := in.(type) {
	case *metav1.PartialObjectMetadata:
		o.ObjectMeta = trimMeta(o.ObjectMeta)
		return o, nil
	case *corev1.Secret:
		return &corev1.Secret{TypeMeta: o.TypeMeta, ObjectMeta: trimMeta(o.ObjectMeta), Type: o.Type}, nil
	}
	return nil, fmt.Errorf("lockstep caches Secrets only, not %T", in)
}

func trimMeta(m metav1.ObjectMeta) metav1.ObjectMeta {
	out := metav1.ObjectMeta{Name: m.Name, Namespace: m.Namespace, UID: m.UID, ResourceVersion: m.ResourceVersion,
		Generation: m.Generation, CreationTimestamp: m.CreationTimestamp, DeletionTimestamp: m.DeletionTimestamp}
	if v, ok := m.Labels[LabelBindingUID]; ok {
		out.Labels = map[string]string{LabelBindingUID: v}
	}
	if v, ok := m.Annotations[AnnotationBinding]; ok && len(v) <= maxNameLength {
		out.Annotations = map[string]string{AnnotationBinding: v}
	}
	if ref := metav1.GetControllerOfNoCopy(&m); ref != nil {
		out.OwnerReferences = []metav1.OwnerReference{*ref}
	}
	return out
}

// maxNameLength is the longest name of an object (a binding's, in
// lockstep's annotation).
const maxNameLength = 253
