package broker_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lockstep-dev/lockstep/internal/broker"
	"github.com/lockstep-dev/lockstep/internal/broker/brokertest"
)

func TestCatalogFetch(t *testing.T) {
	b := brokertest.New(t)
	c := newClient(t, b)
	cat, err := c.Catalog(testCtx(t), meta)
	require.NoError(t, err)
	want, err := json.Marshal(brokertest.DefaultCatalog())
	require.NoError(t, err)
	got, err := json.Marshal(cat)
	require.NoError(t, err)
	assert.JSONEq(t, string(want), string(got))

	sp, err := cat.FindPlan(brokertest.ServiceDB, brokertest.PlanSmall)
	require.NoError(t, err)
	assert.Equal(t, brokertest.PlanSmallID, sp.Plan.ID)
	assert.Equal(t, brokertest.ServiceDBID, sp.Service.ID)

	var create, update struct {
		Properties map[string]any `json:"properties"`
	}
	require.NoError(t, json.Unmarshal(sp.CreateSchema(), &create))
	require.NoError(t, json.Unmarshal(sp.UpdateSchema(), &update))
	assert.Contains(t, create.Properties, "region")
	assert.NotContains(t, update.Properties, "region", "region is create-only")
	assert.NotEmpty(t, sp.BindSchema())
}

func TestCatalogFetchFailures(t *testing.T) {
	tests := []struct {
		name    string
		answer  brokertest.Respond
		wantErr errCheck
	}{
		{
			name:    "no services list",
			answer:  brokertest.Respond{Status: 200, Body: `{}`},
			wantErr: errCheck{is: broker.IsMalformed, msg: []string{`no "services" list`}},
		},
		{
			name:    "invalid catalog",
			answer:  brokertest.Respond{Status: 200, Body: `{"services": [{"id": "s", "name": "", "plans": [{"id": "p", "name": "a"}, {"id": "p", "name": "a"}]}]}`},
			wantErr: errCheck{is: broker.IsMalformed, msg: []string{`services[0] has no name`, `repeats plan id "p"`}},
		},
		{
			name:    "not JSON",
			answer:  brokertest.Respond{Status: 200, Malformed: true},
			wantErr: errCheck{is: broker.IsMalformed, msg: []string{"status 200, invalid JSON: ", `body begins "{\"this is\"`}},
		},
		{
			name:    "500",
			answer:  brokertest.Respond{Status: 500, Description: "catalog store down"},
			wantErr: errCheck{is: isHTTPStatus(500), msg: []string{`"catalog store down" (GET /v2/catalog)`}, retryable: true},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := brokertest.New(t)
			b.Script(brokertest.OpCatalog, tt.answer)
			_, err := newClient(t, b).Catalog(testCtx(t), meta)
			tt.wantErr.check(t, err)
		})
	}
}

func TestServicePlanOverrides(t *testing.T) {
	cat := brokertest.DefaultCatalog()
	tests := []struct {
		service, plan  string
		wantBindable   bool
		wantUpdateable bool
		wantFree       bool
	}{
		{brokertest.ServiceDB, brokertest.PlanSmall, true, true, true},
		{brokertest.ServiceDB, brokertest.PlanLarge, true, true, false},
		{brokertest.ServiceDB, brokertest.PlanFixed, false, false, true},
		{brokertest.ServiceQueue, brokertest.PlanStandard, false, false, true},
		{brokertest.ServiceQueue, brokertest.PlanShared, true, false, true},
	}
	for _, tt := range tests {
		t.Run(tt.service+"/"+tt.plan, func(t *testing.T) {
			sp, err := cat.FindPlan(tt.service, tt.plan)
			require.NoError(t, err)
			assert.Equal(t, tt.wantBindable, sp.Bindable(), "Bindable")
			assert.Equal(t, tt.wantUpdateable, sp.Updateable(), "Updateable")
			assert.Equal(t, tt.wantFree, sp.Plan.IsFree(), "IsFree")
		})
	}
}

