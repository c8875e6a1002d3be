package robustness

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/lockstep-dev/lockstep/api/v1alpha1"
	"github.com/lockstep-dev/lockstep/internal/breaks"
	"github.com/lockstep-dev/lockstep/test/framework"
)

// lockstepNamespace is lockstep's own namespace (deploy/base).
const lockstepNamespace = v1alpha1.DefaultNamespace

// leaderLease is the Lease of lockstep's leader election, in its
// namespace; every other Lease there is an object's lock.
const leaderLease = "lockstep-reconcilers"

// env is everything a run starts.
type env struct {
	opts   Options
	dir    string
	cp     *framework.ControlPlane
	admin  client.Client
	users  client.Client // makes each request as the user its context names
	binary string
	// kubeconfig is lockstep's identity: deploy/base's service account.
	kubeconfig string
	front      *framework.Front
	replicas   []*replica
	brokers    []*brokerUnderTest
	draws      *draws
	watch      *watch
	metrics    *scrapes
	cancel     context.CancelFunc
	done       chan struct{}
}

// lockstepEnv are the replicas' settings: short timings, so that a short
// run sees many operations, failovers and resyncs; every record kept.
func (e *env) lockstepEnv() []string {
	settings := []string{
		"LOCKSTEP_NAMESPACE=" + lockstepNamespace,
		"LOCKSTEP_ADMISSION_BUDGET=4s",
		"LOCKSTEP_BROKER_TIMEOUT=2s",
		"LOCKSTEP_POLL_INTERVAL=100ms",
		"LOCKSTEP_POLL_MAX_INTERVAL=500ms",
		"LOCKSTEP_LOCK_DURATION=15s",
		"LOCKSTEP_LOCK_WAIT=1s",
		"LOCKSTEP_COMMIT_GRACE=3s",
		"LOCKSTEP_REFUSAL_MEMORY=300ms",
		"LOCKSTEP_KEEP_OPERATIONS=100000",
		"LOCKSTEP_OPERATION_RETENTION=0",
		"LOCKSTEP_RESYNC_INTERVAL=5s",
		"LOCKSTEP_RESYNC_BROKER_QPS=50",
		"LOCKSTEP_CATALOG_REFRESH_INTERVAL=2s",
		"LOCKSTEP_LEADER_ELECTION_LEASE_DURATION=2s",
		"LOCKSTEP_LEADER_ELECTION_RENEW_DEADLINE=1500ms",
		"LOCKSTEP_LEADER_ELECTION_RETRY_PERIOD=250ms",
		"LOCKSTEP_LOG_FORMAT=json",
		"LOCKSTEP_LOG_LEVEL=debug",
	}
	if e.opts.Break != "" {
		settings = append(settings, breaks.EnvVar+"="+string(e.opts.Break))
	}
	return settings
}

// start brings everything up: the control plane, lockstep's RBAC and
// identity, the brokers behind their proxies, three replicas, and the
// ServiceBrokers, Ready.
func start(ctx context.Context, opts Options, binary string) (_ *env, err error) {
	e := &env{opts: opts, dir: opts.Dir, binary: binary, draws: newDraws(opts.Seed), done: make(chan struct{})}
	e.metrics = &scrapes{markers: e.markers()}
	defer func() {
		if err != nil {
			e.stop()
		}
	}()
	if e.cp, err = framework.Start(framework.Options{Name: "robustness", ControllerManager: true, APIServers: 5, Dir: filepath.Join(e.dir, "cluster")}); err != nil {
		return nil, err
	}
	if e.admin, err = e.cp.Client(); err != nil {
		return nil, err
	}
	if e.users, err = userClient(e.cp.Config); err != nil {
		return nil, err
	}
	rendered, err := e.cp.Render("base")
	if err != nil {
		return nil, err
	}
	sa, err := framework.InstallRBAC(ctx, e.admin, rendered)
	if err != nil {
		return nil, err
	}
	if e.kubeconfig, err = e.cp.ServiceAccountKubeconfig(ctx, sa); err != nil {
		return nil, err
	}
	if e.front, err = framework.NewFront(e.cp.WebhookAddr()); err != nil {
		return nil, err
	}

	fake, err := startFake(e.draws, opts.Async)
	if err != nil {
		return nil, err
	}
	e.brokers = append(e.brokers, fake)
	embedded, err := startEmbedded(ctx, e.dir, filepath.Join(e.cp.Root, "test", "robustness", "testdata", "bundles"))
	if err != nil {
		return nil, err
	}
	e.brokers = append(e.brokers, embedded)

	if e.watch, err = startWatch(ctx, e.cp.Config, e.markers()); err != nil {
		return nil, err
	}
	runCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	e.cancel = cancel
	for _, name := range []string{"a", "b", "c"} {
		port, err := framework.FreePort()
		if err != nil {
			return nil, err
		}
		e.replicas = append(e.replicas, &replica{name: name, env: e, metricsPort: port})
	}
	go func() {
		defer close(e.done)
		done := make(chan struct{}, len(e.replicas))
		for _, r := range e.replicas {
			go func() { r.keep(runCtx); done <- struct{}{} }()
		}
		for range e.replicas {
			<-done
		}
	}()
	for _, b := range e.brokers {
		sb := &v1alpha1.ServiceBroker{ObjectMeta: metav1.ObjectMeta{Name: b.name}, Spec: v1alpha1.ServiceBrokerSpec{URL: b.proxy.URL()}}
		if err := e.admin.Create(ctx, sb); err != nil {
			return nil, fmt.Errorf("registering ServiceBroker %q: %w", b.name, err)
		}
	}
	err = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 3*time.Minute, true, func(ctx context.Context) (bool, error) {
		for _, b := range e.brokers {
			var sb v1alpha1.ServiceBroker
			if err := e.admin.Get(ctx, client.ObjectKey{Name: b.name}, &sb); err != nil || !meta.IsStatusConditionTrue(sb.Status.Conditions, v1alpha1.ConditionReady) {
				return false, nil
			}
		}
		return e.leader() != nil, nil
	})
	if err != nil {
		return nil, fmt.Errorf("the ServiceBrokers did not become Ready, or no replica took the lead: %w", err)
	}
	return e, nil
}

// markers are what every credential begins with.
func (e *env) markers() []string { return []string{fakeMarker, embeddedMarker} }

// leader returns the replica that leads; nil when none does.
func (e *env) leader() *replica {
	for _, r := range e.replicas {
		if r.leads() {
			return r
		}
	}
	return nil
}

// broker returns the broker named name.
func (e *env) broker(name string) *brokerUnderTest {
	for _, b := range e.brokers {
		if b.name == name {
			return b
		}
	}
	return nil
}

// stop ends everything a run started.
func (e *env) stop() {
	if e.cancel != nil {
		e.cancel()
		<-e.done
	}
	if e.watch != nil {
		e.watch.stop()
	}
	if e.front != nil {
		e.front.Close()
	}
	for _, b := range e.brokers {
		b.close()
	}
	if e.cp != nil {
		if err := e.cp.Stop(); err != nil {
			e.logf("stopping the control plane: %v", err)
		}
	}
}

// logf reports progress.
func (e *env) logf(format string, args ...any) {
	if e.opts.Log != nil {
		e.opts.Log(fmt.Sprintf(format, args...))
	}
}

// mkdir makes dir.
func mkdir(dir string) error { return os.MkdirAll(dir, 0o755) }
