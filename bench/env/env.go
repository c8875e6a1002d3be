package env

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/lockstep-dev/lockstep/internal/app"
	"github.com/lockstep-dev/lockstep/test/framework"
)

// Options configure Start.
type Options struct {
	// Root is the repository root (deploy/, cmd/webhook).
	Root string
	// Assets is the directory with kube-apiserver, etcd and kubectl.
	Assets string
	// Progress receives one line per step; nil discards them.
	Progress io.Writer
	// Keep leaves the working directory (logs, binaries) in place.
	Keep bool
	// BuildFlags are extra go build flags for the binaries (the harness
	// test passes -race when it runs under it, to reuse its build cache).
	BuildFlags []string
	// Settings are LOCKSTEP_*=value variables given to every lockstep
	// process the benchmarks start (LOCKSTEP_PPROF_ADDR=127.0.0.1:6060 to
	// take a profile while one runs); a benchmark's own settings win.
	Settings []string
}

// Env is a running benchmark environment. Stop it when done.
type Env struct {
	// Config reaches the API server as an administrator, without
	// client-side rate limiting.
	Config *rest.Config
	// Client is a client with lockstep's scheme.
	Client client.Client
	// Username is the benchmark's own user; lockstep lets it write status.
	Username string
	// CA verifies the serving certificates of both webhook servers.
	CA []byte
	// Dir holds binaries, kubeconfigs and the processes' logs.
	Dir string
	// Lockstep is the running lockstep process.
	Lockstep *framework.Process
	// Baselines are the allow-all webhook servers, by mode (see
	// BaselineModes).
	Baselines map[string]*framework.Process

	opts               Options
	bins               Binaries
	cp                 *framework.ControlPlane
	lockstepKubeconfig string
	// lockstepStarts counts StartLockstep's processes, which log to
	// lockstep-1.log, lockstep-2.log, and so on.
	lockstepStarts int
	// runtimeEnv are the Go runtime settings of deploy/'s Deployment.
	runtimeEnv    []string
	certDir       string
	webhookPort   int
	healthPort    int
	metricsPort   int
	baselinePorts map[string]int
}

// The modes of bench/cmd/allow-all the environment runs, each in its own
// process: Allow is the admission benchmark's baseline; Typed and
// SpecFirst are references that decode the objects first (see the
// command's documentation).
const (
	Allow     = "allow"
	Typed     = "typed"
	SpecFirst = "spec-first"
)

// BaselineModes are the allow-all modes started, in order.
var BaselineModes = []string{Allow, Typed, SpecFirst}

