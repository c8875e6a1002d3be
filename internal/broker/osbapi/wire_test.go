package osbapi_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lockstep-dev/lockstep/internal/broker/osbapi"
)

// The bodies below are the examples of the OSB API v2.17 specification
// (spec.md), trimmed to the fields the types name. Each must decode and
// encode back to the same JSON.

const specCatalog = `{
  "services": [{
    "name": "fake-service",
    "id": "acb56d7c-XXXX-XXXX-XXXX-feb140a59a66",
    "description": "A fake service.",
    "tags": ["no-sql", "relational"],
    "requires": ["route_forwarding"],
    "bindable": true,
    "instances_retrievable": true,
    "bindings_retrievable": true,
    "allow_context_updates": true,
    "metadata": {"provider": {"name": "The name"}, "listing": {"imageUrl": "http://example.com/cat.gif", "blurb": "Add a blurb here"}},
    "dashboard_client": {"id": "398e2f8e-XXXX-XXXX-XXXX-19a71ecbcf64", "secret": "277cabb0-XXXX-XXXX-XXXX-7822c0a90e5d", "redirect_uri": "http://localhost:1234"},
    "plan_updateable": true,
    "plans": [{
      "name": "fake-plan-1",
      "id": "d3031751-XXXX-XXXX-XXXX-a42377d3320e",
      "description": "Shared fake Server, 5tb persistent disk, 40 max concurrent connections.",
      "free": false,
      "metadata": {"max_storage_tb": 5, "costs": [{"amount": {"usd": 99.0}, "unit": "MONTHLY"}], "bullets": ["Shared fake server"]},
      "schemas": {
        "service_instance": {
          "create": {"parameters": {"$schema": "http://json-schema.org/draft-04/schema#", "type": "object", "properties": {"billing-account": {"description": "Billing account number used to charge use of shared fake server.", "type": "string"}}}},
          "update": {"parameters": {"$schema": "http://json-schema.org/draft-04/schema#", "type": "object", "properties": {"billing-account": {"description": "Billing account number used to charge use of shared fake server.", "type": "string"}}}}
        },
        "service_binding": {
          "create": {"parameters": {"$schema": "http://json-schema.org/draft-04/schema#", "type": "object", "properties": {"billing-account": {"description": "Billing account number used to charge use of shared fake server.", "type": "string"}}}}
        }
      },
      "maximum_polling_duration": 3600,
      "maintenance_info": {"version": "2.1.1+abcdef", "description": "OS image update.\nExpect downtime."}
    }, {
      "name": "fake-plan-2",
      "id": "0f4008b5-XXXX-XXXX-XXXX-dace631cd648",
      "description": "Shared fake Server, 5tb persistent disk, 40 max concurrent connections. 100 async.",
      "free": false,
      "bindable": false,
      "plan_updateable": false
    }]
  }]
}`

const specProvision = `{
  "service_id": "service-id-here",
  "plan_id": "plan-id-here",
  "context": {"platform": "cloudfoundry", "some_field": "some-contextual-data"},
  "organization_guid": "org-guid-here",
  "space_guid": "space-guid-here",
  "parameters": {"parameter1": 1, "parameter2": "foo"},
  "maintenance_info": {"version": "2.1.1+abcdef"}
}`

const specUpdate = `{
  "context": {"platform": "cloudfoundry", "some_field": "some-contextual-data"},
  "service_id": "service-id-here",
  "plan_id": "plan-id-here",
  "parameters": {"parameter1": 1, "parameter2": "foo"},
  "previous_values": {
    "plan_id": "old-plan-id-here",
    "service_id": "service-id-here",
    "organization_id": "org-guid-here",
    "space_id": "space-guid-here",
    "maintenance_info": {"version": "2.1.1+abcdef"}
  },
  "maintenance_info": {"version": "2.1.1+abcdef"}
}`

const specBind = `{
  "context": {"platform": "cloudfoundry", "some_field": "some-contextual-data"},
  "service_id": "service-id-here",
  "plan_id": "plan-id-here",
  "bind_resource": {"app_guid": "app-guid-here"},
  "parameters": {"parameter1-name-here": 1, "parameter2-name-here": "parameter2-value-here"}
}`

