package servicebroker

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/lockstep-dev/lockstep/internal/broker"
	"github.com/lockstep-dev/lockstep/internal/broker/brokertest"
	"github.com/lockstep-dev/lockstep/internal/catalog"
)

func TestSchemasCondition(t *testing.T) {
	withCreate := func(schema string) *broker.Schemas {
		return &broker.Schemas{ServiceInstance: &broker.ServiceInstanceSchemas{Create: &broker.InputParameters{Parameters: json.RawMessage(schema)}}}
	}
	tests := []struct {
		name            string
		change          func(c *broker.Catalog)
		status          metav1.ConditionStatus
		reason, message string
	}{
		{"every schema usable", func(*broker.Catalog) {}, metav1.ConditionTrue, "Usable", "every plan's parameter schemas are usable"},
		{"a remote reference", func(c *broker.Catalog) {
			c.Services[1].Plans[0].Schemas = withCreate(`{"$ref": "https://example.com/s.json"}`)
		}, metav1.ConditionFalse, "RemoteReference", "1 plans have a parameter schema lockstep cannot use: queue/standard (RemoteReference); " +
			"the plan's ServicePlan (kubectl describe serviceplans --field-selector spec.brokerName=acme) says why"},
		{"not an object schema, and many", func(c *broker.Catalog) {
			for i := range 7 {
				c.Services[1].Plans = append(c.Services[1].Plans, broker.Plan{ID: fmt.Sprint("p", i), Name: fmt.Sprint("p", i), Schemas: withCreate(`{"type": "array"}`)})
			}
		}, metav1.ConditionFalse, "NotAnObjectSchema", "7 plans have a parameter schema lockstep cannot use: queue/p0 (NotAnObjectSchema), " +
			"queue/p1 (NotAnObjectSchema), queue/p2 (NotAnObjectSchema), queue/p3 (NotAnObjectSchema), queue/p4 (NotAnObjectSchema), and 2 more"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cat := brokertest.DefaultCatalog()
			tt.change(&cat)
			got := schemasCondition(catalog.NewEntry("acme", nil, &cat, nil, time.Now()), 3)
			assert.Equal(t, tt.status, got.Status)
			assert.Equal(t, tt.reason, got.Reason)
			assert.Contains(t, got.Message, tt.message)
			assert.Equal(t, int64(3), got.ObservedGeneration)
		})
	}
}
