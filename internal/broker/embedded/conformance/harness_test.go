package conformance

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/lockstep-dev/lockstep/internal/broker/embedded"
	"github.com/lockstep-dev/lockstep/internal/broker/embedded/bundle"
	"github.com/lockstep-dev/lockstep/internal/broker/embedded/executor"
	"github.com/lockstep-dev/lockstep/internal/broker/embedded/registry"
	"github.com/lockstep-dev/lockstep/internal/broker/embedded/store"
	"github.com/lockstep-dev/lockstep/internal/broker/embedded/store/bboltstore"
	"github.com/lockstep-dev/lockstep/test/framework"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// The test bundles. quick answers at once unless the test holds an action;
// slow declares itself asynchronous.
const quickManifest = `{
  "name": "quick", "id": "svc-quick", "description": "quick test service", "bindable": true,
  "plans": [
    {"id": "plan-small", "name": "small", "description": "small", "updateable": true,
     "schemas": {
       "create": {"type": "object", "properties": {"size": {"type": "integer", "minimum": 1}, "region": {"type": "string"}}, "additionalProperties": false},
       "update": {"type": "object", "properties": {"size": {"type": "integer", "minimum": 1}}, "additionalProperties": false},
       "bind": {"type": "object", "properties": {"role": {"enum": ["ro", "rw"]}}}
     }},
    {"id": "plan-large", "name": "large", "description": "large"},
    {"id": "plan-nobind", "name": "nobind", "description": "cannot be bound", "bindable": false}
  ]
}`

const slowManifest = `{
  "name": "slow", "id": "svc-slow", "description": "slow test service", "bindable": true, "asynchronous": true,
  "plans": [{"id": "plan-slow", "name": "default", "description": "default", "updateable": true}]
}`

// controlExecutor stands in for bundle actions: it succeeds at once, or
// fails, or blocks until the test releases it.
type controlExecutor struct {
	mu      sync.Mutex
	holds   map[string]chan struct{}
	started map[string]chan struct{}
	fails   map[string]string
	// failOutputs are failures with what the action says (description,
	// instance_usable, update_repeatable).
	failOutputs map[string]executor.Output
	refusals    map[string]string
	calls       []string
}

func newControlExecutor() *controlExecutor {
	return &controlExecutor{holds: map[string]chan struct{}{}, started: map[string]chan struct{}{}, fails: map[string]string{},
		failOutputs: map[string]executor.Output{}, refusals: map[string]string{}}
}

func actionKey(action bundle.Action, instance, binding string) string {
	return strings.TrimSuffix(fmt.Sprintf("%s/%s/%s", action, instance, binding), "/")
}

// hold makes the next run of the action block until release is called
// (release is also called when the test ends).
func (c *controlExecutor) hold(t *testing.T, action bundle.Action, instance, binding string) (release func()) {
	t.Helper()
	k := actionKey(action, instance, binding)
	ch := make(chan struct{})
	c.mu.Lock()
	c.holds[k], c.started[k] = ch, make(chan struct{})
	c.mu.Unlock()
	var once sync.Once
	release = func() { once.Do(func() { close(ch) }) }
	t.Cleanup(release)
	return release
}

// waitStarted waits until a held action runs.
func (c *controlExecutor) waitStarted(t *testing.T, action bundle.Action, instance, binding string) {
	t.Helper()
	c.mu.Lock()
	ch := c.started[actionKey(action, instance, binding)]
	c.mu.Unlock()
	require.NotNil(t, ch, "the action is not held")
	select {
	case <-ch:
	case <-time.After(10 * time.Second):
		t.Fatalf("held action %s never started", actionKey(action, instance, binding))
	}
}

func (c *controlExecutor) fail(action bundle.Action, instance, binding, description string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.fails[actionKey(action, instance, binding)] = description
}

// failWith makes the next run of the action fail with this output.
func (c *controlExecutor) failWith(action bundle.Action, instance, binding string, out executor.Output) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.failOutputs[actionKey(action, instance, binding)] = out
}

// refuse makes the next run of the action refuse (exit status 65).
func (c *controlExecutor) refuse(action bundle.Action, instance, binding, description string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.refusals[actionKey(action, instance, binding)] = description
}

// callCount is how many actions ran.
func (c *controlExecutor) callCount() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.calls)
}

func (c *controlExecutor) ran(action bundle.Action, instance, binding string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, k := range c.calls {
		if k == actionKey(action, instance, binding) {
			n++
		}
	}
	return n
}

