package conformance

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/lockstep-dev/lockstep/internal/broker/embedded/bundle"
)

func TestBindSynchronous(t *testing.T) {
	h := newHarness(t)
	h.provision("i-b", map[string]any{"size": 1})
	requireStatus(t, http.StatusCreated, h.do("PUT", instPath("i-nobind"), map[string]any{"service_id": "svc-quick", "plan_id": "plan-nobind", "organization_guid": "org", "space_guid": "space"}))
	body := quickBind(map[string]any{"role": "ro"})
	wantCreds := map[string]any{"username": "b1", "password": "pw-b1"}

	r := h.do("PUT", bindPath("i-b", "b1"), body)
	requireStatus(t, http.StatusCreated, r)
	assert.Equal(t, wantCreds, r.body["credentials"])

	tests := []struct {
		name      string
		path      string
		body      any
		want      int
		wantCode  string
		wantDesc  string
		wantCreds bool
	}{
		{"identical repeat", bindPath("i-b", "b1"), body, http.StatusOK, "", "", true},
		{"identical repeat accepting incomplete", bindPath("i-b", "b1") + "?accepts_incomplete=true", body, http.StatusOK, "", "", true},
		{"different parameters", bindPath("i-b", "b1"), quickBind(map[string]any{"role": "rw"}), http.StatusConflict, "", "already exists with other parameters", false},
		{"parameters violate the bind schema", bindPath("i-b", "b2"), quickBind(map[string]any{"role": "admin"}), http.StatusBadRequest, "", "bind schema", false},
		{"no service_id", bindPath("i-b", "b2"), map[string]any{"plan_id": "plan-small"}, http.StatusBadRequest, "", "required", false},
		{"service and plan of another instance", bindPath("i-b", "b2"), map[string]any{"service_id": "svc-quick", "plan_id": "plan-large"}, http.StatusBadRequest, "", "do not match instance", false},
		{"no such instance", bindPath("i-none", "b2"), body, http.StatusNotFound, "", "instance i-none does not exist", false},
		{"plan that is not bindable", bindPath("i-nobind", "b2"), map[string]any{"service_id": "svc-quick", "plan_id": "plan-nobind"}, http.StatusBadRequest, "", "is not bindable", false},
		{"body not JSON", bindPath("i-b", "b2"), "[", http.StatusBadRequest, "", "not the JSON object", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := h.do("PUT", tt.path, tt.body)
			requireStatus(t, tt.want, r)
			assert.Equal(t, tt.wantCode, r.str("error"))
			assert.Contains(t, r.str("description"), tt.wantDesc)
			if tt.wantCreds {
				assert.Equal(t, wantCreds, r.body["credentials"])
			} else {
				assert.NotContains(t, r.body, "credentials")
			}
		})
	}
	assert.Equal(t, 1, h.exec.ran(bundle.Bind, "i-b", "b1"), "repeats run nothing")
	requireStatus(t, http.StatusNotFound, h.do("GET", bindPath("i-b", "b2"), nil))

	g := h.do("GET", bindPath("i-b", "b1"), nil)
	requireStatus(t, http.StatusOK, g)
	assert.Equal(t, wantCreds, g.body["credentials"])
	assert.Equal(t, map[string]any{"role": "ro"}, g.body["parameters"])
	lo := h.do("GET", bindPath("i-b", "b1")+"/last_operation", nil)
	requireStatus(t, http.StatusOK, lo)
	assert.Equal(t, "succeeded", lo.str("state"))
	lo = h.do("GET", bindPath("i-b", "b1")+"/last_operation?operation=bind-nope", nil)
	requireStatus(t, http.StatusBadRequest, lo)
	assert.Contains(t, lo.str("description"), "not an operation of binding b1")
	requireStatus(t, http.StatusNotFound, h.do("GET", bindPath("i-b", "b-none")+"/last_operation", nil))

	unbind := []struct {
		name string
		path string
		want int
		desc string
	}{
		{"no service_id or plan_id", bindPath("i-b", "b1"), http.StatusBadRequest, "query parameters are required"},
		{"another plan", bindPath("i-b", "b1") + "?service_id=svc-quick&plan_id=plan-large", http.StatusBadRequest, "do not match binding"},
		{"no such binding", bindPath("i-b", "b-none") + "?" + quickQuery, http.StatusGone, "does not exist"},
		{"no such instance", bindPath("i-none", "b1") + "?" + quickQuery, http.StatusGone, "does not exist"},
		{"unbind", bindPath("i-b", "b1") + "?" + quickQuery, http.StatusOK, ""},
		{"unbind again", bindPath("i-b", "b1") + "?" + quickQuery, http.StatusGone, "does not exist"},
	}
	for _, tt := range unbind {
		t.Run("unbind: "+tt.name, func(t *testing.T) {
			r := h.do("DELETE", tt.path, nil)
			requireStatus(t, tt.want, r)
			assert.Contains(t, r.str("description"), tt.desc)
		})
	}
	requireStatus(t, http.StatusNotFound, h.do("GET", bindPath("i-b", "b1"), nil))
	requireStatus(t, http.StatusGone, h.do("GET", bindPath("i-b", "b1")+"/last_operation", nil))
	requireStatus(t, http.StatusOK, h.do("DELETE", instPath("i-b")+"?"+quickQuery, nil), "no bindings left")
}

