package fakebroker_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lockstep-dev/lockstep/internal/broker/fakebroker"
	"github.com/lockstep-dev/lockstep/internal/broker/osbapi"
)

const (
	small = fakebroker.PlanSmallID
	large = fakebroker.PlanLargeID
	fixed = fakebroker.PlanFixedID
)

func TestDefaultInstanceLifecycle(t *testing.T) {
	b := fakebroker.New(t)
	o := newOSB(t, b)
	steps := []struct {
		name string
		do   func() int
		want int
	}{
		{"get before provision", func() int { return o.getInstance("i1") }, 404},
		{"provision", func() int { return o.provision("i1", small, `{"storageGB": 1}`) }, 201},
		{"identical repeat", func() int { return o.provision("i1", small, `{"storageGB": 1}`) }, 200},
		{"different parameters", func() int { return o.provision("i1", small, `{"storageGB": 2}`) }, 409},
		{"different plan", func() int { return o.provision("i1", large, `{"storageGB": 1}`) }, 409},
		{"unknown plan", func() int { return o.provision("i2", "no-such-plan", ``) }, 400},
		{"get", func() int { return o.getInstance("i1") }, 200},
		{"update plan and parameters", func() int { return o.update("i1", large, `{"storageGB": 5}`) }, 200},
		{"update to a plan that is not updateable", func() int { return o.update("i1", fixed, ``) }, 400},
		{"update to an unknown plan", func() int { return o.update("i1", "nope", ``) }, 400},
		{"update of an unknown instance", func() int { return o.update("i9", "", ``) }, 400},
		{"update without plan keeps it", func() int { return o.update("i1", "", `{"storageGB": 6}`) }, 200},
		{"deprovision with the wrong plan", func() int { return o.deprovision("i1", small) }, 400},
		{"deprovision", func() int { return o.deprovision("i1", large) }, 200},
		{"deprovision again", func() int { return o.deprovision("i1", large) }, 410},
		{"get after deprovision", func() int { return o.getInstance("i1") }, 404},
	}
	for _, s := range steps {
		require.Equal(t, s.want, s.do(), s.name)
		if s.name == "update without plan keeps it" {
			inst, ok := b.Instance("i1")
			require.True(t, ok)
			assert.Equal(t, large, inst.PlanID)
			assert.Equal(t, map[string]any{"storageGB": float64(6)}, inst.Parameters)
			assert.Equal(t, map[string]any{"platform": "kubernetes", "namespace": "ns"}, inst.Context)
		}
	}
	assert.Empty(t, b.Instances())
}

func TestDefaultBindingLifecycle(t *testing.T) {
	b := fakebroker.New(t)
	o := newOSB(t, b)
	require.Equal(t, 201, o.provision("i1", small, ``))
	steps := []struct {
		name string
		do   func() int
		want int
	}{
		{"get before bind", func() int { return o.getBinding("i1", "b1") }, 404},
		{"bind", func() int { return o.bind("i1", "b1", `{"role": "reader"}`) }, 201},
		{"identical repeat", func() int { return o.bind("i1", "b1", `{"role": "reader"}`) }, 200},
		{"different parameters", func() int { return o.bind("i1", "b1", `{"role": "writer"}`) }, 409},
		{"bind to an unknown instance", func() int { return o.bind("i9", "b1", ``) }, 400},
		{"get", func() int { return o.getBinding("i1", "b1") }, 200},
		{"deprovision while bound", func() int { return o.deprovision("i1", small) }, 400},
		{"unbind", func() int { return o.unbind("i1", "b1") }, 200},
		{"unbind again", func() int { return o.unbind("i1", "b1") }, 410},
		{"get after unbind", func() int { return o.getBinding("i1", "b1") }, 404},
		{"deprovision", func() int { return o.deprovision("i1", small) }, 200},
	}
	for _, s := range steps {
		require.Equal(t, s.want, s.do(), s.name)
	}
	assert.Empty(t, b.Bindings())
}

func TestBindCredentials(t *testing.T) {
	b := fakebroker.New(t)
	o := newOSB(t, b)
	require.Equal(t, 201, o.provision("i1", small, ``))
	first, err := o.c.Bind(testCtx(t), meta, bind("i1", "b1", ``))
	require.NoError(t, err)
	again, err := o.c.Bind(testCtx(t), meta, bind("i1", "b1", ``))
	require.NoError(t, err)
	other, err := o.c.Bind(testCtx(t), meta, bind("i1", "b2", ``))
	require.NoError(t, err)

	held, ok := b.Binding("i1", "b1")
	require.True(t, ok)
	assert.Equal(t, "user-b1", held.Credentials["username"])
	assert.NotEmpty(t, held.Credentials["password"])
	assert.Equal(t, held.Credentials, first.Binding.Credentials)
	assert.Equal(t, held.Credentials, again.Binding.Credentials, "a repeat returns the same credentials")
	assert.NotEqual(t, held.Credentials["password"], other.Binding.Credentials["password"], "every binding has its own password")
}

func TestBindNotBindable(t *testing.T) {
	b := fakebroker.New(t)
	o := newOSB(t, b)
	require.Equal(t, 201, o.provision("i1", fixed, ``))
	req := bind("i1", "b1", ``)
	req.PlanID = fixed
	_, err := o.c.Bind(testCtx(t), meta, req)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "is not bindable")
}

