package conformance

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lockstep-dev/lockstep/internal/broker/embedded"
	"github.com/lockstep-dev/lockstep/internal/broker/embedded/registry"
	"github.com/lockstep-dev/lockstep/internal/broker/embedded/registry/oci"
	"github.com/lockstep-dev/lockstep/internal/broker/embedded/registry/oci/ocitest"
)

// The sample bundles of examples/bundles, run for real (shell actions).
const (
	examplesDir = "../../../../examples/bundles"

	quickID     = "4f6a3c1e-6b0e-4a55-9d7e-1c2b3a4d5e01"
	quickSmall  = "4f6a3c1e-6b0e-4a55-9d7e-1c2b3a4d5e11"
	slowID      = "5a7b4d2f-7c1f-4b66-8e8f-2d3c4b5e6f02"
	slowPlan    = "5a7b4d2f-7c1f-4b66-8e8f-2d3c4b5e6f12"
	statefulID  = "6b8c5e3a-8d2a-4c77-9f9a-3e4d5c6f7a03"
	statefulPl  = "6b8c5e3a-8d2a-4c77-9f9a-3e4d5c6f7a13"
	failingID   = "7c9d6f4b-9e3b-4d88-8a0b-4f5e6d7a8b04"
	failingPlan = "7c9d6f4b-9e3b-4d88-8a0b-4f5e6d7a8b14"
	noopID      = "8d0e7a5c-0f4c-4e99-9b1c-5a6f7e8b9c05"
	noopPlan    = "8d0e7a5c-0f4c-4e99-9b1c-5a6f7e8b9c15"
)

func examplesHarness(t *testing.T, opts ...harnessOption) *harness {
	t.Helper()
	dir, err := filepath.Abs(examplesDir)
	require.NoError(t, err)
	all := append([]harnessOption{withBundles(map[string]string{}), noInitialSync, withConfig(func(c *embedded.Config) {
		c.Executor = nil
		c.Registries = []registry.Registry{registry.NewLocal("examples", dir, 0)}
	})}, opts...)
	h := newHarness(t, all...)
	rep := h.broker.Sync(context.Background())
	require.Len(t, rep.Registries, 1)
	require.NoError(t, rep.Registries[0].Err)
	require.Empty(t, rep.Registries[0].Problems, "every sample bundle loads")
	assert.ElementsMatch(t, []string{"failing", "noop", "quick", "slow", "stateful"}, h.catalogNames())
	return h
}

func svc(serviceID, planID string, params map[string]any) map[string]any {
	return map[string]any{"service_id": serviceID, "plan_id": planID, "parameters": params, "organization_guid": "org", "space_guid": "space"}
}

func TestExampleQuick(t *testing.T) {
	h := examplesHarness(t)
	r := h.do("PUT", instPath("q1"), svc(quickID, quickSmall, map[string]any{"size": 2, "region": "eu"}))
	requireStatus(t, http.StatusCreated, r)
	assert.Equal(t, "https://quick.example/dashboard/q1", r.str("dashboard_url"))
	r = h.do("PUT", bindPath("q1", "b1"), svc(quickID, quickSmall, map[string]any{"role": "write"}))
	requireStatus(t, http.StatusCreated, r)
	assert.Equal(t, map[string]any{"host": "quick.example", "port": float64(5432), "username": "b1", "role": "write"}, r.body["credentials"])
	requireStatus(t, http.StatusOK, h.do("PATCH", instPath("q1"), map[string]any{"service_id": quickID, "parameters": map[string]any{"size": 3}}))
	r = h.do("PATCH", instPath("q1"), map[string]any{"service_id": quickID, "parameters": map[string]any{"region": "us"}})
	requireStatus(t, http.StatusBadRequest, r)
	assert.Contains(t, r.str("description"), `"region" is create-only`)
	requireStatus(t, http.StatusOK, h.do("DELETE", bindPath("q1", "b1")+"?service_id="+quickID+"&plan_id="+quickSmall, nil))
	requireStatus(t, http.StatusOK, h.do("DELETE", instPath("q1")+"?service_id="+quickID+"&plan_id="+quickSmall, nil))
}

