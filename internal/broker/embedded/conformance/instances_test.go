package conformance

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lockstep-dev/lockstep/internal/broker/embedded/bundle"
)

func TestProvisionSynchronous(t *testing.T) {
	h := newHarness(t)
	params := map[string]any{"size": 1, "region": "eu"}
	r := h.do("PUT", instPath("i1"), quick(params))
	requireStatus(t, http.StatusCreated, r)
	assert.Equal(t, "https://dashboard.example/i1", r.str("dashboard_url"))
	assert.Empty(t, r.str("operation"))

	tests := []struct {
		name  string
		query string
		body  map[string]any
		want  int
	}{
		{"identical repeat", "", quick(params), http.StatusOK},
		{"identical repeat accepting incomplete", "?accepts_incomplete=true", quick(params), http.StatusOK},
		{"identical parameters in another order", "", quick(map[string]any{"region": "eu", "size": 1}), http.StatusOK},
		{"different parameters", "", quick(map[string]any{"size": 2, "region": "eu"}), http.StatusConflict},
		{"different plan", "", map[string]any{"service_id": "svc-quick", "plan_id": "plan-large", "organization_guid": "org", "space_guid": "space"}, http.StatusConflict},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := h.do("PUT", instPath("i1")+tt.query, tt.body)
			requireStatus(t, tt.want, r)
			if tt.want == http.StatusOK {
				assert.Equal(t, "https://dashboard.example/i1", r.str("dashboard_url"))
			}
		})
	}
	assert.Equal(t, 1, h.exec.ran(bundle.Provision, "i1", ""), "repeats run nothing")

	r = h.do("GET", instPath("i1"), nil)
	requireStatus(t, http.StatusOK, r)
	assert.Equal(t, "svc-quick", r.str("service_id"))
	assert.Equal(t, "plan-small", r.str("plan_id"))
	assert.Equal(t, "https://dashboard.example/i1", r.str("dashboard_url"))
	assert.Equal(t, map[string]any{"size": float64(1), "region": "eu"}, r.body["parameters"])

	r = h.do("GET", instPath("i1")+"/last_operation", nil)
	requireStatus(t, http.StatusOK, r)
	assert.Equal(t, "succeeded", r.str("state"))
	assert.Empty(t, r.header.Get("Retry-After"))
}

func TestProvisionRejected(t *testing.T) {
	h := newHarness(t)
	tests := []struct {
		name     string
		query    string
		body     any
		want     int
		wantCode string
		wantDesc string
	}{
		{"no service_id", "", map[string]any{"plan_id": "plan-small", "organization_guid": "org", "space_guid": "space"}, http.StatusBadRequest, "", "service_id and plan_id are required"},
		{"no plan_id", "", map[string]any{"service_id": "svc-quick", "organization_guid": "org", "space_guid": "space"}, http.StatusBadRequest, "", "service_id and plan_id are required"},
		{"unknown service_id", "", map[string]any{"service_id": "svc-nope", "plan_id": "plan-small", "organization_guid": "org", "space_guid": "space"}, http.StatusBadRequest, "", `service_id "svc-nope" is not in the broker's catalog`},
		{"unknown plan_id", "", map[string]any{"service_id": "svc-quick", "plan_id": "plan-nope", "organization_guid": "org", "space_guid": "space"}, http.StatusBadRequest, "", `plan_id "plan-nope" is not a plan of service "quick"`},
		{"parameters violate the create schema", "", quick(map[string]any{"size": 0}), http.StatusBadRequest, "", "create schema"},
		{"parameter the schema does not know", "", quick(map[string]any{"size": 1, "colour": "red"}), http.StatusBadRequest, "", "colour"},
		{"parameters not an object", "", map[string]any{"service_id": "svc-quick", "plan_id": "plan-small", "organization_guid": "org", "space_guid": "space", "parameters": []int{1}}, http.StatusBadRequest, "", "parameters must be a JSON object"},
		{"body not JSON", "", "{nope", http.StatusBadRequest, "", "not the JSON object"},
		{"asynchronous service without accepts_incomplete", "", slow(), http.StatusUnprocessableEntity, "AsyncRequired", "accepts_incomplete=true"},
		{"no organization_guid", "", map[string]any{"service_id": "svc-quick", "plan_id": "plan-small", "space_guid": "space"}, http.StatusBadRequest, "", "organization_guid and space_guid are required"},
		{"no space_guid", "", map[string]any{"service_id": "svc-quick", "plan_id": "plan-small", "organization_guid": "org"}, http.StatusBadRequest, "", "organization_guid and space_guid are required"},
		{"maintenance_info the catalog does not have", "", map[string]any{"service_id": "svc-quick", "plan_id": "plan-small", "organization_guid": "org", "space_guid": "space", "maintenance_info": map[string]any{"version": "1.0.0"}}, http.StatusUnprocessableEntity, "MaintenanceInfoConflict", "no maintenance_info"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := h.do("PUT", instPath("rejected")+tt.query, tt.body)
			requireStatus(t, tt.want, r)
			assert.Equal(t, tt.wantCode, r.str("error"))
			assert.Contains(t, r.str("description"), tt.wantDesc)
			requireStatus(t, http.StatusNotFound, h.do("GET", instPath("rejected"), nil))
			requireStatus(t, http.StatusNotFound, h.do("GET", instPath("rejected")+"/last_operation", nil))
		})
	}
}