func TestBindFailures(t *testing.T) {
	h := newHarness(t)
	h.provision("i-bf", map[string]any{"size": 1})
	h.exec.fail(bundle.Bind, "i-bf", "b1", "credential store unavailable")
	r := h.do("PUT", bindPath("i-bf", "b1"), quickBind(nil))
	requireStatus(t, http.StatusInternalServerError, r)
	assert.Equal(t, "ActionFailed", r.str("error"))
	assert.Equal(t, "bind failed: credential store unavailable", r.str("description"))
	assert.NotContains(t, r.body, "credentials")

	requireStatus(t, http.StatusNotFound, h.do("GET", bindPath("i-bf", "b1"), nil))
	lo := h.do("GET", bindPath("i-bf", "b1")+"/last_operation", nil)
	assert.Equal(t, "failed", lo.str("state"))
	r = h.do("PUT", bindPath("i-bf", "b1"), quickBind(nil))
	requireStatus(t, http.StatusConflict, r)
	assert.Contains(t, r.str("description"), "unbind it before binding again")

	// Orphan mitigation: the unbind runs the bundle's action; then the id
	// is free again.
	requireStatus(t, http.StatusOK, h.do("DELETE", bindPath("i-bf", "b1")+"?"+quickQuery, nil))
	assert.Equal(t, 1, h.exec.ran(bundle.Unbind, "i-bf", "b1"))
	requireStatus(t, http.StatusCreated, h.do("PUT", bindPath("i-bf", "b1"), quickBind(nil)))

	h.exec.fail(bundle.Unbind, "i-bf", "b1", "revocation failed")
	r = h.do("DELETE", bindPath("i-bf", "b1")+"?"+quickQuery, nil)
	requireStatus(t, http.StatusInternalServerError, r)
	assert.Equal(t, "unbind failed: revocation failed", r.str("description"))
	requireStatus(t, http.StatusOK, h.do("GET", bindPath("i-bf", "b1"), nil), "a failed unbind leaves the binding as it was")

	// An asynchronous service needs accepts_incomplete to bind. (With it,
	// an action that ends within the sync window is answered at once.)
	requireStatus(t, http.StatusCreated, h.do("PUT", instPath("i-slow")+"?accepts_incomplete=true", slow()))
	r = h.do("PUT", bindPath("i-slow", "b"), map[string]any{"service_id": "svc-slow", "plan_id": "plan-slow"})
	requireStatus(t, http.StatusUnprocessableEntity, r)
	assert.Equal(t, "AsyncRequired", r.str("error"))
}

func TestUnbindAsynchronous(t *testing.T) {
	h := newHarness(t, async)
	h.provision("i-au", map[string]any{"size": 1})
	requireStatus(t, http.StatusCreated, h.do("PUT", bindPath("i-au", "b1"), quickBind(nil)))
	release := h.exec.hold(t, bundle.Unbind, "i-au", "b1")
	path := bindPath("i-au", "b1") + "?accepts_incomplete=true&" + quickQuery
	r := h.do("DELETE", path, nil)
	requireStatus(t, http.StatusAccepted, r)
	op := r.str("operation")
	h.exec.waitStarted(t, bundle.Unbind, "i-au", "b1")

	r = h.do("DELETE", path, nil)
	requireStatus(t, http.StatusAccepted, r)
	assert.Equal(t, op, r.str("operation"))
	r = h.do("PUT", bindPath("i-au", "b1")+"?accepts_incomplete=true", quickBind(nil))
	requireStatus(t, http.StatusUnprocessableEntity, r)
	assert.Equal(t, "ConcurrencyError", r.str("error"), "a bind repeated while it is unbound")
	requireStatus(t, http.StatusOK, h.do("GET", bindPath("i-au", "b1"), nil), "bound until the unbind finishes")
	r = h.do("GET", bindPath("i-au", "b1")+"/last_operation?operation="+op, nil)
	assert.Equal(t, "in progress", r.str("state"))

	release()
	h.waitGone(bindPath("i-au", "b1"))
	requireStatus(t, http.StatusNotFound, h.do("GET", bindPath("i-au", "b1"), nil))
}
