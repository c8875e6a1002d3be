package e2e

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/lockstep-dev/lockstep/api/v1alpha1"
	"github.com/lockstep-dev/lockstep/internal/app"
	"github.com/lockstep-dev/lockstep/internal/controllermanager"
	"github.com/lockstep-dev/lockstep/internal/osb/fakebroker"
)

// cluster is the environment every e2e test shares.
var cluster struct {
	env        *envtest.Environment
	config     *rest.Config
	client     client.Client
	kubeconfig string // for kubectl, as user "alice"
	kubectl    string // path of the real kubectl binary
	logs       *syncWriter
	broker     *fakebroker.Broker // registered as ServiceBroker "acme"
}

// brokerName is the ServiceBroker every test uses unless it says otherwise.
const brokerName = "acme"

// resyncInterval is how often lockstep reads every object again from its
// broker in these tests.
const resyncInterval = 2 * time.Second

func TestMain(m *testing.M) {
	os.Exit(runMain(m))
}

func runMain(m *testing.M) int {
	root, err := filepath.Abs("../..")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	assets, err := testBinaries(root)
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		return 1
	}
	cluster.kubectl = filepath.Join(assets, "kubectl")

	cluster.env = &envtest.Environment{
		BinaryAssetsDirectory: assets,
		CRDDirectoryPaths:     []string{filepath.Join(root, "deploy", "crds")},
		ErrorIfCRDPathMissing: true,
		WebhookInstallOptions: envtest.WebhookInstallOptions{
			Paths:            []string{filepath.Join(root, "deploy", "webhook", "manifests.yaml")},
			LocalServingHost: "127.0.0.1",
		},
	}
	cluster.config, err = cluster.env.Start()
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e: starting kube-apiserver and etcd:", err)
		return 1
	}
	defer func() { _ = cluster.env.Stop() }()
	stopControllerManager, err := startControllerManager(assets)
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		return 1
	}
	defer stopControllerManager()

	state, err := os.MkdirTemp("", "lockstep-e2e-broker-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer func() { _ = os.RemoveAll(state) }()
	// The embedded broker serves the sample bundles, as `make run` does.
	for k, v := range map[string]string{
		"LOCKSTEP_EMBEDDED_BROKER_REGISTRIES": "samples=local:" + filepath.Join(root, "examples", "bundles"),
		"LOCKSTEP_EMBEDDED_BROKER_BBOLT_PATH": filepath.Join(state, "broker.db"),
		"LOCKSTEP_EMBEDDED_BROKER_WORK_DIR":   filepath.Join(state, "work"),
	} {
		if err := os.Setenv(k, v); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
	}

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done, err := startWebhook(ctx)
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		return 1
	}
	defer func() { cancel(); <-done }()

	cluster.client, err = client.New(cluster.config, client.Options{Scheme: app.Scheme()})
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e: client:", err)
		return 1
	}
	user, err := cluster.env.AddUser(envtest.User{Name: "alice", Groups: []string{"system:masters"}}, nil)
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e: adding user alice:", err)
		return 1
	}
	kubeconfig, err := user.KubeConfig()
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e: kubeconfig:", err)
		return 1
	}
	dir, err := os.MkdirTemp("", "lockstep-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer func() { _ = os.RemoveAll(dir) }()
	cluster.kubeconfig = filepath.Join(dir, "kubeconfig")
	if err := os.WriteFile(cluster.kubeconfig, kubeconfig, 0o600); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	cluster.broker, err = fakebroker.Start()
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e: starting the test broker:", err)
		return 1
	}
	defer cluster.broker.Close()
	if err := registerBroker(brokerName, cluster.broker.URL()); err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		return 1
	}
	code := m.Run()
	// What lockstep logged, for a person looking into a failure.
	logFile := filepath.Join(os.TempDir(), "lockstep-e2e-webhook.log")
	if err := os.WriteFile(logFile, []byte(cluster.logs.String()), 0o600); err == nil {
		fmt.Fprintln(os.Stderr, "e2e: lockstep's log is in", logFile)
	}
	return code
}