func TestFind(t *testing.T) {
	cat := brokertest.DefaultCatalog()
	_, err := cat.FindService("mq")
	assert.EqualError(t, err, `service "mq" is not in the broker's catalog (it offers: db, queue)`)
	_, err = cat.FindPlan("db", "huge")
	assert.EqualError(t, err, `plan "huge" is not offered by service "db" (its plans: small, large, fixed)`)
	_, err = (&broker.Catalog{}).FindService("db")
	assert.EqualError(t, err, `service "db" is not in the broker's catalog (it offers: none)`)

	s, ok := cat.FindServiceByID(brokertest.ServiceQueueID)
	require.True(t, ok)
	p, ok := s.FindPlanByID(brokertest.PlanSharedID)
	require.True(t, ok)
	assert.Equal(t, brokertest.PlanShared, p.Name)
	_, ok = s.FindPlanByID(brokertest.PlanSmallID)
	assert.False(t, ok)
	_, ok = cat.FindServiceByID("nope")
	assert.False(t, ok)

	sp, err := cat.FindPlan(brokertest.ServiceQueue, brokertest.PlanStandard)
	require.NoError(t, err)
	assert.Nil(t, sp.CreateSchema())
	assert.Nil(t, sp.UpdateSchema())
	assert.Nil(t, sp.BindSchema())
}

func TestCatalogValidate(t *testing.T) {
	plan := func(id, name string) broker.Plan { return broker.Plan{ID: id, Name: name} }
	tests := []struct {
		name string
		cat  broker.Catalog
		want string // empty: valid
	}{
		{name: "default", cat: brokertest.DefaultCatalog()},
		{name: "empty", cat: broker.Catalog{Services: []broker.Service{}}},
		{
			name: "service without id and plans",
			cat:  broker.Catalog{Services: []broker.Service{{Name: "a"}}},
			want: `invalid catalog: service "a" has no id; service "a" has no plans`,
		},
		{
			name: "duplicate service names and ids",
			cat: broker.Catalog{Services: []broker.Service{
				{ID: "s", Name: "a", Plans: []broker.Plan{plan("p1", "x")}},
				{ID: "s", Name: "a", Plans: []broker.Plan{plan("p2", "x")}},
			}},
			want: `invalid catalog: service "a" repeats service id "s"; service "a" appears twice`,
		},
		{
			name: "plan without id or name, duplicate plan name",
			cat: broker.Catalog{Services: []broker.Service{
				{ID: "s", Name: "a", Plans: []broker.Plan{{}, plan("p1", "x"), plan("p2", "x")}},
			}},
			want: `invalid catalog: service "a" plans[0] has no id; service "a" plans[0] has no name; service "a" plan "x" appears twice`,
		},
		{
			name: "invalid schema",
			cat: broker.Catalog{Services: []broker.Service{{ID: "s", Name: "a", Plans: []broker.Plan{{
				ID: "p", Name: "x", Schemas: &broker.Schemas{ServiceInstance: &broker.ServiceInstanceSchemas{
					Update: &broker.InputParameters{Parameters: json.RawMessage(`{"type":`)},
				}},
			}}}}},
			want: `invalid catalog: service "a" plan "x" has an invalid update schema`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.cat.Validate()
			if tt.want == "" {
				assert.NoError(t, err)
				return
			}
			assert.EqualError(t, err, tt.want)
		})
	}
}

func TestCatalogIgnoresDashboardClientSecret(t *testing.T) {
	b := brokertest.New(t)
	b.Script(brokertest.OpCatalog, brokertest.Respond{Status: 200, Body: `{"services": [{"id": "s", "name": "a", "bindable": true,
		"dashboard_client": {"id": "dc", "secret": "dash-secret", "redirect_uri": "https://x"},
		"plans": [{"id": "p", "name": "x"}]}]}`})
	cat, err := newClient(t, b).Catalog(testCtx(t), meta)
	require.NoError(t, err)
	raw, err := json.Marshal(cat)
	require.NoError(t, err)
	assert.NotContains(t, string(raw), "dash-secret")
}