func TestExampleSlow(t *testing.T) {
	h := examplesHarness(t, async)
	r := h.do("PUT", instPath("s1"), svc(slowID, slowPlan, map[string]any{"seconds": 1}))
	requireStatus(t, http.StatusUnprocessableEntity, r)
	assert.Equal(t, "AsyncRequired", r.str("error"))
	r = h.do("PUT", instPath("s1")+"?accepts_incomplete=true", svc(slowID, slowPlan, map[string]any{"seconds": 1}))
	requireStatus(t, http.StatusAccepted, r)
	lo := h.waitLastOperation(instPath("s1"), "succeeded")
	assert.Equal(t, "provision took 1 seconds", lo.str("description"))
	r = h.do("PUT", bindPath("s1", "b1")+"?accepts_incomplete=true", svc(slowID, slowPlan, map[string]any{"seconds": 0}))
	requireStatus(t, http.StatusAccepted, r)
	h.waitLastOperation(bindPath("s1", "b1"), "succeeded")
	g := h.do("GET", bindPath("s1", "b1"), nil)
	requireStatus(t, http.StatusOK, g)
	assert.Equal(t, map[string]any{"username": "b1", "waited": float64(0)}, g.body["credentials"])
}

func TestExampleStateful(t *testing.T) {
	h := examplesHarness(t)
	q := "?service_id=" + statefulID + "&plan_id=" + statefulPl
	var answers []reply
	keep := func(r reply) reply { answers = append(answers, r); return r }
	requireStatus(t, http.StatusCreated, keep(h.do("PUT", instPath("st1"), svc(statefulID, statefulPl, map[string]any{"engine": "mysql"}))))
	state := h.state("st1")
	secret := state["admin_secret"]
	require.Len(t, secret, 24)
	assert.Equal(t, "mysql", state["engine"])
	requireStatus(t, http.StatusOK, keep(h.do("PATCH", instPath("st1"), map[string]any{"service_id": statefulID, "parameters": map[string]any{"connections": 50}})))
	assert.Equal(t, "50", h.state("st1")["connections"])
	r := keep(h.do("PUT", bindPath("st1", "b-1"), svc(statefulID, statefulPl, nil)))
	requireStatus(t, http.StatusCreated, r)
	creds := r.body["credentials"].(map[string]any)
	assert.Equal(t, "mysql", creds["engine"], "taken from the state")
	assert.Equal(t, "u_b_1", creds["username"])
	assert.Len(t, creds["password"], 24)
	assert.Equal(t, "u_b_1", h.state("st1")["user_b_1"])
	requireStatus(t, http.StatusOK, keep(h.do("GET", bindPath("st1", "b-1"), nil)))
	requireStatus(t, http.StatusOK, keep(h.do("GET", instPath("st1"), nil)))
	requireStatus(t, http.StatusOK, keep(h.do("DELETE", bindPath("st1", "b-1")+q, nil)))
	assert.NotContains(t, h.state("st1"), "user_b_1", "an empty value removes the key")
	requireStatus(t, http.StatusOK, keep(h.do("DELETE", instPath("st1")+q, nil)))
	assert.Empty(t, h.state("st1"))
	for _, a := range answers {
		assert.NotContains(t, a.raw, secret)
	}
	assert.NotContains(t, h.logs.String(), secret)
}

