package replicas

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/lockstep-dev/lockstep/api/v1alpha1"
	"github.com/lockstep-dev/lockstep/internal/app"
	"github.com/lockstep-dev/lockstep/internal/controllermanager"
	"github.com/lockstep-dev/lockstep/internal/osb/fakebroker"
)

var env struct {
	test       *envtest.Environment
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
	root, err := filepath.Abs("../..")
	if err != nil {
		return fail(err)
	}
	assets := os.Getenv("KUBEBUILDER_ASSETS")
	if assets == "" {
		out, err := exec.Command("bash", filepath.Join(root, "hack", "testbin.sh")).Output()
		if err != nil {
			return fail(fmt.Errorf("hack/testbin.sh: %w", err))
		}
		assets = strings.TrimSpace(string(out))
	}
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
	build.Dir, build.Stdout, build.Stderr = root, os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		return fail(fmt.Errorf("building the webhook binary: %w", err))
	}

	env.test = &envtest.Environment{
		BinaryAssetsDirectory: assets,
		CRDDirectoryPaths:     []string{filepath.Join(root, "deploy", "crds")},
		ErrorIfCRDPathMissing: true,
		WebhookInstallOptions: envtest.WebhookInstallOptions{
			Paths:            []string{filepath.Join(root, "deploy", "webhook", "manifests.yaml")},
			LocalServingHost: "127.0.0.1",
		},
	}
	cfg, err := env.test.Start()
	if err != nil {
		return fail(fmt.Errorf("starting kube-apiserver and etcd: %w", err))
	}
	defer func() { _ = env.test.Stop() }()
	// The namespace and garbage-collector controllers, as in a cluster.
	kcmLog := filepath.Join(os.TempDir(), "lockstep-replicas-kube-controller-manager.log")
	cm, err := controllermanager.Start(env.test, controllermanager.Options{Assets: assets, Dir: filepath.Join(env.dir, "kcm"), LogFile: kcmLog})
	if err != nil {
		return fail(fmt.Errorf("%w (its log: %s)", err, kcmLog))
	}
	defer func() { _ = cm.Stop() }()
	if env.client, err = client.New(cfg, client.Options{Scheme: app.Scheme()}); err != nil {
		return fail(err)
	}
	user, err := env.test.AddUser(envtest.User{Name: "lockstep", Groups: []string{"system:masters"}}, nil)
	if err != nil {
		return fail(err)
	}
	env.kubeconfig = filepath.Join(env.dir, "kubeconfig")
	if err := writeKubeconfig(user.Config(), env.kubeconfig); err != nil {
		return fail(err)
	}

	// The API server calls the webhook at the envtest port; a round-robin
	// front there spreads the calls over the replicas.
	opts := env.test.WebhookInstallOptions
	if env.front, err = newFront(net.JoinHostPort(opts.LocalServingHost, strconv.Itoa(opts.LocalServingPort))); err != nil {
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
}

// startReplica runs the webhook binary on a free port, adds it to the front
// and waits until it serves TLS.
func startReplica(t *testing.T, name string) *replica {
	t.Helper()
	port, err := freePort()
	if err != nil {
		t.Fatal(err)
	}
	opts := env.test.WebhookInstallOptions
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
	t.Cleanup(func() { r.kill(); _ = logFile.Close() })
	deadline := time.Now().Add(60 * time.Second)
	for {
		conn, err := tls.DialWithDialer(&net.Dialer{Timeout: time.Second}, "tcp", r.addr, &tls.Config{InsecureSkipVerify: true}) //nolint:gosec // readiness probe only
		if err == nil {
			_ = conn.Close()
			break
		}
		if time.Now().After(deadline) || r.cmd.ProcessState != nil {
			out, _ := os.ReadFile(r.log)
			t.Fatalf("replica %s did not serve within 60s:\n%s", name, out)
		}
		time.Sleep(100 * time.Millisecond)
	}
	env.front.add(r.addr)
	t.Cleanup(func() { env.front.remove(r.addr) })
	return r
}

// kill stops the replica at once, as a crash would (SIGKILL).
func (r *replica) kill() {
	env.front.remove(r.addr)
	if r.cmd.Process != nil && r.cmd.ProcessState == nil {
		_ = r.cmd.Process.Signal(syscall.SIGKILL)
		_ = r.cmd.Wait()
	}
}

// waitReady waits until the ServiceBroker's catalog is loaded in every
// running replica (each loads it on start).
func waitBrokerReady(t *testing.T) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		var sb v1alpha1.ServiceBroker
		if err := env.client.Get(context.Background(), client.ObjectKey{Name: "acme"}, &sb); err == nil &&
			meta.IsStatusConditionTrue(sb.Status.Conditions, v1alpha1.ConditionReady) {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatal("ServiceBroker acme never became Ready")
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

func writeKubeconfig(cfg *rest.Config, path string) error {
	kc := clientcmdapi.NewConfig()
	kc.Clusters["envtest"] = &clientcmdapi.Cluster{Server: cfg.Host, CertificateAuthorityData: cfg.CAData}
	kc.AuthInfos["lockstep"] = &clientcmdapi.AuthInfo{ClientCertificateData: cfg.CertData, ClientKeyData: cfg.KeyData, Token: cfg.BearerToken}
	kc.Contexts["envtest"] = &clientcmdapi.Context{Cluster: "envtest", AuthInfo: "lockstep"}
	kc.CurrentContext = "envtest"
	return clientcmd.WriteToFile(*kc, path)
}
