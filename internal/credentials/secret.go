package credentials

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/lockstep-dev/lockstep/api/v1alpha1"
	"github.com/lockstep-dev/lockstep/internal/breaks"
)

// What lockstep puts on the Secrets it writes: the binding's UID as a
// label (lockstep's cache selects its Secrets by it), and the binding's
// name as an annotation, since a name may be longer than a label value.
const (
	LabelBindingUID   = "lockstep.dev/binding-uid"
	AnnotationBinding = "lockstep.dev/binding"
)

// BindingName is the name of the binding a Secret was written for, or ""
// when lockstep did not write it.
func BindingName(s client.Object) string {
	if ref := metav1.GetControllerOf(s); ref != nil && ref.Kind == "ServiceBinding" {
		return ref.Name
	}
	return s.GetAnnotations()[AnnotationBinding]
}

// Owned reports whether lockstep wrote the Secret for this binding: it is
// controlled by the binding, or marked with the binding's UID.
func Owned(s metav1.Object, b *v1alpha1.ServiceBinding) bool {
	if ref := metav1.GetControllerOf(s); ref != nil {
		return ref.UID == b.UID
	}
	return s.GetLabels()[LabelBindingUID] == string(b.UID)
}

// NewMetadata is a Secret's metadata, to read without its data: what
// lockstep reads of a Secret it does not write or copy.
func NewMetadata() *metav1.PartialObjectMetadata {
	m := &metav1.PartialObjectMetadata{}
	m.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Secret"))
	return m
}

// CheckFree reports an error when the binding's Secret name is taken by a
// Secret lockstep did not write for this binding (reader reads its
// metadata). The error names the Secret and what to do, never its
// content.
func CheckFree(ctx context.Context, reader client.Reader, b *v1alpha1.ServiceBinding) error {
	s := NewMetadata()
	err := reader.Get(ctx, client.ObjectKey{Namespace: b.Namespace, Name: b.Spec.SecretName}, s)
	switch {
	case apierrors.IsNotFound(err):
		return nil
	case err != nil:
		return fmt.Errorf("could not check Secret %q: %w", b.Spec.SecretName, err)
	case Owned(s, b):
		return nil
	}
	return &TakenError{Namespace: b.Namespace, Name: b.Spec.SecretName}
}

// TakenError says that a binding's Secret name belongs to another Secret.
type TakenError struct{ Namespace, Name string }

func (e *TakenError) Error() string {
	return fmt.Sprintf("Secret %q already exists in namespace %q and lockstep did not write it for this binding; lockstep never overwrites it: choose another spec.secretName, or delete that Secret first",
		e.Name, e.Namespace)
}

// Data turns broker credentials into Secret data, one key per top-level
// credential: a string as it is (a "uri" stays as the broker sent it),
// anything else (a number, a boolean, a nested object or an array) as its
// JSON text.
func Data(creds map[string]any) (map[string][]byte, error) {
	data := make(map[string][]byte, len(creds))
	for k, v := range creds {
		if s, ok := v.(string); ok {
			data[k] = []byte(s)
			continue
		}
		raw, err := json.Marshal(v)
		if err != nil {
			return nil, fmt.Errorf("credential key %q cannot be stored: its value is not JSON", k)
		}
		data[k] = raw
	}
	return data, nil
}

// Keys returns the credential keys, sorted, for messages that must not show
// values.
func Keys(creds map[string]any) []string {
	keys := make([]string, 0, len(creds))
	for k := range creds {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// Content is what the binding's Secret holds for the broker's
// credentials: Data, the well-known entries the broker did not send, and
// then the binding's secret transforms (reader reads the Secrets they
// copy from). Its error names a field path and keys, never a value.
func Content(ctx context.Context, reader client.Reader, b *v1alpha1.ServiceBinding, o Offering, creds map[string]any) (map[string][]byte, error) {
	data, err := Data(creds)
	if err != nil {
		return nil, err
	}
	addWellKnown(data, b, o)
	if err := transform(ctx, reader, b, creds, data); err != nil {
		return nil, err
	}
	return data, nil
}

// Write creates or replaces the binding's Secret with the credentials, as
// Content makes them. It refuses a Secret lockstep does not own. The
// binding need not exist yet: the Secret is marked with its UID and
// adopted later.
func Write(ctx context.Context, c client.Client, b *v1alpha1.ServiceBinding, o Offering, creds map[string]any) error {
	data, err := Content(ctx, c, b, o, creds)
	if err != nil {
		return err
	}
	// Created first, lockstep's from the start: a bind's Secret is almost
	// always new, and the create needs no read before it. One that exists
	// is read and rewritten only if lockstep wrote it for this binding.
	s := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: b.Namespace, Name: b.Spec.SecretName,
			Labels: map[string]string{LabelBindingUID: string(b.UID)}, Annotations: map[string]string{AnnotationBinding: b.Name}},
		Type: corev1.SecretTypeOpaque, Data: data,
	}
	err = c.Create(ctx, s.DeepCopy())
	if apierrors.IsAlreadyExists(err) {
		err = rewrite(ctx, c, b, s)
	}
	var taken *TakenError
	if errors.As(err, &taken) {
		return taken
	}
	if err != nil {
		return fmt.Errorf("writing Secret %q: %w", s.Name, err)
	}
	if breaks.Active(breaks.LogCredentials) {
		ctrl.Log.WithName("credentials").Info("wrote a binding's credentials", "secret", s.Name, "credentials", creds)
	}
	return nil
}