// registerBroker creates a ServiceBroker and waits until its catalog is
// loaded.
func registerBroker(name, url string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	sb := &v1alpha1.ServiceBroker{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: v1alpha1.ServiceBrokerSpec{URL: url}}
	if err := cluster.client.Create(ctx, sb); err != nil {
		return fmt.Errorf("creating ServiceBroker %q: %w", name, err)
	}
	for ctx.Err() == nil {
		if err := cluster.client.Get(ctx, client.ObjectKeyFromObject(sb), sb); err == nil &&
			meta.IsStatusConditionTrue(sb.Status.Conditions, v1alpha1.ConditionReady) {
			return nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	return fmt.Errorf("ServiceBroker %q did not become Ready: %+v", name, sb.Status.Conditions)
}

// startControllerManager runs kube-controller-manager (namespace and
// garbage-collector controllers) against the test cluster, its log in a
// file that stays after the run, and returns how to stop it.
func startControllerManager(assets string) (stop func(), err error) {
	dir, err := os.MkdirTemp("", "lockstep-e2e-kcm-")
	if err != nil {
		return nil, err
	}
	logFile := filepath.Join(os.TempDir(), "lockstep-e2e-kube-controller-manager.log")
	cm, err := controllermanager.Start(cluster.env, controllermanager.Options{Assets: assets, Dir: dir, LogFile: logFile})
	if err != nil {
		_ = os.RemoveAll(dir)
		return nil, fmt.Errorf("%w (its log: %s)", err, logFile)
	}
	return func() {
		if err := cm.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, "e2e:", err)
		}
		_ = os.RemoveAll(dir)
		fmt.Fprintln(os.Stderr, "e2e: kube-controller-manager's log is in", logFile)
	}, nil
}

// testBinaries returns the directory with kube-apiserver,
// kube-controller-manager, etcd and kubectl:
// KUBEBUILDER_ASSETS when set (make test sets it), else whatever
// hack/testbin.sh provides (cached after the first build).
func testBinaries(root string) (string, error) {
	if dir := os.Getenv("KUBEBUILDER_ASSETS"); dir != "" {
		return dir, nil
	}
	cmd := exec.Command("bash", filepath.Join(root, "hack", "testbin.sh"))
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("hack/testbin.sh could not provide the control plane: %w", err)
	}
	return strings.TrimSpace(string(out)), nil
}

// startWebhook runs lockstep's manager in-process on the port and with the
// certificates envtest prepared for the webhook configurations, and waits
// until it serves TLS.
func startWebhook(ctx context.Context) (<-chan struct{}, error) {
	cluster.logs = &syncWriter{}
	ctrl.SetLogger(zap.New(zap.WriteTo(cluster.logs), zap.UseDevMode(true)))
	opts := cluster.env.WebhookInstallOptions
	cfg := app.Config{
		WebhookHost:    opts.LocalServingHost,
		WebhookPort:    opts.LocalServingPort,
		CertDir:        opts.LocalServingCertDir,
		Namespace:      "lockstep-system",
		LeaderElection: true,
		// One process: it takes the lead at once; short periods all the same.
		LeaderElectionLeaseDuration: 4 * time.Second,
		LeaderElectionRenewDeadline: 3 * time.Second,
		LeaderElectionRetryPeriod:   500 * time.Millisecond,
		MetricsAddr:                 "0",
		HealthAddr:                  "0",
		AdmissionBudget:             5 * time.Second,
		BrokerTimeout:               3 * time.Second,
		PollInterval:                50 * time.Millisecond,
		PollMaxInterval:             200 * time.Millisecond,
		LockDuration:                time.Minute,
		LockWait:                    3 * time.Second,
		CommitGrace:                 5 * time.Second,
		RefusalMemory:               300 * time.Millisecond,
		KeepOperations:              10,
		CatalogRefreshInterval:      time.Second,
		ResyncInterval:              resyncInterval,
		ResyncBrokerConcurrency:     4,
		ResyncBrokerQPS:             50,
		EmbeddedBroker:              true,
		EmbeddedBrokerAddr:          "127.0.0.1:0",
		EmbeddedBrokerName:          "embedded",
		LogLevel:                    "debug",
		LogFormat:                   "console",
	}
	done := make(chan struct{})
	errc := make(chan error, 1)
	go func() {
		defer close(done)
		if err := app.Run(ctx, cfg, cluster.config); err != nil {
			errc <- err
		}
	}()
	addr := net.JoinHostPort(opts.LocalServingHost, strconv.Itoa(opts.LocalServingPort))
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case err := <-errc:
			return done, fmt.Errorf("lockstep webhook stopped: %w", err)
		default:
		}
		conn, err := tls.DialWithDialer(&net.Dialer{Timeout: time.Second}, "tcp", addr, &tls.Config{InsecureSkipVerify: true}) //nolint:gosec // readiness probe only
		if err == nil {
			_ = conn.Close()
			return done, nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	return done, fmt.Errorf("lockstep webhook did not serve on %s within 30s", addr)
}
