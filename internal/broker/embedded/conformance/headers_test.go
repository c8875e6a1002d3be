package conformance

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestHeaders(t *testing.T) {
	h := newHarness(t)
	tests := []struct {
		name     string
		path     string
		opts     []reqOption
		want     int
		wantDesc string
	}{
		{"valid", "/v2/catalog", nil, http.StatusOK, ""},
		{"oldest supported version", "/v2/catalog", []reqOption{header("X-Broker-API-Version", "2.14")}, http.StatusOK, ""},
		{"newer minor version", "/v2/catalog", []reqOption{header("X-Broker-API-Version", "2.99")}, http.StatusOK, ""},
		{"no version", "/v2/catalog", []reqOption{noHeader("X-Broker-API-Version")}, http.StatusPreconditionFailed, "header is required"},
		{"too old a version", "/v2/catalog", []reqOption{header("X-Broker-API-Version", "2.13")}, http.StatusPreconditionFailed, "2.13 is not supported"},
		{"another major version", "/v2/catalog", []reqOption{header("X-Broker-API-Version", "3.0")}, http.StatusPreconditionFailed, "not supported"},
		{"malformed version", "/v2/catalog", []reqOption{header("X-Broker-API-Version", "latest")}, http.StatusPreconditionFailed, "not MAJOR.MINOR"},
		{"no credentials", "/v2/catalog", []reqOption{noAuth()}, http.StatusUnauthorized, "basic authentication"},
		{"wrong password", "/v2/catalog", []reqOption{basicAuth(username, "guess")}, http.StatusUnauthorized, "authentication failed"},
		{"credentials are checked before the version", "/v2/catalog", []reqOption{noAuth(), noHeader("X-Broker-API-Version")}, http.StatusUnauthorized, ""},
		{"valid originating identity", "/v2/catalog", []reqOption{identity("kubernetes", map[string]any{"username": "alice"})}, http.StatusOK, ""},
		{"identity not base64", "/v2/catalog", []reqOption{header("X-Broker-API-Originating-Identity", "kubernetes %%%")}, http.StatusBadRequest, "not base64"},
		{"identity without a value", "/v2/catalog", []reqOption{header("X-Broker-API-Originating-Identity", "kubernetes")}, http.StatusBadRequest, "platform or value missing"},
		{"identity not a JSON object", "/v2/catalog", []reqOption{identity("kubernetes", []int{1})}, http.StatusBadRequest, "not a JSON object"},
		{"no such endpoint", "/v2/nothing", nil, http.StatusNotFound, "no OSB endpoint"},
		{"a method the endpoint does not take", "/v2/catalog", []reqOption{method("DELETE")}, http.StatusMethodNotAllowed, "/v2/catalog does not take DELETE (it takes GET)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			opts := append([]reqOption{header("X-Broker-API-Request-Identity", "req-"+tt.name)}, tt.opts...)
			r := h.do("GET", tt.path, nil, opts...)
			requireStatus(t, tt.want, r)
			assert.Contains(t, r.str("description"), tt.wantDesc)
			assert.Equal(t, "req-"+tt.name, r.header.Get("X-Broker-API-Request-Identity"), "the request identity is echoed on every answer")
			if tt.want == http.StatusUnauthorized {
				assert.Contains(t, r.header.Get("WWW-Authenticate"), "Basic")
			}
		})
	}
}

func TestIdentitiesAreRecordedOnTheJob(t *testing.T) {
	h := newHarness(t)
	r := h.do("PUT", instPath("i-id"), quick(map[string]any{"size": 1}),
		identity("kubernetes", map[string]any{"username": "alice", "groups": []string{"dev"}}),
		header("X-Broker-API-Request-Identity", "req-42"))
	requireStatus(t, http.StatusCreated, r)
	j := h.job(h.instance("i-id").Job)
	require.NotNil(t, j.Identity)
	assert.Equal(t, "kubernetes", j.Identity.Platform)
	assert.JSONEq(t, `{"username":"alice","groups":["dev"]}`, string(j.Identity.Value))
	assert.Equal(t, "req-42", j.RequestID)
	assert.Equal(t, h.broker.RunnerID(), j.RunnerID)
}

func TestCatalog(t *testing.T) {
	h := newHarness(t)
	r := h.do("GET", "/v2/catalog", nil)
	requireStatus(t, http.StatusOK, r)
	services := r.body["services"].([]any)
	require.Len(t, services, 2)
	q := services[0].(map[string]any)
	assert.Equal(t, "quick", q["name"])
	assert.Equal(t, "svc-quick", q["id"])
	assert.Equal(t, true, q["bindable"])
	assert.Equal(t, true, q["instances_retrievable"])
	assert.Equal(t, true, q["bindings_retrievable"])
	plans := q["plans"].([]any)
	require.Len(t, plans, 3)
	small := plans[0].(map[string]any)
	assert.Equal(t, true, small["plan_updateable"])
	assert.Equal(t, false, plans[1].(map[string]any)["plan_updateable"])
	assert.Equal(t, false, plans[2].(map[string]any)["bindable"])
	create := small["schemas"].(map[string]any)["service_instance"].(map[string]any)["create"].(map[string]any)["parameters"].(map[string]any)
	assert.NotEmpty(t, create["$schema"])
	assert.Contains(t, create["properties"], "region", "region is in create...")
	update := small["schemas"].(map[string]any)["service_instance"].(map[string]any)["update"].(map[string]any)["parameters"].(map[string]any)
	assert.NotContains(t, update["properties"], "region", "...and not in update: create-only")
	assert.Equal(t, "slow", services[1].(map[string]any)["name"])
}