func TestProvisionAsynchronous(t *testing.T) {
	h := newHarness(t, async)
	release := h.exec.hold(t, bundle.Provision, "i-async", "")
	body := quick(map[string]any{"size": 1})
	r := h.do("PUT", instPath("i-async")+"?accepts_incomplete=true", body)
	requireStatus(t, http.StatusAccepted, r)
	op := r.str("operation")
	require.NotEmpty(t, op)
	h.exec.waitStarted(t, bundle.Provision, "i-async", "")

	tests := []struct {
		name     string
		method   string
		path     string
		body     any
		want     int
		wantCode string
	}{
		{"identical repeat answers the same operation", "PUT", instPath("i-async") + "?accepts_incomplete=true", body, http.StatusAccepted, ""},
		{"identical repeat without accepts_incomplete", "PUT", instPath("i-async"), body, http.StatusUnprocessableEntity, "ConcurrencyError"},
		{"conflicting repeat", "PUT", instPath("i-async") + "?accepts_incomplete=true", quick(map[string]any{"size": 2}), http.StatusConflict, ""},
		{"fetch while provisioning", "GET", instPath("i-async"), nil, http.StatusNotFound, ""},
		{"update while provisioning", "PATCH", instPath("i-async") + "?accepts_incomplete=true", map[string]any{"service_id": "svc-quick", "parameters": map[string]any{"size": 3}}, http.StatusUnprocessableEntity, "ConcurrencyError"},
		{"deprovision while provisioning", "DELETE", instPath("i-async") + "?accepts_incomplete=true&" + quickQuery, nil, http.StatusUnprocessableEntity, "ConcurrencyError"},
		{"bind while provisioning", "PUT", bindPath("i-async", "b") + "?accepts_incomplete=true", quickBind(nil), http.StatusUnprocessableEntity, "ConcurrencyError"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := h.do(tt.method, tt.path, tt.body)
			requireStatus(t, tt.want, r)
			assert.Equal(t, tt.wantCode, r.str("error"))
			if tt.want == http.StatusAccepted {
				assert.Equal(t, op, r.str("operation"))
			}
		})
	}

	for _, query := range []string{"", "?operation=" + op} {
		r = h.do("GET", instPath("i-async")+"/last_operation"+query, nil)
		requireStatus(t, http.StatusOK, r)
		assert.Equal(t, "in progress", r.str("state"))
		assert.Equal(t, "1", r.header.Get("Retry-After"))
	}

	release()
	h.waitLastOperation(instPath("i-async"), "succeeded")
	requireStatus(t, http.StatusOK, h.do("GET", instPath("i-async"), nil))
	requireStatus(t, http.StatusOK, h.do("PUT", instPath("i-async")+"?accepts_incomplete=true", body))

	// An asynchronous service answers 202 even to a quick action.
	r = h.do("PUT", instPath("i-slow")+"?accepts_incomplete=true", slow())
	requireStatus(t, http.StatusAccepted, r)
	h.waitLastOperation(instPath("i-slow"), "succeeded")
}