// Start builds the binaries, starts the control plane and both webhook
// servers, and waits until they serve.
func Start(ctx context.Context, opts Options) (_ *Env, err error) {
	dir, err := os.MkdirTemp("", "lockstep-bench-")
	if err != nil {
		return nil, fmt.Errorf("creating a working directory: %w", err)
	}
	e := &Env{Dir: dir, opts: opts, Baselines: map[string]*framework.Process{}, baselinePorts: map[string]int{}}
	defer func() {
		if err != nil {
			_ = e.Stop()
		}
	}()

	t0 := time.Now()
	if e.bins, err = Build(ctx, opts.Root, filepath.Join(dir, "bin"), opts.BuildFlags); err != nil {
		return nil, err
	}
	e.Logf("built cmd/webhook and bench/cmd/allow-all in %s", time.Since(t0).Round(time.Millisecond))

	crds, err := baselineCRDs(opts.Root)
	if err != nil {
		return nil, err
	}
	mutating, validating, err := webhookConfigs(opts.Root)
	if err != nil {
		return nil, err
	}
	t0 = time.Now()
	e.cp, err = framework.Start(framework.Options{
		Name: "bench", Root: opts.Root, Assets: opts.Assets, Dir: dir,
		CRDs: crds, MutatingWebhooks: mutating, ValidatingWebhooks: validating,
	})
	if err != nil {
		return nil, err
	}
	cfg := e.cp.Config
	e.Logf("kube-apiserver and etcd up in %s", time.Since(t0).Round(time.Millisecond))
	cfg.QPS, cfg.Burst = -1, 0 // no client-side rate limit: measure the servers
	e.Config = cfg
	if e.Client, err = client.New(cfg, client.Options{Scheme: app.Scheme()}); err != nil {
		return nil, fmt.Errorf("creating a client: %w", err)
	}
	if e.Username, err = whoAmI(ctx, cfg); err != nil {
		return nil, err
	}

	// lockstep runs as the service account deploy/ gives it, bound to the
	// ClusterRoles of deploy/rbac: with exactly the permissions a
	// deployment gives it, under the username a deployment's requests
	// carry (which the webhook configurations' matchConditions compare
	// against).
	rendered, err := e.cp.Render("base")
	if err != nil {
		return nil, err
	}
	sa, err := framework.InstallRBAC(ctx, e.Client, rendered)
	if err != nil {
		return nil, err
	}
	if sa != ServiceAccountUser {
		return nil, fmt.Errorf("deploy/base runs lockstep as %s, the bench expects %s", sa, ServiceAccountUser)
	}
	if e.lockstepKubeconfig, err = e.cp.ServiceAccountKubeconfig(ctx, sa); err != nil {
		return nil, err
	}
	// ... and with the Go runtime settings the Deployment gives it.
	if e.runtimeEnv, err = framework.RuntimeEnv(rendered); err != nil {
		return nil, err
	}

	wh := e.cp.Env.WebhookInstallOptions
	e.CA, e.certDir, e.webhookPort = wh.LocalServingCAData, wh.LocalServingCertDir, wh.LocalServingPort
	for _, p := range []*int{&e.healthPort, &e.metricsPort} {
		if *p, err = framework.FreePort(); err != nil {
			return nil, err
		}
	}
	if err := e.StartLockstep(ctx); err != nil {
		return nil, err
	}
	for _, mode := range BaselineModes {
		if err := e.startBaseline(ctx, mode); err != nil {
			return nil, err
		}
	}
	mutatingAllowAll, validatingAllowAll := allowAllWebhooks(func(path string) string { return e.BaselineURL(Allow, path) }, e.CA)
	for _, o := range []client.Object{mutatingAllowAll, validatingAllowAll} {
		if err := e.Client.Create(ctx, o); err != nil {
			return nil, fmt.Errorf("registering the allow-all webhooks: %w", err)
		}
	}
	return e, nil
}

// Stop ends both webhook servers and the control plane, and removes the
// working directory unless Options.Keep.
func (e *Env) Stop() error {
	var errs []string
	procs := []*framework.Process{e.Lockstep}
	for _, mode := range BaselineModes {
		procs = append(procs, e.Baselines[mode])
	}
	for _, p := range procs {
		if p != nil {
			if err := p.Stop(20 * time.Second); err != nil {
				errs = append(errs, err.Error())
			}
		}
	}
	if e.cp != nil {
		if err := e.cp.Stop(); err != nil {
			errs = append(errs, err.Error())
		}
	}
	if !e.opts.Keep {
		_ = os.RemoveAll(e.Dir)
	}
	if len(errs) > 0 {
		return fmt.Errorf("stopping the benchmark environment: %s", strings.Join(errs, "; "))
	}
	return nil
}

// Logf reports progress.
func (e *Env) Logf(format string, args ...any) {
	if e.opts.Progress != nil {
		fmt.Fprintf(e.opts.Progress, "%s bench: %s\n", time.Now().Format("15:04:05"), fmt.Sprintf(format, args...))
	}
}

// LockstepURL is the URL of one of lockstep's webhook paths.
func (e *Env) LockstepURL(path string) string {
	return "https://127.0.0.1:" + strconv.Itoa(e.webhookPort) + path
}

// BaselineURL is the URL of a path on the allow-all server of a mode.
func (e *Env) BaselineURL(mode, path string) string {
	return "https://127.0.0.1:" + strconv.Itoa(e.baselinePorts[mode]) + path
}

// MetricsURL is where lockstep serves its Prometheus metrics.
func (e *Env) MetricsURL() string {
	return "http://127.0.0.1:" + strconv.Itoa(e.metricsPort) + "/metrics"
}

// lockstepEnv is lockstep's configuration: the deployed defaults and Go
// runtime settings, except addresses on loopback, envtest's serving certificates, and the
// benchmark's user allowed to write status (to seed objects as lockstep
// would have left them).
func (e *Env) lockstepEnv() []string {
	return append(append(slices.Clone(e.runtimeEnv),
		"KUBECONFIG="+e.lockstepKubeconfig,
		"LOCKSTEP_WEBHOOK_HOST=127.0.0.1",
		"LOCKSTEP_WEBHOOK_PORT="+strconv.Itoa(e.webhookPort),
		"LOCKSTEP_CERT_DIR="+e.certDir,
		"LOCKSTEP_METRICS_ADDR=127.0.0.1:"+strconv.Itoa(e.metricsPort),
		"LOCKSTEP_METRICS_SECURE=false", // plain HTTP on loopback, for the benchmark to read
		"LOCKSTEP_HEALTH_ADDR=127.0.0.1:"+strconv.Itoa(e.healthPort),
		"LOCKSTEP_STATUS_WRITERS="+e.Username,
	), e.opts.Settings...)
}