func (c *controlExecutor) Run(ctx context.Context, inv executor.Invocation) (executor.Result, error) {
	k := actionKey(inv.Action, inv.Input.InstanceID, inv.Input.BindingID)
	c.mu.Lock()
	c.calls = append(c.calls, k)
	hold, started := c.holds[k], c.started[k]
	delete(c.holds, k)
	desc, fails := c.fails[k]
	delete(c.fails, k)
	failOut, failsWith := c.failOutputs[k]
	delete(c.failOutputs, k)
	refusal, refuses := c.refusals[k]
	delete(c.refusals, k)
	c.mu.Unlock()
	if hold != nil {
		close(started)
		select {
		case <-hold:
		case <-ctx.Done():
			return executor.Result{}, &executor.ActionError{Action: inv.Action, ExitCode: -1, Err: ctx.Err()}
		}
	}
	if fails {
		return executor.Result{}, &executor.ActionError{Action: inv.Action, ExitCode: 1, Description: desc, Err: fmt.Errorf("exit status 1")}
	}
	if failsWith {
		return executor.Result{Output: failOut}, &executor.ActionError{Action: inv.Action, ExitCode: 1, Description: failOut.Description, Err: fmt.Errorf("exit status 1")}
	}
	if refuses {
		return executor.Result{}, &executor.ActionError{Action: inv.Action, ExitCode: executor.RefuseExitCode, Refused: true,
			Description: refusal, Err: fmt.Errorf("exit status %d", executor.RefuseExitCode)}
	}
	switch inv.Action {
	case bundle.Provision:
		return executor.Result{Output: executor.Output{DashboardURL: "https://dashboard.example/" + inv.Input.InstanceID}}, nil
	case bundle.Bind:
		creds := fmt.Sprintf(`{"username":%q,"password":%q}`, inv.Input.BindingID, "pw-"+inv.Input.BindingID)
		return executor.Result{Output: executor.Output{Credentials: json.RawMessage(creds)}}, nil
	}
	return executor.Result{}, nil
}

const (
	username = "broker"
	password = "s3cret"
)

type harness struct {
	t      *testing.T
	broker *embedded.Broker
	srv    *httptest.Server
	exec   *controlExecutor
	store  store.Store
	regDir string
	logs   *framework.LogBuffer
}

type harnessOption func(*embedded.Config, *harnessSetup)

type harnessSetup struct {
	store     store.Store // nil: a bbolt file at storePath
	noSync    bool
	bundles   map[string]string // directory name -> manifest
	storePath string
}

// async makes requests with accepts_incomplete=true answer 202 at once.
func async(c *embedded.Config, _ *harnessSetup) { c.SyncWindow = -1 }

func noInitialSync(_ *embedded.Config, s *harnessSetup) { s.noSync = true }

func withConfig(f func(*embedded.Config)) harnessOption {
	return func(c *embedded.Config, _ *harnessSetup) { f(c) }
}

func withBundles(b map[string]string) harnessOption {
	return func(_ *embedded.Config, s *harnessSetup) { s.bundles = b }
}

func withStore(st store.Store) harnessOption {
	return func(_ *embedded.Config, s *harnessSetup) { s.store = st }
}

func onStore(path string) harnessOption {
	return func(_ *embedded.Config, s *harnessSetup) { s.storePath = path }
}

func newHarness(t *testing.T, opts ...harnessOption) *harness {
	t.Helper()
	setup := &harnessSetup{
		bundles:   map[string]string{"quick": quickManifest, "slow": slowManifest},
		storePath: filepath.Join(t.TempDir(), "broker.db"),
	}
	h := &harness{t: t, exec: newControlExecutor(), regDir: t.TempDir(), logs: &framework.LogBuffer{}}
	cfg := embedded.Config{
		Executor:   h.exec,
		WorkDir:    t.TempDir(),
		Username:   username,
		Password:   password,
		SyncWindow: 30 * time.Second,
		// Tests drive sync, sweep and recovery themselves.
		SyncPeriod: -1, SweepPeriod: -1, HeartbeatInterval: -1, BootstrapTimeout: -1,
		ShutdownGrace: time.Millisecond,
		Logger:        newLogger(h.logs),
	}
	for _, o := range opts {
		o(&cfg, setup)
	}
	for dir, manifest := range setup.bundles {
		writeBundleDir(t, filepath.Join(h.regDir, dir), manifest, nil)
	}
	if cfg.Registries == nil {
		cfg.Registries = []registry.Registry{registry.NewLocal("test", h.regDir, 0)}
	}
	st := setup.store
	if st == nil {
		var err error
		st, err = bboltstore.Open(setup.storePath, bboltstore.Options{})
		require.NoError(t, err)
	}
	cfg.Store, cfg.CloseStore = st, true
	h.store = st
	b, err := embedded.New(cfg)
	require.NoError(t, err)
	h.broker = b
	if !setup.noSync {
		b.Sync(context.Background())
	}
	h.srv = httptest.NewServer(b)
	t.Cleanup(func() {
		h.srv.Close()
		require.NoError(t, b.Close())
	})
	return h
}

// writeBundleDir writes a bundle: a manifest and executable files.
func writeBundleDir(t *testing.T, dir, manifest string, actions map[string]string) {
	t.Helper()
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "actions"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, bundle.ManifestFile), []byte(manifest), 0o644))
	for name, body := range actions {
		require.NoError(t, os.WriteFile(filepath.Join(dir, "actions", name), []byte(body), 0o755))
	}
}

// reply is an HTTP answer.
type reply struct {
	status int
	header http.Header
	body   map[string]any
	raw    string
}