func TestSynchronousWindowAnswersQuickActionsAtOnce(t *testing.T) {
	h := newHarness(t) // a long sync window
	r := h.do("PUT", instPath("i-win")+"?accepts_incomplete=true", quick(map[string]any{"size": 1}))
	requireStatus(t, http.StatusCreated, r)
	assert.Empty(t, r.str("operation"))
	r = h.do("PATCH", instPath("i-win")+"?accepts_incomplete=true", map[string]any{"service_id": "svc-quick", "parameters": map[string]any{"size": 2}})
	requireStatus(t, http.StatusOK, r)
	r = h.do("PUT", bindPath("i-win", "b")+"?accepts_incomplete=true", quickBind(nil))
	requireStatus(t, http.StatusCreated, r)
	assert.Equal(t, "pw-b", r.body["credentials"].(map[string]any)["password"])
	requireStatus(t, http.StatusOK, h.do("DELETE", bindPath("i-win", "b")+"?accepts_incomplete=true&"+quickQuery, nil))
	requireStatus(t, http.StatusOK, h.do("DELETE", instPath("i-win")+"?accepts_incomplete=true&"+quickQuery, nil))
}

func TestUpdate(t *testing.T) {
	h := newHarness(t)
	h.provision("i-upd", map[string]any{"size": 1, "region": "eu"})
	patch := func(body map[string]any) map[string]any {
		out := map[string]any{"service_id": "svc-quick"}
		for k, v := range body {
			out[k] = v
		}
		return out
	}
	tests := []struct {
		name       string
		path       string
		body       any
		want       int
		wantDesc   string
		wantPlan   string
		wantParams map[string]any
	}{
		{"parameters replace, create-only ones carry over", instPath("i-upd"), patch(map[string]any{"parameters": map[string]any{"size": 2}}),
			http.StatusOK, "", "plan-small", map[string]any{"size": float64(2), "region": "eu"}},
		{"a create-only property sent unchanged", instPath("i-upd"), patch(map[string]any{"parameters": map[string]any{"size": 3, "region": "eu"}}),
			http.StatusOK, "", "plan-small", map[string]any{"size": float64(3), "region": "eu"}},
		{"no parameters keep them", instPath("i-upd"), patch(map[string]any{"context": map[string]any{"platform": "kubernetes"}}),
			http.StatusOK, "", "plan-small", map[string]any{"size": float64(3), "region": "eu"}},
		{"a create-only property changed", instPath("i-upd"), patch(map[string]any{"parameters": map[string]any{"region": "us"}}),
			http.StatusBadRequest, `"region" is create-only`, "plan-small", map[string]any{"size": float64(3), "region": "eu"}},
		{"the update schema is violated", instPath("i-upd"), patch(map[string]any{"parameters": map[string]any{"size": 0}}),
			http.StatusBadRequest, "update schema", "plan-small", map[string]any{"size": float64(3), "region": "eu"}},
		{"no service_id", instPath("i-upd"), map[string]any{"parameters": map[string]any{"size": 2}},
			http.StatusBadRequest, "service_id is required", "plan-small", nil},
		{"another service_id", instPath("i-upd"), map[string]any{"service_id": "svc-slow"},
			http.StatusBadRequest, "is not the service of instance", "plan-small", nil},
		{"unknown plan", instPath("i-upd"), patch(map[string]any{"plan_id": "plan-nope"}),
			http.StatusBadRequest, "not a plan of service", "plan-small", nil},
		{"plan change from an updateable plan", instPath("i-upd"), patch(map[string]any{"plan_id": "plan-large"}),
			http.StatusOK, "", "plan-large", nil},
		{"plan change from a plan that is not updateable", instPath("i-upd"), patch(map[string]any{"plan_id": "plan-small"}),
			http.StatusUnprocessableEntity, "is not updateable", "plan-large", nil},
		{"no such instance", instPath("i-none"), patch(nil), http.StatusNotFound, "does not exist", "", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := h.do("PATCH", tt.path, tt.body)
			requireStatus(t, tt.want, r)
			assert.Contains(t, r.str("description"), tt.wantDesc)
			if tt.wantPlan == "" {
				return
			}
			g := h.do("GET", instPath("i-upd"), nil)
			requireStatus(t, http.StatusOK, g)
			assert.Equal(t, tt.wantPlan, g.str("plan_id"))
			if tt.wantParams != nil {
				assert.Equal(t, tt.wantParams, g.body["parameters"])
			}
		})
	}

	t.Run("a failed update changes nothing", func(t *testing.T) {
		h.provision("i-fail", map[string]any{"size": 1})
		h.exec.fail(bundle.Update, "i-fail", "", "quota exceeded")
		r := h.do("PATCH", instPath("i-fail"), patch(map[string]any{"parameters": map[string]any{"size": 9}}))
		requireStatus(t, http.StatusInternalServerError, r)
		assert.Equal(t, "ActionFailed", r.str("error"))
		assert.Equal(t, "update failed: quota exceeded", r.str("description"))
		g := h.do("GET", instPath("i-fail"), nil)
		assert.Equal(t, map[string]any{"size": float64(1)}, g.body["parameters"])
		lo := h.do("GET", instPath("i-fail")+"/last_operation", nil)
		assert.Equal(t, "failed", lo.str("state"))
		assert.Equal(t, "update failed: quota exceeded", lo.str("description"))
		assert.Equal(t, true, lo.body["instance_usable"])
		assert.Equal(t, true, lo.body["update_repeatable"])
	})
}

