package object

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/lockstep-dev/lockstep/internal/broker/osbapi"
	"github.com/lockstep-dev/lockstep/internal/typed/render"
)

// rendered is the CRD of service postgresql-db of broker acme.
func rendered(t *testing.T) *apiextensionsv1.CustomResourceDefinition {
	t.Helper()
	svc := &osbapi.Service{ID: "svc-pg", Name: "postgresql-db", Description: "databases", Plans: []osbapi.Plan{{ID: "plan-small", Name: "small"}}}
	crd, _, err := render.Render("acme", svc, render.Options{})
	require.NoError(t, err)
	return crd
}

func TestKindOf(t *testing.T) {
	want := Kind{
		GVK:    schema.GroupVersionKind{Group: "services.lockstep.dev", Version: "v1alpha1", Kind: "PostgresqlDb"},
		Plural: "postgresqldbs", CRDName: "postgresqldbs.services.lockstep.dev",
		Broker: "acme", OfferingID: "svc-pg", ServiceName: "postgresql-db",
	}
	tests := []struct {
		name   string
		change func(*apiextensionsv1.CustomResourceDefinition)
		ok     bool
	}{
		{name: "rendered", change: func(*apiextensionsv1.CustomResourceDefinition) {}, ok: true},
		{name: "another group", change: func(c *apiextensionsv1.CustomResourceDefinition) { c.Spec.Group = "example.com" }},
		{name: "not managed by lockstep", change: func(c *apiextensionsv1.CustomResourceDefinition) { delete(c.Labels, render.LabelManagedBy) }},
		{name: "no broker", change: func(c *apiextensionsv1.CustomResourceDefinition) { delete(c.Annotations, render.AnnotationBroker) }},
		{name: "no offering id", change: func(c *apiextensionsv1.CustomResourceDefinition) { delete(c.Annotations, render.AnnotationOfferingID) }},
		{name: "no service name", change: func(c *apiextensionsv1.CustomResourceDefinition) { delete(c.Annotations, render.AnnotationServiceName) }},
		{name: "version not served", change: func(c *apiextensionsv1.CustomResourceDefinition) { c.Spec.Versions[0].Served = false }},
		{name: "a kind named as lockstep's", change: func(c *apiextensionsv1.CustomResourceDefinition) { c.Spec.Names.Kind = "ServiceBinding" }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			crd := rendered(t)
			tt.change(crd)
			k, ok := KindOf(crd)
			assert.Equal(t, tt.ok, ok)
			if tt.ok {
				assert.Equal(t, want, k)
				assert.Equal(t, schema.GroupVersionResource{Group: "services.lockstep.dev", Version: "v1alpha1", Resource: "postgresqldbs"}, k.GVR())
			} else {
				assert.Equal(t, Kind{}, k)
			}
		})
	}
	_, ok := KindOf(nil)
	assert.False(t, ok)
}
