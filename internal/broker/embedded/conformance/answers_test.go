package conformance

import (
	"context"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lockstep-dev/lockstep/internal/broker/embedded"
	"github.com/lockstep-dev/lockstep/internal/broker/embedded/bundle"
	"github.com/lockstep-dev/lockstep/internal/broker/embedded/executor"
	"github.com/lockstep-dev/lockstep/internal/broker/embedded/store"
)

// TestSpecificationAnswers drives a real broker over real HTTP through the
// answers that platforms trying hostile but well-formed requests found
// wrong, each as the OSB v2.17 specification (or this broker's documented
// contract) says, and through the invariant that no instance ever becomes
// impossible to delete. Every row gets a broker of its own.
func TestSpecificationAnswers(t *testing.T) {
	long := strings.Repeat("x", 200<<10)
	clock := &testClock{}
	tests := []struct {
		name string
		// shell runs the row against real shell actions (newShellHarness).
		shell bool
		opts  []harnessOption
		run   func(t *testing.T, h *harness)
	}{
		{
			name: "a 200 KB parameter reaches every action through the input document, and the instance can still be deleted", shell: true,
			run: func(t *testing.T, h *harness) {
				r := h.do("PUT", instPath("i-long"), shell(map[string]any{"blob": long}))
				requireStatus(t, http.StatusCreated, r)
				assert.Equal(t, "https://shell.example/i-long", r.str("dashboard_url"))
				requireStatus(t, http.StatusOK, h.do("PATCH", instPath("i-long"), map[string]any{"service_id": "svc-shell", "parameters": map[string]any{"blob": long + "y"}}))
				r = h.do("PUT", bindPath("i-long", "b"), shellBind(map[string]any{"blob": long}))
				requireStatus(t, http.StatusCreated, r)
				bytes, _ := r.body["credentials"].(map[string]any)["bytes"].(float64)
				assert.Greater(t, bytes, float64(200<<10), "the bind read the whole document")
				requireStatus(t, http.StatusOK, h.do("DELETE", bindPath("i-long", "b")+"?"+shellQuery, nil))
				requireStatus(t, http.StatusOK, h.do("DELETE", instPath("i-long")+"?"+shellQuery, nil))
				requireStatus(t, http.StatusGone, h.do("GET", instPath("i-long")+"/last_operation", nil))
			},
		},
		{
			name: "hostile inputs, then the instance is deleted: NUL bytes in parameter values and keys, a broken state file, a refusal, long values", shell: true,
			run: func(t *testing.T, h *harness) {
				hostile := map[string]any{"nul": "a\u0000b", "key\u0000nul": "v", "nested": map[string]any{"blob": long}, "list": []any{long}, "n": 1e300}
				requireStatus(t, http.StatusCreated, h.do("PUT", instPath("i-h"), shell(hostile)))
				// An update that breaks the state protocol fails; nothing of it is kept.
				r := h.do("PATCH", instPath("i-h"), map[string]any{"service_id": "svc-shell", "parameters": map[string]any{"badstate": "update"}})
				requireStatus(t, http.StatusInternalServerError, r)
				assert.Equal(t, "ActionFailed", r.str("error"))
				assert.Contains(t, r.str("description"), "holds a NUL byte")
				// A bind with a NUL in its parameters and one that refuses.
				requireStatus(t, http.StatusCreated, h.do("PUT", bindPath("i-h", "b1"), shellBind(map[string]any{"nul": "\u0000", "blob": long})))
				r = h.do("PUT", bindPath("i-h", "b2"), shellBind(map[string]any{"refuse": "bind"}))
				requireStatus(t, http.StatusBadRequest, r)
				assert.Equal(t, "ActionRefused", r.str("error"))
				requireStatus(t, http.StatusOK, h.do("DELETE", bindPath("i-h", "b1")+"?"+shellQuery, nil))
				requireStatus(t, http.StatusGone, h.do("DELETE", bindPath("i-h", "b2")+"?"+shellQuery, nil), "a refused bind left nothing")
				requireStatus(t, http.StatusOK, h.do("DELETE", instPath("i-h")+"?"+shellQuery, nil))

				// A provision that breaks the state protocol fails, and its
				// instance is still deleted (orphan mitigation runs).
				r = h.do("PUT", instPath("i-bad"), shell(map[string]any{"badstate": "provision"}))
				requireStatus(t, http.StatusInternalServerError, r)
				assert.Contains(t, r.str("description"), "holds a NUL byte")
				requireStatus(t, http.StatusOK, h.do("DELETE", instPath("i-bad")+"?"+shellQuery, nil))
				requireStatus(t, http.StatusGone, h.do("GET", instPath("i-bad")+"/last_operation", nil))
			},
		},
		{
			name: "an action refuses with exit status 65: the request is answered 400 with its description and nothing is kept", shell: true,
			run: func(t *testing.T, h *harness) {
				r := h.do("PUT", instPath("i-ref"), shell(map[string]any{"refuse": "provision"}))
				requireStatus(t, http.StatusBadRequest, r)
				assert.Equal(t, "ActionRefused", r.str("error"))
				assert.Equal(t, "provision refused: the parameter refuse names this action", r.str("description"))
				requireStatus(t, http.StatusNotFound, h.do("GET", instPath("i-ref")+"/last_operation", nil), "a refused provision leaves no instance")
				requireStatus(t, http.StatusCreated, h.do("PUT", instPath("i-ref"), shell(nil)))
			},
		},
		{
			name: "ids that are too long or hold a NUL, a slash or a space are refused with 400 on every route, before anything is stored",
			run: func(t *testing.T, h *harness) {
				h.provision("i-ok", map[string]any{"size": 1})
				requireStatus(t, http.StatusCreated, h.do("PUT", bindPath("i-ok", "b-ok"), quickBind(nil)))
				bad := map[string]string{
					"NUL":        "a%00b",
					"slash":      "a%2Fb",
					"space":      "a%20b",
					"256 chars":  strings.Repeat("a", 256),
					"non-ASCII":  "caf%C3%A9",
					"percent":    "a%25b",
					"newline":    "a%0Ab",
					"quote":      "a%22b",
					"colon":      "a:b",
					"control":    "a%07b",
					"empty-ish ": "%20",
				}
				for what, id := range bad {
					routes := []struct {
						method, path string
						body         any
					}{
						{"PUT", instPath(id), quick(map[string]any{"size": 1})},
						{"PUT", instPath(id) + "?accepts_incomplete=true", quick(map[string]any{"size": 1})},
						{"PATCH", instPath(id), map[string]any{"service_id": "svc-quick"}},
						{"DELETE", instPath(id) + "?" + quickQuery, nil},
						{"GET", instPath(id), nil},
						{"GET", instPath(id) + "/last_operation", nil},
						{"GET", instPath("i-ok") + "/last_operation?operation=" + id, nil},
						{"PUT", bindPath(id, "b"), quickBind(nil)},
						{"PUT", bindPath("i-ok", id), quickBind(nil)},
						{"DELETE", bindPath("i-ok", id) + "?" + quickQuery, nil},
						{"GET", bindPath("i-ok", id), nil},
						{"GET", bindPath("i-ok", id) + "/last_operation", nil},
						{"GET", bindPath(id, "b-ok") + "/last_operation", nil},
					}
					for _, rt := range routes {
						r := h.do(rt.method, rt.path, rt.body)
						requireStatus(t, http.StatusBadRequest, r, what, rt.method, rt.path)
						assert.Regexp(t, `(instance_id|binding_id|operation) .*(holds|characters long)`, r.str("description"), "%s %s", rt.method, rt.path)
					}
				}
				var keys int
				require.NoError(t, h.store.View(context.Background(), func(tx store.Tx) error {
					insts, err := store.ListInstances(tx)
					keys = len(insts)
					return err
				}))
				assert.Equal(t, 1, keys, "only the valid instance is stored")
				assert.Equal(t, 1, h.exec.ran(bundle.Provision, "i-ok", ""), "no action ran for a refused id")
				assert.Equal(t, 2, h.exec.callCount(), "no action ran for a refused id")
			},
		},
		{
			name: "a request body over the limit is answered 413 on every route that reads one, and nothing is stored or run",
			run: func(t *testing.T, h *harness) {
				h.provision("i-ok", map[string]any{"size": 1})
				huge := quick(map[string]any{"blob": strings.Repeat("x", 16<<20)})
				for _, rt := range []struct{ method, path string }{
					{"PUT", instPath("i-big")},
					{"PUT", instPath("i-big") + "?accepts_incomplete=true"},
					{"PATCH", instPath("i-ok")},
					{"PUT", bindPath("i-ok", "b-big")},
				} {
					r := h.do(rt.method, rt.path, huge)
					requireStatus(t, http.StatusRequestEntityTooLarge, r, rt.method, rt.path)
					assert.Equal(t, "the request body is larger than the 1048576 bytes this broker reads", r.str("description"))
				}
				requireStatus(t, http.StatusNotFound, h.do("GET", instPath("i-big")+"/last_operation", nil), "no instance")
				requireStatus(t, http.StatusNotFound, h.do("GET", bindPath("i-ok", "b-big")+"/last_operation", nil), "no binding")
				assert.Equal(t, 1, h.exec.callCount(), "no action ran for a body over the limit")
			},
		},
		{
			name: "an instance stored under an id the rules now refuse can still be fetched and deleted",
			run: func(t *testing.T, h *harness) {
				h.provision("legacy", map[string]any{"size": 1})
				require.NoError(t, h.store.Update(context.Background(), func(tx store.Tx) error {
					inst, err := store.GetInstance(tx, "legacy")
					if err != nil {
						return err
					}
					inst.ID = "ns:legacy"
					if err := store.DeleteInstance(tx, "legacy"); err != nil {
						return err
					}
					return store.PutInstance(tx, inst)
				}))
				requireStatus(t, http.StatusOK, h.do("GET", instPath("ns:legacy"), nil))
				requireStatus(t, http.StatusBadRequest, h.do("PATCH", instPath("ns:legacy"), map[string]any{"service_id": "svc-quick"}), "no new work under such an id")
				requireStatus(t, http.StatusOK, h.do("DELETE", instPath("ns:legacy")+"?"+quickQuery, nil))
				requireStatus(t, http.StatusBadRequest, h.do("GET", instPath("ns:legacy"), nil), "once gone, the id is refused like any other")
			},
		},
		{
			name: "an identical provision during a running deprovision answers 422 ConcurrencyError, with or without accepts_incomplete",
			opts: []harnessOption{async},
			run: func(t *testing.T, h *harness) {
				body := quick(map[string]any{"size": 1})
				h.provision("i-c", map[string]any{"size": 1})
				h.exec.hold(t, bundle.Deprovision, "i-c", "")
				requireStatus(t, http.StatusAccepted, h.do("DELETE", instPath("i-c")+"?accepts_incomplete=true&"+quickQuery, nil))
				h.exec.waitStarted(t, bundle.Deprovision, "i-c", "")
				for _, q := range []string{"", "?accepts_incomplete=true"} {
					r := h.do("PUT", instPath("i-c")+q, body)
					requireStatus(t, http.StatusUnprocessableEntity, r, "provision"+q)
					assert.Equal(t, "ConcurrencyError", r.str("error"))
					assert.Contains(t, r.str("description"), "deprovision")
				}
				r := h.do("DELETE", instPath("i-c")+"?"+quickQuery, nil)
				requireStatus(t, http.StatusUnprocessableEntity, r, "a repeated synchronous delete")
				assert.Equal(t, "ConcurrencyError", r.str("error"))
			},
		},
		{
			name: "every request that meets a running operation of the instance answers 422 ConcurrencyError; AsyncRequired only where nothing started",
			opts: []harnessOption{async},
			run: func(t *testing.T, h *harness) {
				body := quick(map[string]any{"size": 1})
				requests := []struct {
					method, path string
					body         any
				}{
					{"PUT", instPath("i-busy"), body},
					{"PUT", instPath("i-busy") + "?accepts_incomplete=true", body},
					{"PATCH", instPath("i-busy"), map[string]any{"service_id": "svc-quick", "parameters": map[string]any{"size": 2}}},
					{"DELETE", instPath("i-busy") + "?" + quickQuery, nil},
					{"DELETE", instPath("i-busy") + "?accepts_incomplete=true&" + quickQuery, nil},
					{"PUT", bindPath("i-busy", "b2"), quickBind(nil)},
					{"DELETE", bindPath("i-busy", "b1") + "?" + quickQuery, nil},
				}
				running := []struct {
					name   string
					action bundle.Action
					start  func() reply
				}{
					{"update", bundle.Update, func() reply {
						return h.do("PATCH", instPath("i-busy")+"?accepts_incomplete=true", map[string]any{"service_id": "svc-quick", "parameters": map[string]any{"size": 1}})
					}},
					{"bind", bundle.Bind, func() reply {
						return h.do("PUT", bindPath("i-busy", "b3")+"?accepts_incomplete=true", quickBind(nil))
					}},
				}
				h.provision("i-busy", map[string]any{"size": 1})
				requireStatus(t, http.StatusCreated, h.do("PUT", bindPath("i-busy", "b1"), quickBind(nil)))
				for _, op := range running {
					binding := ""
					if op.action == bundle.Bind {
						binding = "b3"
					}
					release := h.exec.hold(t, op.action, "i-busy", binding)
					requireStatus(t, http.StatusAccepted, op.start())
					h.exec.waitStarted(t, op.action, "i-busy", binding)
					for _, rq := range requests {
						r := h.do(rq.method, rq.path, rq.body)
						requireStatus(t, http.StatusUnprocessableEntity, r, "during the "+op.name, rq.method, rq.path)
						assert.Equal(t, "ConcurrencyError", r.str("error"), "during the %s: %s %s", op.name, rq.method, rq.path)
					}
					release()
					h.waitLastOperation(instPath("i-busy"), "succeeded")
					if binding != "" {
						h.waitLastOperation(bindPath("i-busy", binding), "succeeded")
					}
				}
				// An asynchronous service without accepts_incomplete: nothing starts.
				r := h.do("PUT", instPath("i-async"), slow())
				requireStatus(t, http.StatusUnprocessableEntity, r)
				assert.Equal(t, "AsyncRequired", r.str("error"))
				requireStatus(t, http.StatusNotFound, h.do("GET", instPath("i-async")+"/last_operation", nil))
			},
		},
		{
			name: "broker shutdown ends an action's whole process group, children included", shell: true,
			opts: []harnessOption{async},
			run: func(t *testing.T, h *harness) {
				pidFile := filepath.Join(t.TempDir(), "child.pid")
				requireStatus(t, http.StatusAccepted, h.do("PUT", instPath("i-linger")+"?accepts_incomplete=true", shell(map[string]any{"linger": pidFile})))
				child := waitPid(t, pidFile)
				require.True(t, alive(child), "the action's child runs")
				start := time.Now()
				require.NoError(t, h.broker.Close())
				require.Less(t, time.Since(start), 10*time.Second, "shutdown waited for the action (sleep 60) instead of ending it")
				require.Eventually(t, func() bool { return !alive(child) }, 10*time.Second, 10*time.Millisecond,
					"the action's child (pid %d) outlived the broker", child)
			},
		},
		{
			name: "recovery ends the processes a stopped broker left behind, fails their job, and the instance stays deletable",
			run: func(t *testing.T, h *harness) {
				const dead = "dead-runner"
				h.provision("i-orphan", map[string]any{"size": 1})
				leftover := exec.Command("sleep", "60")
				leftover.Env = []string{executor.RunnerEnv + "=" + dead}
				leftover.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
				require.NoError(t, leftover.Start())
				exited := make(chan struct{})
				go func() { _ = leftover.Wait(); close(exited) }()
				t.Cleanup(func() { _ = leftover.Process.Kill(); <-exited })
				host, _ := os.Hostname()
				now := time.Now()
				job := &store.Job{Token: "update-orphan", Method: store.Update, InstanceID: "i-orphan", State: store.JobRunning,
					RunnerID: dead, ActionRan: true, CreatedAt: now, StartedAt: now,
					Request: store.JobRequest{ServiceID: "svc-quick", PlanID: "plan-small"}}
				require.NoError(t, h.store.Update(context.Background(), func(tx store.Tx) error {
					inst, err := store.GetInstance(tx, "i-orphan")
					if err != nil {
						return err
					}
					inst.Job, inst.Lock = job.Token, job.Token
					if err := store.PutInstance(tx, inst); err != nil {
						return err
					}
					if err := store.PutRunner(tx, &store.Runner{ID: dead, Host: host, Heartbeat: now.Add(-time.Hour)}); err != nil {
						return err
					}
					return store.PutJob(tx, job)
				}))
				failed, err := h.broker.Recover(context.Background())
				require.NoError(t, err)
				assert.Equal(t, []string{job.Token}, failed)
				select {
				case <-exited:
				case <-time.After(10 * time.Second):
					t.Fatal("the leftover process of the stopped broker still runs")
				}
				lo := h.do("GET", instPath("i-orphan")+"/last_operation", nil)
				assert.Equal(t, "failed", lo.str("state"))
				assert.Contains(t, lo.str("description"), "stopped before it finished")
				requireStatus(t, http.StatusOK, h.do("DELETE", instPath("i-orphan")+"?"+quickQuery, nil))
			},
		},
		{
			name: "refusals answer 400 (provision, update, bind) or 422 (deprovision, unbind) with the action's description; update_repeatable and instance_usable follow the action",
			run: func(t *testing.T, h *harness) {
				patch := map[string]any{"service_id": "svc-quick", "parameters": map[string]any{"size": 2}}
				h.exec.refuse(bundle.Provision, "i-r", "", "size 1 is sold out")
				r := h.do("PUT", instPath("i-r"), quick(map[string]any{"size": 1}))
				requireStatus(t, http.StatusBadRequest, r)
				assert.Equal(t, "ActionRefused", r.str("error"))
				assert.Equal(t, "provision refused: size 1 is sold out", r.str("description"))
				requireStatus(t, http.StatusNotFound, h.do("GET", instPath("i-r")+"/last_operation", nil))

				h.provision("i-r", map[string]any{"size": 1})
				h.exec.refuse(bundle.Update, "i-r", "", "size 2 is too small for the data")
				r = h.do("PATCH", instPath("i-r"), patch)
				requireStatus(t, http.StatusBadRequest, r)
				assert.Equal(t, "ActionRefused", r.str("error"))
				lo := h.do("GET", instPath("i-r")+"/last_operation", nil)
				assert.Equal(t, "failed", lo.str("state"))
				assert.Equal(t, false, lo.body["update_repeatable"], "repeating a refused update cannot help")
				assert.Equal(t, true, lo.body["instance_usable"])

				no, yes := false, true
				h.exec.failWith(bundle.Update, "i-r", "", executor.Output{Description: "the disk broke", InstanceUsable: &no, UpdateRepeatable: &yes})
				r = h.do("PATCH", instPath("i-r"), patch)
				requireStatus(t, http.StatusInternalServerError, r, "an unexpected failure stays 500")
				assert.Equal(t, "ActionFailed", r.str("error"))
				lo = h.do("GET", instPath("i-r")+"/last_operation", nil)
				assert.Equal(t, false, lo.body["instance_usable"])
				assert.Equal(t, true, lo.body["update_repeatable"])

				h.exec.refuse(bundle.Bind, "i-r", "b", "no such role")
				r = h.do("PUT", bindPath("i-r", "b"), quickBind(nil))
				requireStatus(t, http.StatusBadRequest, r)
				assert.Equal(t, "bind refused: no such role", r.str("description"))
				requireStatus(t, http.StatusNotFound, h.do("GET", bindPath("i-r", "b")+"/last_operation", nil))
				requireStatus(t, http.StatusCreated, h.do("PUT", bindPath("i-r", "b"), quickBind(nil)))

				h.exec.refuse(bundle.Unbind, "i-r", "b", "the binding is in use")
				r = h.do("DELETE", bindPath("i-r", "b")+"?"+quickQuery, nil)
				requireStatus(t, http.StatusUnprocessableEntity, r)
				assert.Equal(t, "ActionRefused", r.str("error"))
				requireStatus(t, http.StatusOK, h.do("DELETE", bindPath("i-r", "b")+"?"+quickQuery, nil))

				h.exec.refuse(bundle.Deprovision, "i-r", "", "backups still running")
				r = h.do("DELETE", instPath("i-r")+"?"+quickQuery, nil)
				requireStatus(t, http.StatusUnprocessableEntity, r)
				assert.Equal(t, "deprovision refused: backups still running", r.str("description"))
				requireStatus(t, http.StatusOK, h.do("GET", instPath("i-r"), nil), "the instance is still there")
				requireStatus(t, http.StatusOK, h.do("DELETE", instPath("i-r")+"?"+quickQuery, nil))
			},
		},
		{
			name: "an asynchronous provision that its action refuses fails, and its deprovision runs nothing",
			opts: []harnessOption{async},
			run: func(t *testing.T, h *harness) {
				h.exec.refuse(bundle.Provision, "i-ar", "", "no capacity in that region")
				requireStatus(t, http.StatusAccepted, h.do("PUT", instPath("i-ar")+"?accepts_incomplete=true", quick(map[string]any{"size": 1})))
				lo := h.waitLastOperation(instPath("i-ar"), "failed")
				assert.Equal(t, "provision refused: no capacity in that region", lo.str("description"))
				requireStatus(t, http.StatusOK, h.do("DELETE", instPath("i-ar")+"?"+quickQuery, nil))
				assert.Zero(t, h.exec.ran(bundle.Deprovision, "i-ar", ""), "a refused provision left nothing to undo")
			},
		},
		{
			name: "a plan removed from its bundle: its instances still update parameters and bind; only new provisions are refused",
			run: func(t *testing.T, h *harness) {
				h.provision("i-plan", map[string]any{"size": 1, "region": "eu"})
				requireStatus(t, http.StatusCreated, h.do("PUT", bindPath("i-plan", "b1"), quickBind(nil)))
				withoutSmall := strings.Replace(quickManifest, `{"id": "plan-small", "name": "small"`, `{"id": "plan-medium", "name": "medium"`, 1)
				require.NotEqual(t, quickManifest, withoutSmall)
				writeBundleDir(t, filepath.Join(h.regDir, "quick"), withoutSmall, nil)
				h.broker.Sync(context.Background())

				r := h.do("PATCH", instPath("i-plan"), map[string]any{"service_id": "svc-quick", "parameters": map[string]any{"size": 5, "region": "eu"}})
				requireStatus(t, http.StatusOK, r, "update of parameters")
				g := h.do("GET", instPath("i-plan"), nil)
				assert.Equal(t, map[string]any{"size": float64(5), "region": "eu"}, g.body["parameters"])
				requireStatus(t, http.StatusCreated, h.do("PUT", bindPath("i-plan", "b2"), quickBind(map[string]any{"role": "ro"})), "bind")
				r = h.do("PATCH", instPath("i-plan"), map[string]any{"service_id": "svc-quick", "plan_id": "plan-large"})
				requireStatus(t, http.StatusUnprocessableEntity, r, "plan change")
				assert.Contains(t, r.str("description"), "was removed")
				r = h.do("PUT", instPath("i-new"), quick(map[string]any{"size": 1}))
				requireStatus(t, http.StatusBadRequest, r, "new provision")
				assert.Contains(t, r.str("description"), `plan_id "plan-small" is not a plan`)
				for _, b := range []string{"b1", "b2"} {
					requireStatus(t, http.StatusOK, h.do("DELETE", bindPath("i-plan", b)+"?"+quickQuery, nil))
				}
				requireStatus(t, http.StatusOK, h.do("DELETE", instPath("i-plan")+"?"+quickQuery, nil))
			},
		},
		{
			name: "requests about a provision accepted while bootstrapping answer with OSB error codes, never a bare 500",
			opts: []harnessOption{noInitialSync, async},
			run: func(t *testing.T, h *harness) {
				r := h.do("PUT", instPath("i-boot")+"?accepts_incomplete=true", quick(map[string]any{"size": 1}))
				requireStatus(t, http.StatusAccepted, r)
				requests := []struct {
					method, path string
					body         any
				}{
					{"PATCH", instPath("i-boot") + "?accepts_incomplete=true", map[string]any{"service_id": "svc-quick", "parameters": map[string]any{"size": 2}}},
					{"PUT", bindPath("i-boot", "b") + "?accepts_incomplete=true", quickBind(nil)},
					{"DELETE", instPath("i-boot") + "?accepts_incomplete=true&" + quickQuery, nil},
					{"DELETE", instPath("i-boot") + "?" + quickQuery, nil},
				}
				for _, rq := range requests {
					r := h.do(rq.method, rq.path, rq.body)
					requireStatus(t, http.StatusUnprocessableEntity, r, rq.method, rq.path)
					assert.Equal(t, "ConcurrencyError", r.str("error"), "%s %s", rq.method, rq.path)
				}
				// The spec never comes: the provision fails and the instance
				// is forgotten by its deprovision.
				require.NoError(t, os.RemoveAll(filepath.Join(h.regDir, "quick")))
				h.broker.Sync(context.Background())
				h.waitLastOperation(instPath("i-boot"), "failed")
				requireStatus(t, http.StatusOK, h.do("DELETE", instPath("i-boot")+"?"+quickQuery, nil))
				requireStatus(t, http.StatusGone, h.do("GET", instPath("i-boot")+"/last_operation", nil))

				// A broker failure (a spec lost from the store) is a 500 with a code.
				requireStatus(t, http.StatusAccepted, h.do("PUT", instPath("i-slow")+"?accepts_incomplete=true", slow()))
				h.waitLastOperation(instPath("i-slow"), "succeeded")
				require.NoError(t, h.store.Update(context.Background(), func(tx store.Tx) error { return store.DeleteSpec(tx, "svc-slow") }))
				_, err := h.broker.Sweep(context.Background()) // reloads the catalog
				require.NoError(t, err)
				r = h.do("PATCH", instPath("i-slow")+"?accepts_incomplete=true", map[string]any{"service_id": "svc-slow"})
				requireStatus(t, http.StatusInternalServerError, r)
				assert.Equal(t, "InternalError", r.str("error"))
			},
		},
		{
			name: "organization_guid and space_guid: a provision needs both (400), an update needs neither",
			run: func(t *testing.T, h *harness) {
				for _, drop := range []string{"organization_guid", "space_guid"} {
					body := quick(map[string]any{"size": 1})
					delete(body, drop)
					r := h.do("PUT", instPath("i-org"), body)
					requireStatus(t, http.StatusBadRequest, r, "without "+drop)
					assert.Contains(t, r.str("description"), "organization_guid and space_guid are required")
					body[drop] = ""
					requireStatus(t, http.StatusBadRequest, h.do("PUT", instPath("i-org"), body), "with an empty "+drop)
				}
				assert.Zero(t, h.exec.callCount(), "nothing ran")
				h.provision("i-org", map[string]any{"size": 1})
				requireStatus(t, http.StatusOK, h.do("PATCH", instPath("i-org"), map[string]any{"service_id": "svc-quick", "parameters": map[string]any{"size": 2}}))
			},
		},
		{
			name: "last_operation: 404 for an instance or binding the broker never knew, 410 once deleted (asynchronously), in progress again for a new instance under the id",
			opts: []harnessOption{async},
			run: func(t *testing.T, h *harness) {
				requireStatus(t, http.StatusNotFound, h.do("GET", instPath("never")+"/last_operation", nil))
				requireStatus(t, http.StatusNotFound, h.do("GET", bindPath("never", "b")+"/last_operation", nil))
				h.provision("i-lo", map[string]any{"size": 1})
				requireStatus(t, http.StatusNotFound, h.do("GET", bindPath("i-lo", "never")+"/last_operation", nil))
				requireStatus(t, http.StatusCreated, h.do("PUT", bindPath("i-lo", "b"), quickBind(nil)))
				requireStatus(t, http.StatusAccepted, h.do("DELETE", bindPath("i-lo", "b")+"?accepts_incomplete=true&"+quickQuery, nil))
				h.waitGone(bindPath("i-lo", "b"))
				requireStatus(t, http.StatusAccepted, h.do("DELETE", instPath("i-lo")+"?accepts_incomplete=true&"+quickQuery, nil))
				h.waitGone(instPath("i-lo"))
				r := h.do("GET", instPath("i-lo")+"/last_operation", nil)
				assert.Contains(t, r.str("description"), "deprovisioned")

				// A new instance under the id is not gone any more.
				h.exec.hold(t, bundle.Provision, "i-lo", "")
				requireStatus(t, http.StatusAccepted, h.do("PUT", instPath("i-lo")+"?accepts_incomplete=true", quick(map[string]any{"size": 1})))
				assert.Equal(t, "in progress", h.do("GET", instPath("i-lo")+"/last_operation", nil).str("state"))
			},
		},
		{
			name: "last_operation forgets deleted instances after the retention",
			opts: []harnessOption{withConfig(func(c *embedded.Config) { c.Clock = clock })},
			run: func(t *testing.T, h *harness) {
				h.provision("i-old", map[string]any{"size": 1})
				requireStatus(t, http.StatusOK, h.do("DELETE", instPath("i-old")+"?"+quickQuery, nil))
				requireStatus(t, http.StatusGone, h.do("GET", instPath("i-old")+"/last_operation", nil))
				pruned, err := h.broker.PruneGone(context.Background())
				require.NoError(t, err)
				assert.Zero(t, pruned, "kept for the retention")
				clock.offset.Store(int64(embedded.GoneRetention + time.Minute))
				pruned, err = h.broker.PruneGone(context.Background())
				require.NoError(t, err)
				assert.Equal(t, 1, pruned)
				requireStatus(t, http.StatusNotFound, h.do("GET", instPath("i-old")+"/last_operation", nil))
			},
		},
		{
			name: "an asynchronous provision's dashboard_url is in the instance fetch once it is done, and in an identical repeat",
			opts: []harnessOption{async},
			run: func(t *testing.T, h *harness) {
				release := h.exec.hold(t, bundle.Provision, "i-dash", "")
				body := quick(map[string]any{"size": 1})
				r := h.do("PUT", instPath("i-dash")+"?accepts_incomplete=true", body)
				requireStatus(t, http.StatusAccepted, r)
				assert.Empty(t, r.str("dashboard_url"), "not known before the action ends")
				requireStatus(t, http.StatusNotFound, h.do("GET", instPath("i-dash"), nil))
				release()
				h.waitLastOperation(instPath("i-dash"), "succeeded")
				g := h.do("GET", instPath("i-dash"), nil)
				requireStatus(t, http.StatusOK, g)
				assert.Equal(t, "https://dashboard.example/i-dash", g.str("dashboard_url"))
				r = h.do("PUT", instPath("i-dash")+"?accepts_incomplete=true", body)
				requireStatus(t, http.StatusOK, r)
				assert.Equal(t, "https://dashboard.example/i-dash", r.str("dashboard_url"))
			},
		},
		{
			name: "an identical provision after a failed one runs the provision again; a different one is told to deprovision first",
			run: func(t *testing.T, h *harness) {
				body := quick(map[string]any{"size": 1})
				h.exec.fail(bundle.Provision, "i-retry", "", "the network blinked")
				requireStatus(t, http.StatusInternalServerError, h.do("PUT", instPath("i-retry"), body))
				r := h.do("PUT", instPath("i-retry"), quick(map[string]any{"size": 2}))
				requireStatus(t, http.StatusConflict, r)
				assert.Contains(t, r.str("description"), "deprovision it first")
				r = h.do("PUT", instPath("i-retry"), body)
				requireStatus(t, http.StatusCreated, r)
				assert.Equal(t, "https://dashboard.example/i-retry", r.str("dashboard_url"))
				assert.Equal(t, 2, h.exec.ran(bundle.Provision, "i-retry", ""))
				assert.True(t, h.job(h.instance("i-retry").Job).Retry, "the action is told it is a retry")
				requireStatus(t, http.StatusOK, h.do("PUT", instPath("i-retry"), body), "then an identical repeat as usual")
			},
		},
		{
			name: "an asynchronous retry of a failed provision answers 202 and runs again",
			opts: []harnessOption{async},
			run: func(t *testing.T, h *harness) {
				body := quick(map[string]any{"size": 1})
				h.exec.fail(bundle.Provision, "i-aretry", "", "the network blinked")
				requireStatus(t, http.StatusAccepted, h.do("PUT", instPath("i-aretry")+"?accepts_incomplete=true", body))
				h.waitLastOperation(instPath("i-aretry"), "failed")
				r := h.do("PUT", instPath("i-aretry")+"?accepts_incomplete=true", body)
				requireStatus(t, http.StatusAccepted, r)
				require.NotEmpty(t, r.str("operation"))
				h.waitLastOperation(instPath("i-aretry"), "succeeded")
				requireStatus(t, http.StatusOK, h.do("GET", instPath("i-aretry"), nil))
			},
		},
		{
			name: "a bundle whose manifest has a syntax error is a failed fetch of that bundle: its spec stays, and the broker reports it",
			run: func(t *testing.T, h *harness) {
				h.provision("i-m", map[string]any{"size": 1})
				require.NoError(t, os.WriteFile(filepath.Join(h.regDir, "quick", bundle.ManifestFile), []byte(`{"name": "quick",`), 0o644))
				require.NoError(t, os.WriteFile(filepath.Join(h.regDir, "slow", bundle.ManifestFile), []byte(`{"name": "slow", "id": "svc-slow"}`), 0o644))
				rep := h.broker.Sync(context.Background())
				require.Len(t, rep.Registries, 1)
				assert.Empty(t, rep.Registries[0].Marked, "nothing is marked")
				assert.ElementsMatch(t, []string{"svc-quick", "svc-slow"}, rep.Registries[0].Kept)
				require.Len(t, rep.Registries[0].Malformed, 2)
				assert.ElementsMatch(t, []string{"quick", "slow"}, h.catalogNames(), "both specs stay in the catalog")
				requireStatus(t, http.StatusCreated, h.do("PUT", instPath("i-m2"), quick(map[string]any{"size": 1})), "and serve")
				assert.Contains(t, h.logs.String(), "cannot be read; it counts as a failed fetch of that bundle")

				health := h.plain("/healthz")
				assert.Contains(t, health, `"malformed":[{"bundle":"quick"`)
				assert.Contains(t, h.plain("/metrics"), `lockstep_osb_malformed_bundles{registry="test"} 2`)

				// Fixed, and the other one really removed: reported clean, and the removal marks.
				writeBundleDir(t, filepath.Join(h.regDir, "quick"), quickManifest, nil)
				require.NoError(t, os.RemoveAll(filepath.Join(h.regDir, "slow")))
				rep = h.broker.Sync(context.Background())
				assert.Empty(t, rep.Registries[0].Malformed)
				assert.Equal(t, []string{"svc-slow"}, rep.Registries[0].Marked)
				assert.Contains(t, h.plain("/metrics"), `lockstep_osb_malformed_bundles{registry="test"} 0`)
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var h *harness
			if tt.shell {
				h = newShellHarness(t, tt.opts...)
			} else {
				h = newHarness(t, tt.opts...)
			}
			tt.run(t, h)
		})
	}
}