func TestUpdateAsynchronous(t *testing.T) {
	h := newHarness(t, async)
	h.provision("i-au", map[string]any{"size": 1})
	release := h.exec.hold(t, bundle.Update, "i-au", "")
	body := map[string]any{"service_id": "svc-quick", "parameters": map[string]any{"size": 5}}
	r := h.do("PATCH", instPath("i-au")+"?accepts_incomplete=true", body)
	requireStatus(t, http.StatusAccepted, r)
	op := r.str("operation")
	h.exec.waitStarted(t, bundle.Update, "i-au", "")

	tests := []struct {
		name     string
		method   string
		path     string
		body     any
		want     int
		wantCode string
	}{
		{"identical repeat answers the same operation", "PATCH", instPath("i-au") + "?accepts_incomplete=true", body, http.StatusAccepted, ""},
		{"identical repeat without accepts_incomplete", "PATCH", instPath("i-au"), body, http.StatusUnprocessableEntity, "ConcurrencyError"},
		{"another update", "PATCH", instPath("i-au") + "?accepts_incomplete=true", map[string]any{"service_id": "svc-quick", "parameters": map[string]any{"size": 6}}, http.StatusUnprocessableEntity, "ConcurrencyError"},
		{"fetch while updating", "GET", instPath("i-au"), nil, http.StatusUnprocessableEntity, "ConcurrencyError"},
		{"bind while updating", "PUT", bindPath("i-au", "b") + "?accepts_incomplete=true", quickBind(nil), http.StatusUnprocessableEntity, "ConcurrencyError"},
		{"deprovision while updating", "DELETE", instPath("i-au") + "?accepts_incomplete=true&" + quickQuery, nil, http.StatusUnprocessableEntity, "ConcurrencyError"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := h.do(tt.method, tt.path, tt.body)
			requireStatus(t, tt.want, r)
			assert.Equal(t, tt.wantCode, r.str("error"))
			if tt.want == http.StatusAccepted {
				assert.Equal(t, op, r.str("operation"))
			}
		})
	}
	release()
	h.waitLastOperation(instPath("i-au"), "succeeded")
	g := h.do("GET", instPath("i-au"), nil)
	requireStatus(t, http.StatusOK, g)
	assert.Equal(t, map[string]any{"size": float64(5)}, g.body["parameters"])
}

