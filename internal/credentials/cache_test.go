package credentials

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// TestTrimSecret: whatever a labelled Secret holds, the cache keeps about
// a kilobyte of it: what lockstep reads.
func TestTrimSecret(t *testing.T) {
	yes := true
	var owners []metav1.OwnerReference
	for i := range 1000 {
		owners = append(owners, metav1.OwnerReference{APIVersion: "v1", Kind: "ConfigMap", Name: strings.Repeat("o", 200), UID: types.UID(fmt.Sprint("u", i))})
	}
	controller := metav1.OwnerReference{APIVersion: "lockstep.dev/v1alpha1", Kind: "ServiceBinding", Name: "creds", UID: "b-1", Controller: &yes}
	meta := metav1.ObjectMeta{Namespace: "team", Name: "creds", UID: "s-1", ResourceVersion: "7",
		Labels:          map[string]string{LabelBindingUID: "b-1", "big": strings.Repeat("l", 63)},
		Annotations:     map[string]string{AnnotationBinding: "creds", "huge": strings.Repeat("a", 200<<10)},
		OwnerReferences: append(owners, controller), Finalizers: []string{"x/y"},
		ManagedFields: []metav1.ManagedFieldsEntry{{Manager: strings.Repeat("m", 1000)}}}
	for _, in := range []any{
		&metav1.PartialObjectMetadata{ObjectMeta: *meta.DeepCopy()},
		&corev1.Secret{ObjectMeta: *meta.DeepCopy(), Data: map[string][]byte{"k": make([]byte, 1<<20)}},
	} {
		out, err := TrimSecret(in)
		require.NoError(t, err)
		raw, err := json.Marshal(out)
		require.NoError(t, err)
		assert.Less(t, len(raw), 1024, "%T: %s", in, raw)
		o := out.(client.Object)
		assert.Equal(t, map[string]string{LabelBindingUID: "b-1"}, o.GetLabels())
		assert.Equal(t, map[string]string{AnnotationBinding: "creds"}, o.GetAnnotations())
		assert.Equal(t, []metav1.OwnerReference{controller}, o.GetOwnerReferences())
		assert.Equal(t, "creds", BindingName(o))
		assert.Equal(t, "7", o.GetResourceVersion())
	}
	_, err := TrimSecret(&corev1.ConfigMap{})
	assert.Error(t, err)
	assert.True(t, CacheSecrets().Label.Matches(labels.Set{LabelBindingUID: "x"}))
	assert.False(t, CacheSecrets().Label.Matches(labels.Set{"other": "x"}))
}