// plain GETs a path without the OSB headers and returns the body.
func (h *harness) plain(path string) string {
	h.t.Helper()
	resp, err := h.srv.Client().Get(h.srv.URL + path)
	require.NoError(h.t, err)
	defer func() { _ = resp.Body.Close() }()
	var b strings.Builder
	_, err = io.Copy(&b, resp.Body)
	require.NoError(h.t, err)
	require.Equal(h.t, http.StatusOK, resp.StatusCode, b.String())
	return b.String()
}

// testClock is the real clock moved by an offset the test sets.
type testClock struct{ offset atomic.Int64 }

// Now is time.Now moved by the offset.
func (c *testClock) Now() time.Time { return time.Now().Add(time.Duration(c.offset.Load())) }

// Since is the time passed since t by this clock.
func (c *testClock) Since(t time.Time) time.Duration { return c.Now().Sub(t) }

// waitPid waits until a pid file is written and returns the pid.
func waitPid(t *testing.T, path string) int {
	t.Helper()
	var pid int
	require.Eventually(t, func() bool {
		raw, err := os.ReadFile(path)
		if err != nil {
			return false
		}
		pid, err = strconv.Atoi(strings.TrimSpace(string(raw)))
		return err == nil
	}, 10*time.Second, 10*time.Millisecond, "the action never wrote %s", path)
	return pid
}

// alive reports whether a process runs (a zombie counts as ended).
func alive(pid int) bool {
	raw, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	i := strings.LastIndexByte(string(raw), ')')
	fields := strings.Fields(string(raw[i+1:]))
	return len(fields) > 0 && fields[0] != "Z"
}
