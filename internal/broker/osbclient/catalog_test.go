package osbclient_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lockstep-dev/lockstep/internal/broker/fakebroker"
	"github.com/lockstep-dev/lockstep/internal/broker/osbapi"
	"github.com/lockstep-dev/lockstep/internal/broker/osbclient"
)

func TestCatalogFetch(t *testing.T) {
	b := fakebroker.New(t)
	c := newClient(t, b)
	cat, err := c.Catalog(testCtx(t), meta)
	require.NoError(t, err)
	want, err := json.Marshal(fakebroker.DefaultCatalog())
	require.NoError(t, err)
	got, err := json.Marshal(cat)
	require.NoError(t, err)
	assert.JSONEq(t, string(want), string(got))

	sp, err := cat.FindPlan(fakebroker.ServiceDB, fakebroker.PlanSmall)
	require.NoError(t, err)
	assert.Equal(t, fakebroker.PlanSmallID, sp.Plan.ID)
	assert.Equal(t, fakebroker.ServiceDBID, sp.Service.ID)

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
		answer  fakebroker.Respond
		wantErr errCheck
	}{
		{
			name:    "no services list",
			answer:  fakebroker.Respond{Status: 200, Body: `{}`},
			wantErr: errCheck{is: osbclient.IsMalformed, msg: []string{`no "services" list`}},
		},
		{
			name:    "invalid catalog",
			answer:  fakebroker.Respond{Status: 200, Body: `{"services": [{"id": "s", "name": "", "plans": [{"id": "p", "name": "a"}, {"id": "p", "name": "a"}]}]}`},
			wantErr: errCheck{is: osbclient.IsMalformed, msg: []string{`services[0] has no name`, `repeats plan id "p"`}},
		},
		{
			name:    "not JSON",
			answer:  fakebroker.Respond{Status: 200, Malformed: true},
			wantErr: errCheck{is: osbclient.IsMalformed, msg: []string{"status 200, invalid JSON: ", `body begins "{\"this is\"`}},
		},
		{
			name:    "500",
			answer:  fakebroker.Respond{Status: 500, Description: "catalog store down"},
			wantErr: errCheck{is: isHTTPStatus(500), msg: []string{`"catalog store down" (GET /v2/catalog)`}, retryable: true},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := fakebroker.New(t)
			b.Script(fakebroker.OpCatalog, tt.answer)
			_, err := newClient(t, b).Catalog(testCtx(t), meta)
			tt.wantErr.check(t, err)
		})
	}
}

func TestServicePlanOverrides(t *testing.T) {
	cat := fakebroker.DefaultCatalog()
	tests := []struct {
		service, plan  string
		wantBindable   bool
		wantUpdateable bool
		wantFree       bool
	}{
		{fakebroker.ServiceDB, fakebroker.PlanSmall, true, true, true},
		{fakebroker.ServiceDB, fakebroker.PlanLarge, true, true, false},
		{fakebroker.ServiceDB, fakebroker.PlanFixed, false, false, true},
		{fakebroker.ServiceQueue, fakebroker.PlanStandard, false, false, true},
		{fakebroker.ServiceQueue, fakebroker.PlanShared, true, false, true},
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
	cat := fakebroker.DefaultCatalog()
	_, err := cat.FindService("mq")
	assert.EqualError(t, err, `service "mq" is not in the broker's catalog (it offers: db, queue)`)
	_, err = cat.FindPlan("db", "huge")
	assert.EqualError(t, err, `plan "huge" is not offered by service "db" (its plans: small, large, fixed)`)
	_, err = (&osbapi.Catalog{}).FindService("db")
	assert.EqualError(t, err, `service "db" is not in the broker's catalog (it offers: none)`)

	s, ok := cat.FindServiceByID(fakebroker.ServiceQueueID)
	require.True(t, ok)
	p, ok := s.FindPlanByID(fakebroker.PlanSharedID)
	require.True(t, ok)
	assert.Equal(t, fakebroker.PlanShared, p.Name)
	_, ok = s.FindPlanByID(fakebroker.PlanSmallID)
	assert.False(t, ok)
	_, ok = cat.FindServiceByID("nope")
	assert.False(t, ok)

	sp, err := cat.FindPlan(fakebroker.ServiceQueue, fakebroker.PlanStandard)
	require.NoError(t, err)
	assert.Nil(t, sp.CreateSchema())
	assert.Nil(t, sp.UpdateSchema())
	assert.Nil(t, sp.BindSchema())
}

func TestCatalogValidate(t *testing.T) {
	plan := func(id, name string) osbapi.Plan { return osbapi.Plan{ID: id, Name: name} }
	tests := []struct {
		name string
		cat  osbapi.Catalog
		want string // empty: valid
	}{
		{name: "default", cat: fakebroker.DefaultCatalog()},
		{name: "empty", cat: osbapi.Catalog{Services: []osbapi.Service{}}},
		{
			name: "service without id and plans",
			cat:  osbapi.Catalog{Services: []osbapi.Service{{Name: "a"}}},
			want: `invalid catalog: service "a" has no id; service "a" has no plans`,
		},
		{
			name: "duplicate service names and ids",
			cat: osbapi.Catalog{Services: []osbapi.Service{
				{ID: "s", Name: "a", Plans: []osbapi.Plan{plan("p1", "x")}},
				{ID: "s", Name: "a", Plans: []osbapi.Plan{plan("p2", "x")}},
			}},
			want: `invalid catalog: service "a" repeats service id "s"; service "a" appears twice`,
		},
		{
			name: "plan without id or name, duplicate plan name",
			cat: osbapi.Catalog{Services: []osbapi.Service{
				{ID: "s", Name: "a", Plans: []osbapi.Plan{{}, plan("p1", "x"), plan("p2", "x")}},
			}},
			want: `invalid catalog: service "a" plans[0] has no id; service "a" plans[0] has no name; service "a" plan "x" appears twice`,
		},
		{
			name: "invalid schema",
			cat: osbapi.Catalog{Services: []osbapi.Service{{ID: "s", Name: "a", Plans: []osbapi.Plan{{
				ID: "p", Name: "x", Schemas: &osbapi.Schemas{ServiceInstance: &osbapi.ServiceInstanceSchemas{
					Update: &osbapi.InputParameters{Parameters: json.RawMessage(`{"type":`)},
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
	b := fakebroker.New(t)
	b.Script(fakebroker.OpCatalog, fakebroker.Respond{Status: 200, Body: `{"services": [{"id": "s", "name": "a", "bindable": true,
		"dashboard_client": {"id": "dc", "secret": "dash-secret", "redirect_uri": "https://x"},
		"plans": [{"id": "p", "name": "x"}]}]}`})
	cat, err := newClient(t, b).Catalog(testCtx(t), meta)
	require.NoError(t, err)
	raw, err := json.Marshal(cat)
	require.NoError(t, err)
	assert.NotContains(t, string(raw), "dash-secret")
}