const specBinding = `{
  "metadata": {"expires_at": "2019-12-31T23:59:59.0Z"},
  "credentials": {"uri": "mysql://mysqluser:pass@mysqlhost:3306/dbname", "username": "mysqluser", "password": "pass", "host": "mysqlhost", "port": 3306, "database": "dbname"},
  "endpoints": [{"host": "mysqlhost", "ports": ["3306"], "protocol": "tcp"}],
  "parameters": {"billing-account": "abcde12345"}
}`

const specGetInstance = `{
  "dashboard_url": "http://example-dashboard.example.com/9189kdfsk0vfnku",
  "parameters": {"billing-account": "abcde12345"},
  "maintenance_info": {"version": "2.1.1+abcdef"},
  "metadata": {"labels": {"key1": "value1"}, "attributes": {"key1": "value1"}},
  "service_id": "service-id-here",
  "plan_id": "plan-id-here"
}`

func TestSpecExamplesRoundTrip(t *testing.T) {
	tests := []struct {
		name string
		body string
		into any
	}{
		{"catalog", specCatalog, &osbapi.Catalog{}},
		{"provision request", specProvision, &osbapi.ProvisionRequest{}},
		{"provision answer", `{"dashboard_url": "http://example-dashboard.example.com/9189kdfsk0vfnku", "operation": "task_10", "metadata": {"labels": {"key1": "value1"}}}`, &osbapi.InstanceResponse{}},
		{"update request", specUpdate, &osbapi.UpdateRequest{}},
		{"deprovision answer", `{"operation": "task_10"}`, &osbapi.OperationResponse{}},
		{"fetch instance answer", specGetInstance, &osbapi.GetInstanceResponse{}},
		{"bind request", specBind, &osbapi.BindRequest{}},
		{"bind answer", specBinding, &osbapi.Binding{}},
		{"last operation", `{"state": "failed", "description": "Creating service (10% complete).", "instance_usable": true, "update_repeatable": false}`, &osbapi.LastOperationResponse{}},
		{"error", `{"error": "ConcurrencyError", "description": "Another operation for this Service Instance is in progress."}`, &osbapi.ErrorResponse{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			require.NoError(t, json.Unmarshal([]byte(tt.body), tt.into))
			out, err := json.Marshal(tt.into)
			require.NoError(t, err)
			assert.JSONEq(t, tt.body, string(out))
		})
	}
}

func TestEmptyAnswersAreEmptyObjects(t *testing.T) {
	for _, v := range []any{osbapi.OperationResponse{}, osbapi.InstanceResponse{}, osbapi.ErrorResponse{}} {
		out, err := json.Marshal(v)
		require.NoError(t, err)
		assert.JSONEq(t, `{}`, string(out), "%T", v)
	}
}

func TestSecretsNeverPrinted(t *testing.T) {
	var cat osbapi.Catalog
	require.NoError(t, json.Unmarshal([]byte(specCatalog), &cat))
	dc := cat.Services[0].DashboardClient
	require.NotNil(t, dc)
	b := osbapi.Binding{Credentials: map[string]any{"password": "pass-secret"}}
	for _, s := range []string{dc.String(), dc.GoString(), b.String(), b.GoString()} {
		assert.NotContains(t, s, "277cabb0")
		assert.NotContains(t, s, "pass-secret")
	}
}

func TestCatalogDefaults(t *testing.T) {
	var cat osbapi.Catalog
	require.NoError(t, json.Unmarshal([]byte(specCatalog), &cat))
	require.NoError(t, cat.Validate())
	one, err := cat.FindPlan("fake-service", "fake-plan-1")
	require.NoError(t, err)
	assert.True(t, one.Bindable(), "from the service")
	assert.True(t, one.Updateable(), "from the service")
	assert.False(t, one.Plan.IsFree())
	assert.NotEmpty(t, one.CreateSchema())
	assert.NotEmpty(t, one.UpdateSchema())
	assert.NotEmpty(t, one.BindSchema())
	two, err := cat.FindPlan("fake-service", "fake-plan-2")
	require.NoError(t, err)
	assert.False(t, two.Bindable(), "the plan overrides the service")
	assert.False(t, two.Updateable(), "the plan overrides the service")
	_, err = cat.FindPlan("fake-service", "none")
	assert.EqualError(t, err, `plan "none" is not offered by service "fake-service" (its plans: fake-plan-1, fake-plan-2)`)
}

func TestStateFinal(t *testing.T) {
	assert.False(t, osbapi.StateInProgress.Final())
	assert.True(t, osbapi.StateSucceeded.Final())
	assert.True(t, osbapi.StateFailed.Final())
}
