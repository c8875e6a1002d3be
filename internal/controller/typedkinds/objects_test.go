package typedkinds

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/lockstep-dev/lockstep/api/v1alpha1"
	"github.com/lockstep-dev/lockstep/internal/typed/object"
)

// sent records the patches a writer sends, and answers with the typed
// object as the API server would after it.
type sent struct {
	client.Client
	gvks    []schema.GroupVersionKind
	patches []map[string]any
}

func (s *sent) Patch(_ context.Context, obj client.Object, patch client.Patch, _ ...client.PatchOption) error {
	data, err := patch.Data(obj)
	if err != nil {
		return err
	}
	var p map[string]any
	if err := json.Unmarshal(data, &p); err != nil {
		return err
	}
	s.gvks = append(s.gvks, obj.GetObjectKind().GroupVersionKind())
	s.patches = append(s.patches, p)
	u := obj.(*unstructured.Unstructured)
	u.Object["spec"] = map[string]any{"plan": "small", "externalID": "ext-1"}
	u.SetResourceVersion("2")
	return nil
}

// The instance reconciler's writes of a typed object: a finalizer's
// removal goes to the typed object as the model computed it, and the
// answer is read back into the model; a patch of the spec is refused and
// never sent (the model's spec is not the typed object's).
func TestTheWriterSendsTheModelsMetadataToTheTypedObject(t *testing.T) {
	kind := object.Kind{GVK: schema.GroupVersionKind{Group: "services.lockstep.dev", Version: "v1alpha1", Kind: "Db"},
		Plural: "dbs", Broker: "acme", OfferingID: "db-id", ServiceName: "db"}
	model := func() *v1alpha1.ServiceInstance {
		si := &v1alpha1.ServiceInstance{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "db", ResourceVersion: "1",
			Finalizers: []string{v1alpha1.Finalizer}}, Spec: v1alpha1.ServiceInstanceSpec{PlanName: "small"}}
		si.SetGroupVersionKind(kind.GVK)
		return si
	}
	tests := []struct {
		name    string
		change  func(si *v1alpha1.ServiceInstance)
		wantErr string
	}{
		{name: "the finalizer's removal", change: func(si *v1alpha1.ServiceInstance) { controllerutil.RemoveFinalizer(si, v1alpha1.Finalizer) }},
		{name: "a spec change", change: func(si *v1alpha1.ServiceInstance) { si.Spec.PlanName = "large" }, wantErr: `not "spec"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := &sent{}
			w := writer{Client: s, reader: reader{kind: kind}}
			si := model()
			patch := client.MergeFrom(si.DeepCopy())
			tt.change(si)
			err := w.Patch(context.Background(), si, patch)
			if tt.wantErr != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tt.wantErr)
				assert.Empty(t, s.patches, "nothing sent")
				return
			}
			require.NoError(t, err)
			require.Len(t, s.patches, 1)
			assert.Equal(t, kind.GVK, s.gvks[0], "sent to the typed object")
			assert.Equal(t, map[string]any{"metadata": map[string]any{"finalizers": nil}}, s.patches[0])
			assert.Equal(t, "2", si.ResourceVersion, "the answer is read back into the model")
			assert.Equal(t, "ext-1", si.Spec.ExternalID)
			assert.Equal(t, "db", si.Spec.ServiceName)
			assert.Equal(t, kind.GVK, si.GroupVersionKind())
		})
	}
}