func (r reply) str(key string) string {
	s, _ := r.body[key].(string)
	return s
}

type reqOption func(*http.Request)

func header(k, v string) reqOption { return func(r *http.Request) { r.Header.Set(k, v) } }

func method(m string) reqOption { return func(r *http.Request) { r.Method = m } }

func noHeader(k string) reqOption { return func(r *http.Request) { r.Header.Del(k) } }

func basicAuth(u, p string) reqOption { return func(r *http.Request) { r.SetBasicAuth(u, p) } }

func noAuth() reqOption { return func(r *http.Request) { r.Header.Del("Authorization") } }

func identity(platform string, v any) reqOption {
	raw, _ := json.Marshal(v)
	return header("X-Broker-API-Originating-Identity", platform+" "+base64.StdEncoding.EncodeToString(raw))
}

// do sends an OSB request with a valid version header and credentials.
func (h *harness) do(method, path string, body any, opts ...reqOption) reply {
	h.t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(b)
	default:
		raw, err := json.Marshal(b)
		require.NoError(h.t, err)
		rd = bytes.NewReader(raw)
	}
	req, err := http.NewRequest(method, h.srv.URL+path, rd)
	require.NoError(h.t, err)
	req.Header.Set("X-Broker-API-Version", "2.17")
	req.Header.Set("Content-Type", "application/json")
	req.SetBasicAuth(username, password)
	for _, o := range opts {
		o(req)
	}
	resp, err := h.srv.Client().Do(req)
	require.NoError(h.t, err)
	defer func() { _ = resp.Body.Close() }()
	raw, err := io.ReadAll(resp.Body)
	require.NoError(h.t, err)
	r := reply{status: resp.StatusCode, header: resp.Header, raw: string(raw)}
	if len(bytes.TrimSpace(raw)) > 0 {
		require.NoError(h.t, json.Unmarshal(raw, &r.body), "answer is not a JSON object: %s", raw)
	}
	return r
}

// requireStatus fails with the answer's body when the status differs.
func requireStatus(t *testing.T, want int, r reply, why ...string) {
	t.Helper()
	require.Equal(t, want, r.status, "%s answer: %s", strings.Join(why, " "), r.raw)
}

func instPath(id string) string { return "/v2/service_instances/" + id }

func bindPath(inst, id string) string { return instPath(inst) + "/service_bindings/" + id }

func quick(params map[string]any) map[string]any {
	return map[string]any{"service_id": "svc-quick", "plan_id": "plan-small", "parameters": params,
		"organization_guid": "org", "space_guid": "space", "context": map[string]any{"platform": "kubernetes", "namespace": "ns"}}
}

func slow() map[string]any {
	return map[string]any{"service_id": "svc-slow", "plan_id": "plan-slow", "organization_guid": "org", "space_guid": "space"}
}

func quickBind(params map[string]any) map[string]any {
	return map[string]any{"service_id": "svc-quick", "plan_id": "plan-small", "parameters": params,
		"bind_resource": map[string]any{"app_guid": "app"}}
}

const quickQuery = "service_id=svc-quick&plan_id=plan-small"

// provision creates a quick instance synchronously.
func (h *harness) provision(id string, params map[string]any) {
	h.t.Helper()
	requireStatus(h.t, http.StatusCreated, h.do("PUT", instPath(id), quick(params)))
}

// waitLastOperation polls an instance's (or binding's) last_operation until
// it reports state.
func (h *harness) waitLastOperation(path, state string) reply {
	h.t.Helper()
	var last reply
	require.Eventually(h.t, func() bool {
		last = h.do("GET", path+"/last_operation", nil)
		return last.status == http.StatusOK && last.str("state") == state
	}, 10*time.Second, 10*time.Millisecond, "last_operation of %s never became %q", path, state)
	return last
}

// waitGone polls last_operation until it answers 410.
func (h *harness) waitGone(path string) {
	h.t.Helper()
	require.Eventually(h.t, func() bool {
		return h.do("GET", path+"/last_operation", nil).status == http.StatusGone
	}, 10*time.Second, 10*time.Millisecond, "last_operation of %s never answered 410", path)
}

func (h *harness) instance(id string) *store.Instance {
	h.t.Helper()
	var inst *store.Instance
	require.NoError(h.t, h.store.View(context.Background(), func(tx store.Tx) error {
		var err error
		inst, err = store.GetInstance(tx, id)
		return err
	}))
	return inst
}

func (h *harness) job(token string) *store.Job {
	h.t.Helper()
	var j *store.Job
	require.NoError(h.t, h.store.View(context.Background(), func(tx store.Tx) error {
		var err error
		j, err = store.GetJob(tx, token)
		return err
	}))
	return j
}

func (h *harness) bindingRecord(instanceID, bindingID string) *store.Binding {
	h.t.Helper()
	var b *store.Binding
	require.NoError(h.t, h.store.View(context.Background(), func(tx store.Tx) error {
		var err error
		b, err = store.GetBinding(tx, instanceID, bindingID)
		return err
	}))
	return b
}