func TestDeprovision(t *testing.T) {
	h := newHarness(t)
	h.provision("i-del", map[string]any{"size": 1})
	h.provision("i-bound", map[string]any{"size": 1})
	requireStatus(t, http.StatusCreated, h.do("PUT", bindPath("i-bound", "b1"), quickBind(nil)))
	h.provision("i-delfail", map[string]any{"size": 1})
	h.exec.fail(bundle.Deprovision, "i-delfail", "", "still in use")

	tests := []struct {
		name     string
		path     string
		want     int
		wantCode string
		wantDesc string
	}{
		{"no service_id or plan_id", instPath("i-del"), http.StatusBadRequest, "", "query parameters are required"},
		{"another plan", instPath("i-del") + "?service_id=svc-quick&plan_id=plan-large", http.StatusBadRequest, "", "do not match instance"},
		{"no such instance", instPath("i-none") + "?" + quickQuery, http.StatusGone, "", ""},
		{"instance with a binding", instPath("i-bound") + "?" + quickQuery, http.StatusUnprocessableEntity, "", "(b1): unbind them"},
		{"failing deprovision", instPath("i-delfail") + "?" + quickQuery, http.StatusInternalServerError, "ActionFailed", "deprovision failed: still in use"},
		{"deprovision", instPath("i-del") + "?" + quickQuery, http.StatusOK, "", ""},
		{"deprovision again", instPath("i-del") + "?" + quickQuery, http.StatusGone, "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := h.do("DELETE", tt.path, nil)
			requireStatus(t, tt.want, r)
			assert.Equal(t, tt.wantCode, r.str("error"))
			assert.Contains(t, r.str("description"), tt.wantDesc)
			if tt.want == http.StatusOK {
				assert.Empty(t, r.body, "200 answers {}")
			}
		})
	}
	requireStatus(t, http.StatusNotFound, h.do("GET", instPath("i-del"), nil))
	requireStatus(t, http.StatusGone, h.do("GET", instPath("i-del")+"/last_operation", nil))

	requireStatus(t, http.StatusOK, h.do("GET", instPath("i-delfail"), nil))
	lo := h.do("GET", instPath("i-delfail")+"/last_operation", nil)
	assert.Equal(t, "failed", lo.str("state"))
	assert.Equal(t, true, lo.body["instance_usable"])
}

func TestDeprovisionAsynchronous(t *testing.T) {
	h := newHarness(t, async)
	h.provision("i-ad", map[string]any{"size": 1})
	release := h.exec.hold(t, bundle.Deprovision, "i-ad", "")
	path := instPath("i-ad") + "?accepts_incomplete=true&" + quickQuery
	r := h.do("DELETE", path, nil)
	requireStatus(t, http.StatusAccepted, r)
	op := r.str("operation")
	h.exec.waitStarted(t, bundle.Deprovision, "i-ad", "")

	r = h.do("DELETE", path, nil)
	requireStatus(t, http.StatusAccepted, r)
	assert.Equal(t, op, r.str("operation"), "a repeated delete answers the same operation")
	r = h.do("DELETE", instPath("i-ad")+"?"+quickQuery, nil)
	requireStatus(t, http.StatusUnprocessableEntity, r)
	assert.Equal(t, "ConcurrencyError", r.str("error"))
	r = h.do("GET", instPath("i-ad")+"/last_operation?operation="+op, nil)
	assert.Equal(t, "in progress", r.str("state"))

	release()
	h.waitGone(instPath("i-ad"))
	requireStatus(t, http.StatusNotFound, h.do("GET", instPath("i-ad"), nil))

	// An asynchronous service needs accepts_incomplete to deprovision.
	requireStatus(t, http.StatusAccepted, h.do("PUT", instPath("i-slow")+"?accepts_incomplete=true", slow()))
	h.waitLastOperation(instPath("i-slow"), "succeeded")
	r = h.do("DELETE", instPath("i-slow")+"?service_id=svc-slow&plan_id=plan-slow", nil)
	requireStatus(t, http.StatusUnprocessableEntity, r)
	assert.Equal(t, "AsyncRequired", r.str("error"))
}