// StartLockstep starts lockstep's webhook binary and waits until it is
// ready (its /readyz, then a verified TLS handshake). settings are extra
// LOCKSTEP_*=value variables that override the defaults for this process
// only (a benchmark that needs another resync interval, say).
func (e *Env) StartLockstep(ctx context.Context, settings ...string) error {
	e.lockstepStarts++
	logPath := filepath.Join(e.Dir, fmt.Sprintf("lockstep-%d.log", e.lockstepStarts)) // one per start: a restart keeps the last one's
	p, err := framework.StartProcess("lockstep", e.bins.Webhook, nil, framework.CleanEnviron(append(e.lockstepEnv(), settings...)), logPath)
	if err != nil {
		return err
	}
	e.Lockstep = p
	ready := "http://127.0.0.1:" + strconv.Itoa(e.healthPort) + "/readyz"
	if err := waitReady(ctx, p, 60*time.Second, func(ctx context.Context) error {
		if err := httpOK(ctx, ready); err != nil {
			return err
		}
		return e.handshake(e.webhookPort)
	}); err != nil {
		return err
	}
	e.Logf("lockstep (pid %d) ready in %s", p.PID(), time.Since(p.Started).Round(time.Millisecond))
	return nil
}

// StopLockstep stops the lockstep process.
func (e *Env) StopLockstep() error {
	if e.Lockstep == nil {
		return nil
	}
	err := e.Lockstep.Stop(30 * time.Second)
	e.Lockstep = nil
	return err
}

// startBaseline starts the allow-all server of a mode and waits until it
// completes a TLS handshake.
func (e *Env) startBaseline(ctx context.Context, mode string) error {
	port, err := framework.FreePort()
	if err != nil {
		return err
	}
	args := []string{"-mode", mode, "-host", "127.0.0.1", "-port", strconv.Itoa(port), "-cert-dir", e.certDir}
	p, err := framework.StartProcess("allow-all -mode "+mode, e.bins.AllowAll, args, framework.CleanEnviron(nil), filepath.Join(e.Dir, "allow-all-"+mode+".log"))
	if err != nil {
		return err
	}
	e.Baselines[mode], e.baselinePorts[mode] = p, port
	return waitReady(ctx, p, 30*time.Second, func(context.Context) error { return e.handshake(port) })
}

// handshake completes a TLS handshake with a webhook server, verifying its
// certificate against the CA.
func (e *Env) handshake(port int) error {
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(e.CA)
	conn, err := tls.DialWithDialer(&net.Dialer{Timeout: time.Second}, "tcp", "127.0.0.1:"+strconv.Itoa(port),
		&tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12})
	if err != nil {
		return err
	}
	return conn.Close()
}

// waitReady checks ready every 100ms until it succeeds, the process exits,
// or timeout passes.
func waitReady(ctx context.Context, p *framework.Process, timeout time.Duration, ready func(context.Context) error) error {
	var last error
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		if done, err := p.Exited(); done {
			return false, fmt.Errorf("%s exited before it was ready (%v); its last output:\n%s", p.Name, err, p.LogTail(30))
		}
		last = ready(ctx)
		return last == nil, nil
	})
	if err != nil && wait.Interrupted(err) {
		return fmt.Errorf("%s was not ready within %s (last check: %v); its last output:\n%s", p.Name, timeout, last, p.LogTail(30))
	}
	return err
}

func httpOK(ctx context.Context, url string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: HTTP %d", url, resp.StatusCode)
	}
	return nil
}

// whoAmI asks the API server who the benchmark's client is.
func whoAmI(ctx context.Context, cfg *rest.Config) (string, error) {
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return "", fmt.Errorf("creating a clientset: %w", err)
	}
	review, err := cs.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if err != nil {
		return "", fmt.Errorf("asking the API server who the benchmark is: %w", err)
	}
	return review.Status.UserInfo.Username, nil
}
