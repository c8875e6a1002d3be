package conformance

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lockstep-dev/lockstep/internal/broker/embedded/bundle"
)

// TestBindJobState: the binding record references the job that creates it.
func TestBindJobState(t *testing.T) {
	h := newHarness(t, async)
	h.provision("i-bj", map[string]any{"size": 1})
	release := h.exec.hold(t, bundle.Bind, "i-bj", "b1")
	body := quickBind(map[string]any{"role": "ro"})
	path := bindPath("i-bj", "b1") + "?accepts_incomplete=true"

	r := h.do("PUT", path, body)
	requireStatus(t, http.StatusAccepted, r)
	op := r.str("operation")
	require.NotEmpty(t, op)
	assert.NotContains(t, r.body, "credentials", "a 202 never carries credentials")
	h.exec.waitStarted(t, bundle.Bind, "i-bj", "b1")

	inProgress := []struct {
		name     string
		method   string
		path     string
		body     any
		want     int
		wantCode string
	}{
		{"repeat in progress answers 202 with the same operation", "PUT", path, body, http.StatusAccepted, ""},
		{"repeat in progress without accepts_incomplete", "PUT", bindPath("i-bj", "b1"), body, http.StatusUnprocessableEntity, "ConcurrencyError"},
		{"repeat with other parameters conflicts", "PUT", path, quickBind(map[string]any{"role": "rw"}), http.StatusConflict, ""},
		{"GET while the bind is in progress is 404", "GET", bindPath("i-bj", "b1"), nil, http.StatusNotFound, ""},
		{"unbind while the bind is in progress", "DELETE", bindPath("i-bj", "b1") + "?accepts_incomplete=true&" + quickQuery, nil, http.StatusUnprocessableEntity, "ConcurrencyError"},
		{"another binding of the instance meanwhile", "PUT", bindPath("i-bj", "b2") + "?accepts_incomplete=true", body, http.StatusUnprocessableEntity, "ConcurrencyError"},
		{"an update of the instance meanwhile", "PATCH", instPath("i-bj") + "?accepts_incomplete=true", map[string]any{"service_id": "svc-quick"}, http.StatusUnprocessableEntity, "ConcurrencyError"},
	}
	for _, tt := range inProgress {
		t.Run(tt.name, func(t *testing.T) {
			r := h.do(tt.method, tt.path, tt.body)
			requireStatus(t, tt.want, r)
			assert.Equal(t, tt.wantCode, r.str("error"))
			assert.NotContains(t, r.body, "credentials")
			if tt.want == http.StatusAccepted {
				assert.Equal(t, op, r.str("operation"))
			}
		})
	}
	lo := h.do("GET", bindPath("i-bj", "b1")+"/last_operation?operation="+op, nil)
	requireStatus(t, http.StatusOK, lo)
	assert.Equal(t, "in progress", lo.str("state"))
	assert.Equal(t, 1, h.exec.ran(bundle.Bind, "i-bj", "b1"), "the repeats started nothing")

	release()
	h.waitLastOperation(bindPath("i-bj", "b1"), "succeeded")
	wantCreds := map[string]any{"username": "b1", "password": "pw-b1"}

	done := []struct {
		name      string
		method    string
		path      string
		body      any
		want      int
		wantCreds bool
	}{
		{"repeat once done answers 200 with the credentials", "PUT", path, body, http.StatusOK, true},
		{"repeat once done without accepts_incomplete", "PUT", bindPath("i-bj", "b1"), body, http.StatusOK, true},
		{"repeat with other parameters still conflicts", "PUT", path, quickBind(map[string]any{"role": "rw"}), http.StatusConflict, false},
		{"GET once done answers the credentials", "GET", bindPath("i-bj", "b1"), nil, http.StatusOK, true},
	}
	for _, tt := range done {
		t.Run(tt.name, func(t *testing.T) {
			r := h.do(tt.method, tt.path, tt.body)
			requireStatus(t, tt.want, r)
			if tt.wantCreds {
				assert.Equal(t, wantCreds, r.body["credentials"])
			}
		})
	}
	assert.Equal(t, 1, h.exec.ran(bundle.Bind, "i-bj", "b1"))

	var binding = h.bindingRecord("i-bj", "b1")
	assert.Equal(t, op, binding.Job, "the binding references the job that created it")
	assert.Equal(t, "b1", h.job(op).BindingID)
}
