package inuse

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/lockstep-dev/lockstep/api/v1alpha1"
)

func TestObjects(t *testing.T) {
	obj := func(ns, name string, parameters map[string]any) unstructured.Unstructured {
		u := unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{"plan": "small"}}}
		if parameters != nil {
			u.Object["spec"].(map[string]any)["parameters"] = parameters
		}
		u.SetNamespace(ns)
		u.SetName(name)
		return u
	}
	pg := &v1alpha1.TypedKindStatus{Kind: "PostgresqlDb", Plural: "postgresqldbs", APIVersion: "services.lockstep.dev/v1alpha1"}
	c := Static{{Group: "services.lockstep.dev", Version: "v1alpha1", Resource: "postgresqldbs"}: {
		obj("team", "b", map[string]any{"size": int64(1), "tier": "gold"}), obj("other", "a", map[string]any{"size": int64(2)}), obj("team", "a", nil),
	}}
	assert.Equal(t, schema.GroupVersionResource{Group: "services.lockstep.dev", Version: "v1alpha1", Resource: "postgresqldbs"}, Resource(pg))

	objs, err := Objects(context.Background(), c, pg)
	require.NoError(t, err)
	assert.Equal(t, []string{"other/a", "team/a", "team/b"}, Names(objs))
	assert.Equal(t, []any{map[string]any{"size": int64(1), "tier": "gold"}, map[string]any{"size": int64(2)}}, Parameters(objs))
	assert.Equal(t, "other/a, team/a and 1 more", Some(Names(objs), 2))
	assert.Equal(t, "other/a, team/a, team/b", Some(Names(objs), 3))

	none, err := Objects(context.Background(), c, &v1alpha1.TypedKindStatus{Kind: "Queue", Plural: "queues", APIVersion: "services.lockstep.dev/v1alpha1"})
	require.NoError(t, err, "a kind the API server does not serve has no objects")
	assert.Empty(t, none)
}