func TestFailedProvision(t *testing.T) {
	for _, mode := range []struct {
		name string
		opts []harnessOption
		ai   string
		want int
	}{
		{"synchronous", nil, "", http.StatusInternalServerError},
		{"asynchronous", []harnessOption{async}, "?accepts_incomplete=true", http.StatusAccepted},
	} {
		t.Run(mode.name, func(t *testing.T) {
			h := newHarness(t, mode.opts...)
			h.exec.fail(bundle.Provision, "i-f", "", "no capacity left")
			body := quick(map[string]any{"size": 1})
			r := h.do("PUT", instPath("i-f")+mode.ai, body)
			requireStatus(t, mode.want, r)
			if mode.want == http.StatusInternalServerError {
				assert.Equal(t, "ActionFailed", r.str("error"))
				assert.Equal(t, "provision failed: no capacity left", r.str("description"))
			}
			lo := h.waitLastOperation(instPath("i-f"), "failed")
			assert.Equal(t, "provision failed: no capacity left", lo.str("description"))

			requireStatus(t, http.StatusNotFound, h.do("GET", instPath("i-f"), nil))
			r = h.do("PUT", instPath("i-f")+mode.ai, quick(map[string]any{"size": 2}))
			requireStatus(t, http.StatusConflict, r)
			assert.Contains(t, r.str("description"), "deprovision it first")
			r = h.do("PATCH", instPath("i-f")+mode.ai, map[string]any{"service_id": "svc-quick"})
			requireStatus(t, http.StatusUnprocessableEntity, r)
			r = h.do("PUT", bindPath("i-f", "b")+mode.ai, quickBind(nil))
			requireStatus(t, http.StatusUnprocessableEntity, r)

			// Orphan mitigation: the deprovision runs the bundle's action.
			r = h.do("DELETE", instPath("i-f")+"?"+quickQuery, nil)
			requireStatus(t, http.StatusOK, r)
			assert.Equal(t, 1, h.exec.ran(bundle.Deprovision, "i-f", ""))
			requireStatus(t, http.StatusGone, h.do("GET", instPath("i-f")+"/last_operation", nil))
			requireStatus(t, http.StatusCreated, h.do("PUT", instPath("i-f"), body)) // the id is free again
		})
	}
}

func TestInstanceLastOperation(t *testing.T) {
	h := newHarness(t)
	h.provision("i-lo", map[string]any{"size": 1})
	tests := []struct {
		name     string
		path     string
		want     int
		wantDesc string
	}{
		{"latest operation", instPath("i-lo") + "/last_operation", http.StatusOK, "provision succeeded"},
		{"unknown operation", instPath("i-lo") + "/last_operation?operation=provision-nope", http.StatusBadRequest, "not an operation of instance i-lo"},
		{"no such instance", instPath("i-none") + "/last_operation", http.StatusNotFound, "does not exist"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := h.do("GET", tt.path, nil)
			requireStatus(t, tt.want, r)
			assert.Contains(t, r.str("description"), tt.wantDesc)
		})
	}
}