func TestRequestsAnyBrokerRefuses(t *testing.T) {
	b := fakebroker.New(t, fakebroker.WithBasicAuth("u", "p"))
	r := newRaw(t, b)
	auth := map[string]string{"Authorization": "Basic dTpw"} // u:p
	tests := []struct {
		name, method, path, body string
		headers                  map[string]string
		want                     int
		wantBody                 string
		wantOp                   fakebroker.Op
	}{
		{"no credentials", "GET", "/v2/catalog", "", nil, 401, "missing or wrong credentials", fakebroker.OpCatalog},
		{"no API version", "GET", "/v2/catalog", "", map[string]string{"Authorization": auth["Authorization"], osbapi.HeaderAPIVersion: ""}, 412, "X-Broker-API-Version header is missing", fakebroker.OpCatalog},
		{"unknown path", "GET", "/v3/catalog", "", auth, 404, "not part of the OSB API", fakebroker.OpUnknown},
		{"body not JSON", "PUT", "/v2/service_instances/i1", "{", auth, 400, "not a JSON object", fakebroker.OpProvision},
		{"parameters not an object", "PUT", "/v2/service_instances/i1",
			`{"service_id": "db-service-id", "plan_id": "db-small-plan-id", "parameters": [1]}`, auth, 400, "parameters must be a JSON object", fakebroker.OpProvision},
		{"no organization_guid or space_guid", "PUT", "/v2/service_instances/i1", `{"service_id": "db-service-id", "plan_id": "db-small-plan-id"}`,
			auth, 400, `{"errors":[{"msg":"Missing organization_guid"},{"msg":"Missing space_guid"}]}`, fakebroker.OpProvision},
		{"no service_id", "PUT", "/v2/service_instances/i1", `{"plan_id": "db-small-plan-id"}`, auth, 400, "service_id and plan_id are required", fakebroker.OpProvision},
		{"update without service_id", "PATCH", "/v2/service_instances/i1", `{}`, auth, 400, "service_id is required", fakebroker.OpUpdate},
		{"deprovision without plan_id", "DELETE", "/v2/service_instances/i1?service_id=db-service-id", "", auth, 400, "query parameters are required", fakebroker.OpDeprovision},
		{"unbind without service_id", "DELETE", "/v2/service_instances/i1/service_bindings/b1?plan_id=x", "", auth, 400, "query parameters are required", fakebroker.OpUnbind},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b.ResetCalls()
			got, body := r.do(tt.method, tt.path, tt.body, tt.headers)
			assert.Equal(t, tt.want, got)
			assert.Contains(t, body, tt.wantBody)
			call, ok := b.LastCall(tt.wantOp)
			require.True(t, ok, "the request is recorded")
			assert.Equal(t, tt.want, call.Status)
		})
	}
	assert.Empty(t, b.Instances())
}

func TestSetCatalog(t *testing.T) {
	b := fakebroker.New(t)
	cat := fakebroker.DefaultCatalog()
	cat.Services = cat.Services[1:] // only "queue"
	require.NoError(t, b.SetCatalog(cat))
	cat.Services[0].Name = "changed after SetCatalog"

	got, err := newClient(t, b).Catalog(testCtx(t), meta)
	require.NoError(t, err)
	require.Len(t, got.Services, 1)
	assert.Equal(t, fakebroker.ServiceQueue, got.Services[0].Name, "the broker keeps its own copy")
	assert.Equal(t, fakebroker.ServiceQueue, b.Catalog().Services[0].Name)

	o := newOSB(t, b)
	assert.Equal(t, 400, o.provision("i1", small, ``), "plans that left the catalog cannot be provisioned")
}

func TestWithCatalog(t *testing.T) {
	cat := fakebroker.DefaultCatalog()
	cat.Services = cat.Services[:1]
	b := fakebroker.New(t, fakebroker.WithCatalog(cat))
	assert.Len(t, b.Catalog().Services, 1)
}

func TestStateAccessorsReturnCopies(t *testing.T) {
	b := fakebroker.New(t)
	o := newOSB(t, b)
	require.Equal(t, 201, o.provision("i1", small, `{"storageGB": 1}`))
	require.Equal(t, 201, o.bind("i1", "b1", `{"role": "reader"}`))

	inst, _ := b.Instance("i1")
	inst.Parameters["storageGB"] = 99
	all := b.Instances()
	all["i1"].Parameters["storageGB"] = 98
	bnd, _ := b.Binding("i1", "b1")
	bnd.Credentials["password"] = "changed"
	b.Bindings()[0].Parameters["role"] = "writer"

	inst, _ = b.Instance("i1")
	assert.Equal(t, float64(1), inst.Parameters["storageGB"])
	bnd, _ = b.Binding("i1", "b1")
	assert.NotEqual(t, "changed", bnd.Credentials["password"])
	assert.Equal(t, "reader", bnd.Parameters["role"])
	assert.Equal(t, []string{"i1"}, b.InstanceIDs())
}

func TestPutAndResetState(t *testing.T) {
	b := fakebroker.New(t)
	b.PutInstance(fakebroker.Instance{ID: "i1", ServiceID: fakebroker.ServiceDBID, PlanID: small})
	b.PutBinding(fakebroker.Binding{InstanceID: "i1", ID: "b2", ServiceID: fakebroker.ServiceDBID, PlanID: small})
	b.PutBinding(fakebroker.Binding{InstanceID: "i1", ID: "b1", ServiceID: fakebroker.ServiceDBID, PlanID: small})
	inst, ok := b.Instance("i1")
	require.True(t, ok)
	assert.Equal(t, b.URL()+"/dashboard/i1", inst.DashboardURL)
	bindings := b.Bindings()
	require.Len(t, bindings, 2)
	assert.Equal(t, "b1", bindings[0].ID, "sorted")

	o := newOSB(t, b)
	assert.Equal(t, 200, o.provision("i1", small, ``), "a put instance behaves as provisioned")

	b.ResetState()
	assert.Empty(t, b.Instances())
	assert.Empty(t, b.Bindings())
	assert.Empty(t, b.Operations())
}
