package replicas

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/lockstep-dev/lockstep/api/v1alpha1"
	"github.com/lockstep-dev/lockstep/internal/osb/fakebroker"
	"github.com/lockstep-dev/lockstep/test/framework"
)

var env struct {
	*framework.ControlPlane
	client     client.Client
	binary     string // the lockstep webhook binary
	kubeconfig string // lockstep's identity
	dir        string
	broker     *fakebroker.Broker
	front      *front
}

func TestMain(m *testing.M) { os.Exit(run(m)) }

func run(m *testing.M) int {
	fail := func(err error) int { fmt.Fprintln(os.Stderr, "replicas:", err); return 1 }
	// The namespace and garbage-collector controllers run, as in a cluster.
	cp, err := framework.Start(framework.Options{Name: "replicas", ControllerManager: true})
	if err != nil {
		return fail(err)
	}
	defer func() { _ = cp.Stop() }()
	env.ControlPlane = cp
	// The replicas' logs and binary stay when KEEP is set.
	if env.dir, err = os.MkdirTemp("", "lockstep-replicas-"); err != nil {
		return fail(err)
	}
	defer func() {
		if os.Getenv("KEEP") == "" {
			_ = os.RemoveAll(env.dir)
		}
	}()

	env.binary = filepath.Join(env.dir, "webhook")
	build := exec.Command("go", "build", "-o", env.binary, "./cmd/webhook")
	build.Dir, build.Stdout, build.Stderr = cp.Root, os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		return fail(fmt.Errorf("building the webhook binary: %w", err))
	}

	if env.client, err = cp.Client(); err != nil {
		return fail(err)
	}
	if env.kubeconfig, _, err = cp.Kubeconfig("lockstep", "system:masters"); err != nil {
		return fail(err)
	}

	// The API server calls the webhook at the envtest port; a round-robin
	// front there spreads the calls over the replicas.
	if env.front, err = newFront(cp.WebhookAddr()); err != nil {
		return fail(err)
	}
	defer env.front.close()

	if env.broker, err = fakebroker.Start(); err != nil {
		return fail(err)
	}
	defer env.broker.Close()
	sb := &v1alpha1.ServiceBroker{ObjectMeta: metav1.ObjectMeta{Name: "acme"}, Spec: v1alpha1.ServiceBrokerSpec{URL: env.broker.URL()}}
	if err := env.client.Create(context.Background(), sb); err != nil {
		return fail(err)
	}
	return m.Run()
}

// replica is one lockstep webhook process.
type replica struct {
	cmd  *exec.Cmd
	addr string
	log  string
	// exited is closed when the process has ended; err is how it ended.
	exited chan struct{}
	err    error
}

