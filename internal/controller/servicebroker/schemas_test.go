package servicebroker

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/lockstep-dev/lockstep/internal/broker/fakebroker"
	"github.com/lockstep-dev/lockstep/internal/broker/osbapi"
	"github.com/lockstep-dev/lockstep/internal/catalog"
)

func TestSchemasCondition(t *testing.T) {
	withCreate := func(schema string) *osbapi.Schemas {
		return &osbapi.Schemas{ServiceInstance: &osbapi.ServiceInstanceSchemas{Create: &osbapi.InputParameters{Parameters: json.RawMessage(schema)}}}
	}
	tests := []struct {
		name            string
		change          func(c *osbapi.Catalog)
		status          metav1.ConditionStatus
		reason, message string
	}{
		{"every schema usable", func(*osbapi.Catalog) {}, metav1.ConditionTrue, "Usable", "every plan's parameter schemas are usable"},
		{"a remote reference", func(c *osbapi.Catalog) {
			c.Services[1].Plans[0].Schemas = withCreate(`{"$ref": "https://example.com/s.json"}`)
		}, metav1.ConditionFalse, "RemoteReference", "1 plans have a parameter schema lockstep cannot use: queue/standard (RemoteReference); " +
			"the plan's ServicePlan (kubectl describe serviceplans --field-selector spec.brokerName=acme) says why"},
		{"not an object schema, and many", func(c *osbapi.Catalog) {
			for i := range 7 {
				c.Services[1].Plans = append(c.Services[1].Plans, osbapi.Plan{ID: fmt.Sprint("p", i), Name: fmt.Sprint("p", i), Schemas: withCreate(`{"type": "array"}`)})
			}
		}, metav1.ConditionFalse, "NotAnObjectSchema", "7 plans have a parameter schema lockstep cannot use: queue/p0 (NotAnObjectSchema), " +
			"queue/p1 (NotAnObjectSchema), queue/p2 (NotAnObjectSchema), queue/p3 (NotAnObjectSchema), queue/p4 (NotAnObjectSchema), and 2 more"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cat := fakebroker.DefaultCatalog()
			tt.change(&cat)
			got := schemasCondition(catalog.NewEntry("acme", nil, &cat, nil, time.Now()), 3)
			assert.Equal(t, tt.status, got.Status)
			assert.Equal(t, tt.reason, got.Reason)
			assert.Contains(t, got.Message, tt.message)
			assert.Equal(t, int64(3), got.ObservedGeneration)
		})
	}
}