func TestExampleFailing(t *testing.T) {
	h := examplesHarness(t)
	q := "?service_id=" + failingID + "&plan_id=" + failingPlan
	tests := []struct {
		name     string
		method   string
		path     string
		body     any
		want     int
		wantDesc string
	}{
		{"provision failed", "PUT", instPath("f0"), svc(failingID, failingPlan, map[string]any{"fail": "provision"}), http.StatusInternalServerError, "provision failed: the parameter fail=provision asks this action to fail"},
		{"provision refused", "PUT", instPath("f00"), svc(failingID, failingPlan, map[string]any{"refuse": "provision"}), http.StatusBadRequest, "provision refused: the parameter refuse=provision asks this action to refuse"},
		{"a refused provision left no instance", "GET", instPath("f00") + "/last_operation", nil, http.StatusNotFound, ""},
		{"provision", "PUT", instPath("f1"), svc(failingID, failingPlan, map[string]any{"fail": "none", "flavor": "red"}), http.StatusCreated, ""},
		{"the update lock: an update asking to fail is refused", "PATCH", instPath("f1"), map[string]any{"service_id": failingID, "parameters": map[string]any{"fail": "update"}}, http.StatusInternalServerError, "update failed: the parameter fail=update"},
		{"the refused update changed nothing", "GET", instPath("f1"), nil, http.StatusOK, ""},
		{"an update the action refuses", "PATCH", instPath("f1"), map[string]any{"service_id": failingID, "parameters": map[string]any{"refuse": "update"}}, http.StatusBadRequest, "update refused: the parameter refuse=update"},
		{"bind failed", "PUT", bindPath("f1", "b1"), svc(failingID, failingPlan, map[string]any{"fail": "bind"}), http.StatusInternalServerError, "bind failed: the parameter fail=bind"},
		{"unbind the failed binding", "DELETE", bindPath("f1", "b1") + q, nil, http.StatusOK, ""},
		{"bind refused", "PUT", bindPath("f1", "b2"), svc(failingID, failingPlan, map[string]any{"refuse": "bind"}), http.StatusBadRequest, "bind refused: the parameter refuse=bind"},
		{"an update that makes the deprovision fail", "PATCH", instPath("f1"), map[string]any{"service_id": failingID, "parameters": map[string]any{"fail": "deprovision"}}, http.StatusOK, ""},
		{"the delete rollback: the deprovision fails", "DELETE", instPath("f1") + q, nil, http.StatusInternalServerError, "deprovision failed: the parameter fail=deprovision"},
		{"the instance is still there", "GET", instPath("f1"), nil, http.StatusOK, ""},
		{"an update that makes the deprovision refuse", "PATCH", instPath("f1"), map[string]any{"service_id": failingID, "parameters": map[string]any{"refuse": "deprovision"}}, http.StatusOK, ""},
		{"the deprovision refuses", "DELETE", instPath("f1") + q, nil, http.StatusUnprocessableEntity, "deprovision refused: the parameter refuse=deprovision"},
		{"an update that stops the failures", "PATCH", instPath("f1"), map[string]any{"service_id": failingID, "parameters": map[string]any{"fail": "none"}}, http.StatusOK, ""},
		{"now the deprovision works", "DELETE", instPath("f1") + q, nil, http.StatusOK, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := h.do(tt.method, tt.path, tt.body)
			requireStatus(t, tt.want, r)
			assert.Contains(t, r.str("description"), tt.wantDesc)
			if tt.name == "the refused update changed nothing" {
				assert.Equal(t, map[string]any{"fail": "none", "flavor": "red"}, r.body["parameters"])
			}
		})
	}
}

func TestExampleNoop(t *testing.T) {
	h := examplesHarness(t)
	requireStatus(t, http.StatusCreated, h.do("PUT", instPath("n1"), svc(noopID, noopPlan, nil)))
	r := h.do("PUT", bindPath("n1", "b1"), svc(noopID, noopPlan, map[string]any{"x": 1}))
	requireStatus(t, http.StatusCreated, r)
	assert.Equal(t, map[string]any{"instance_id": "n1", "binding_id": "b1", "parameters": map[string]any{"x": float64(1)}}, r.body["credentials"])
}

// TestExamplesOverOCI publishes the sample manifests to an OCI registry and
// serves them with the actions directory pointing at examples/bundles.
func TestExamplesOverOCI(t *testing.T) {
	ctx := context.Background()
	dir, err := filepath.Abs(examplesDir)
	require.NoError(t, err)
	srv := startOCI(t)
	repo := srv.addr + "/lockstep/samples"
	opts := oci.Options{Insecure: true, ActionsDir: dir}
	for _, name := range []string{"quick", "stateful"} {
		raw, err := os.ReadFile(filepath.Join(dir, name, "bundle.json"))
		require.NoError(t, err)
		_, err = ocitest.Publish(ctx, repo, name, raw, opts)
		require.NoError(t, err)
	}
	reg, err := oci.New("samples-oci", repo, opts)
	require.NoError(t, err)
	h := newHarness(t, withBundles(map[string]string{}), noInitialSync, withConfig(func(c *embedded.Config) {
		c.Executor = nil
		c.Registries = []registry.Registry{reg}
	}))
	rep := h.broker.Sync(ctx)
	require.NoError(t, rep.Registries[0].Err)
	require.Empty(t, rep.Registries[0].Problems)
	assert.Equal(t, []string{"quick", "stateful"}, h.catalogNames())

	r := h.do("PUT", instPath("o1"), svc(statefulID, statefulPl, map[string]any{"engine": "postgres"}))
	requireStatus(t, http.StatusCreated, r)
	assert.Equal(t, "https://stateful.example/o1", r.str("dashboard_url"), "the action ran from the actions directory")
	r = h.do("PUT", bindPath("o1", "b1"), svc(statefulID, statefulPl, nil))
	requireStatus(t, http.StatusCreated, r)
	assert.Equal(t, "postgres", r.body["credentials"].(map[string]any)["engine"])
}