// startReplica runs the webhook binary on a free port, adds it to the front
// and waits until it serves TLS.
func startReplica(t *testing.T, name string) *replica {
	t.Helper()
	port, err := freePort()
	if err != nil {
		t.Fatal(err)
	}
	opts := env.Env.WebhookInstallOptions
	r := &replica{addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), log: filepath.Join(env.dir, name+".log")}
	logFile, err := os.OpenFile(r.log, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	r.cmd = exec.Command(env.binary)
	r.cmd.Stdout, r.cmd.Stderr = logFile, logFile
	r.cmd.Env = append(os.Environ(),
		"KUBECONFIG="+env.kubeconfig,
		"LOCKSTEP_WEBHOOK_HOST=127.0.0.1",
		"LOCKSTEP_WEBHOOK_PORT="+strconv.Itoa(port),
		"LOCKSTEP_CERT_DIR="+opts.LocalServingCertDir,
		"LOCKSTEP_METRICS_ADDR=0",
		"LOCKSTEP_HEALTH_ADDR=0",
		"LOCKSTEP_ADMISSION_BUDGET=3s",
		"LOCKSTEP_BROKER_TIMEOUT=2s",
		"LOCKSTEP_POLL_INTERVAL=50ms",
		"LOCKSTEP_POLL_MAX_INTERVAL=200ms",
		"LOCKSTEP_LOCK_DURATION=10s",
		"LOCKSTEP_LOCK_WAIT=200ms",
		"LOCKSTEP_COMMIT_GRACE=5s",
		"LOCKSTEP_LEADER_ELECTION_LEASE_DURATION=3s",
		"LOCKSTEP_LEADER_ELECTION_RENEW_DEADLINE=2s",
		"LOCKSTEP_LEADER_ELECTION_RETRY_PERIOD=500ms",
		"LOCKSTEP_LOG_FORMAT=console",
		"LOCKSTEP_LOG_LEVEL=debug",
	)
	if err := r.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	r.exited = make(chan struct{})
	go func() { r.err = r.cmd.Wait(); close(r.exited) }()
	t.Cleanup(func() { r.kill(); _ = logFile.Close() })
	stopped := func() error {
		select {
		case <-r.exited:
			return fmt.Errorf("replica %s ended: %v", name, r.err)
		default:
			return nil
		}
	}
	if err := framework.WaitServing(context.Background(), r.addr, 60*time.Second, stopped); err != nil {
		out, _ := os.ReadFile(r.log)
		t.Fatalf("replica %s did not serve: %v\n%s", name, err, out)
	}
	env.front.add(r.addr)
	t.Cleanup(func() { env.front.remove(r.addr) })
	return r
}

// kill stops the replica at once, as a crash would (SIGKILL).
func (r *replica) kill() {
	env.front.remove(r.addr)
	select {
	case <-r.exited:
	default:
		_ = r.cmd.Process.Signal(syscall.SIGKILL)
		<-r.exited
	}
}

// waitReady waits until the ServiceBroker's catalog is loaded in every
// running replica (each loads it on start).
func waitBrokerReady(t *testing.T) {
	t.Helper()
	require.Eventually(t, func() bool {
		var sb v1alpha1.ServiceBroker
		err := env.client.Get(context.Background(), client.ObjectKey{Name: "acme"}, &sb)
		return err == nil && meta.IsStatusConditionTrue(sb.Status.Conditions, v1alpha1.ConditionReady)
	}, 30*time.Second, 100*time.Millisecond, "ServiceBroker acme never became Ready")
}

// front forwards TCP connections (TLS passes through) to the replicas in
// turn.
type front struct {
	ln    net.Listener
	mu    sync.Mutex
	addrs []string
	next  atomic.Uint64
	wg    sync.WaitGroup
}

func newFront(addr string) (*front, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("front: %w", err)
	}
	f := &front{ln: ln}
	f.wg.Add(1)
	go f.serve()
	return f, nil
}

func (f *front) add(addr string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.addrs = append(f.addrs, addr)
}

func (f *front) remove(addr string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for i, a := range f.addrs {
		if a == addr {
			f.addrs = append(f.addrs[:i], f.addrs[i+1:]...)
			return
		}
	}
}

func (f *front) pick() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.addrs) == 0 {
		return ""
	}
	return f.addrs[f.next.Add(1)%uint64(len(f.addrs))]
}

func (f *front) serve() {
	defer f.wg.Done()
	for {
		in, err := f.ln.Accept()
		if err != nil {
			return
		}
		go func() {
			defer func() { _ = in.Close() }()
			target := f.pick()
			if target == "" {
				return
			}
			out, err := net.DialTimeout("tcp", target, 5*time.Second)
			if err != nil {
				return
			}
			defer func() { _ = out.Close() }()
			done := make(chan struct{}, 2)
			go func() { _, _ = io.Copy(out, in); done <- struct{}{} }()
			go func() { _, _ = io.Copy(in, out); done <- struct{}{} }()
			<-done
		}()
	}
}

func (f *front) close() {
	_ = f.ln.Close()
	f.wg.Wait()
}

func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer func() { _ = ln.Close() }()
	return ln.Addr().(*net.TCPAddr).Port, nil
}