// rewrite gives the binding's Secret that exists the data of want, the
// Secret as Write would create it, if lockstep wrote it for this binding
// (and creates want, should it be gone since).
func rewrite(ctx context.Context, c client.Client, b *v1alpha1.ServiceBinding, want *corev1.Secret) error {
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: want.Namespace, Name: want.Name}}
	_, err := controllerutil.CreateOrUpdate(ctx, c, s, func() error {
		switch {
		case s.ResourceVersion == "":
			want.DeepCopyInto(s)
		case !Owned(s, b):
			return &TakenError{Namespace: s.Namespace, Name: s.Name}
		default:
			s.Data = want.Data
			metav1.SetMetaDataAnnotation(&s.ObjectMeta, AnnotationBinding, b.Name)
		}
		return nil
	})
	return err
}

// Find reads the metadata of the binding's Secret (reader reads it): nil
// when there is none. Nothing lockstep does after the Secret is written
// needs its data.
func Find(ctx context.Context, reader client.Reader, b *v1alpha1.ServiceBinding) (*metav1.PartialObjectMetadata, error) {
	s := NewMetadata()
	err := reader.Get(ctx, client.ObjectKey{Namespace: b.Namespace, Name: b.Spec.SecretName}, s)
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading Secret %q: %w", b.Spec.SecretName, err)
	}
	return s, nil
}

// Adopt gives s, the binding's Secret as Find read it, its controller
// ownerReference once the binding exists, so that the Secret goes with the
// binding (c reads its metadata afresh, and patches it: the cache keeps
// only part of a Secret's metadata). A Secret that is not lockstep's for
// this binding, already adopted, or none (nil), is left as it is.
func Adopt(ctx context.Context, c client.Client, b *v1alpha1.ServiceBinding, s *metav1.PartialObjectMetadata) error {
	if s == nil || !Owned(s, b) || metav1.GetControllerOf(s) != nil {
		return nil
	}
	fresh := NewMetadata()
	err := c.Get(ctx, client.ObjectKeyFromObject(s), fresh)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("adopting Secret %q: %w", s.Name, err)
	}
	if fresh.UID != s.UID || !Owned(fresh, b) || metav1.GetControllerOf(fresh) != nil {
		return nil
	}
	patch := client.MergeFrom(fresh.DeepCopy())
	if err := controllerutil.SetControllerReference(b, fresh, c.Scheme()); err != nil {
		return fmt.Errorf("adopting Secret %q: %w", s.Name, err)
	}
	if err := c.Patch(ctx, fresh, patch); err != nil {
		return fmt.Errorf("adopting Secret %q: %w", s.Name, err)
	}
	return nil
}

// Delete removes the binding's Secret if lockstep owns it. The garbage
// collector would do it too in a full cluster; doing it here makes the
// credentials go with the unbind even where no garbage collector runs
// (reader reads it, c deletes it).
func Delete(ctx context.Context, reader client.Reader, c client.Client, b *v1alpha1.ServiceBinding) error {
	s, err := Find(ctx, reader, b)
	if err != nil || !Stored(s, b) {
		return err
	}
	uid := s.UID
	err = c.Delete(ctx, s, &client.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("deleting Secret %q: %w", s.Name, err)
	}
	return nil
}

// Stored reports whether s, the binding's Secret as Find read it, exists
// and lockstep wrote it for this binding.
func Stored(s *metav1.PartialObjectMetadata, b *v1alpha1.ServiceBinding) bool {
	return s != nil && Owned(s, b)
}

// DeleteByUID removes the Secret lockstep wrote for the binding with uid,
// found by its label: the binding itself may never have persisted.
func DeleteByUID(ctx context.Context, c client.Client, namespace string, uid types.UID) error {
	secrets := &metav1.PartialObjectMetadataList{}
	secrets.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("SecretList"))
	if err := c.List(ctx, secrets, client.InNamespace(namespace), client.MatchingLabels{LabelBindingUID: string(uid)}); err != nil {
		return fmt.Errorf("finding the Secret of binding %s: %w", uid, err)
	}
	for i := range secrets.Items {
		s := &secrets.Items[i]
		if err := c.Delete(ctx, s); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("deleting Secret %q: %w", s.Name, err)
		}
	}
	return nil
}
