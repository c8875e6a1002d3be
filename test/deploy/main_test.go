package deploy

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	"sigs.k8s.io/yaml"

	"github.com/lockstep-dev/lockstep/internal/app"
	"github.com/lockstep-dev/lockstep/internal/controllermanager"
	"github.com/lockstep-dev/lockstep/internal/osb/fakebroker"
)

// variants are the kustomize variants under deploy/ a user can apply.
var variants = []string{"base", "cert-manager"}

// env is what every test of the package shares.
var env struct {
	root       string
	kubectl    string
	kubeconfig string // cluster admin, for kubectl
	testEnv    *envtest.Environment
	admin      client.Client
	rendered   map[string][]*unstructured.Unstructured // by variant
	// lockstep runs as its service account, with the deployed RBAC.
	serviceAccount string // system:serviceaccount:<ns>:<name>
	logs           *syncWriter
	broker         *fakebroker.Broker
}

func TestMain(m *testing.M) {
	os.Exit(runMain(m))
}

func runMain(m *testing.M) int {
	fail := func(format string, args ...any) int {
		fmt.Fprintf(os.Stderr, "test/deploy: "+format+"\n", args...)
		return 1
	}
	var err error
	if env.root, err = filepath.Abs("../.."); err != nil {
		return fail("%v", err)
	}
	assets, err := testBinaries(env.root)
	if err != nil {
		return fail("%v", err)
	}
	env.kubectl = filepath.Join(assets, "kubectl")
	env.rendered = map[string][]*unstructured.Unstructured{}
	for _, v := range variants {
		if env.rendered[v], err = render(v); err != nil {
			return fail("%v", err)
		}
	}

	env.testEnv = &envtest.Environment{
		BinaryAssetsDirectory: assets,
		CRDDirectoryPaths:     []string{filepath.Join(env.root, "deploy", "crds"), filepath.Join("testdata", "cert-manager-crds.yaml")},
		ErrorIfCRDPathMissing: true,
		WebhookInstallOptions: envtest.WebhookInstallOptions{
			Paths:            []string{filepath.Join(env.root, "deploy", "webhook", "manifests.yaml")},
			LocalServingHost: "127.0.0.1",
		},
	}
	adminConfig, err := env.testEnv.Start()
	if err != nil {
		return fail("starting kube-apiserver and etcd: %v", err)
	}
	defer func() { _ = env.testEnv.Stop() }()
	if env.admin, err = client.New(adminConfig, client.Options{Scheme: app.Scheme()}); err != nil {
		return fail("client: %v", err)
	}
	dir, err := os.MkdirTemp("", "lockstep-deploy-")
	if err != nil {
		return fail("%v", err)
	}
	defer func() { _ = os.RemoveAll(dir) }()
	env.kubeconfig = filepath.Join(dir, "kubeconfig")
	if err := os.WriteFile(env.kubeconfig, env.testEnv.KubeConfig, 0o600); err != nil {
		return fail("%v", err)
	}
	// The namespace and garbage-collector controllers, as in a cluster.
	kcmLog := filepath.Join(os.TempDir(), "lockstep-deploy-kube-controller-manager.log")
	cm, err := controllermanager.Start(env.testEnv, controllermanager.Options{Assets: assets, Dir: filepath.Join(dir, "kcm"), LogFile: kcmLog})
	if err != nil {
		return fail("%v (its log: %s)", err, kcmLog)
	}
	defer func() { _ = cm.Stop() }()

	// What an operator installs before lockstep starts: its namespace (for
	// real, so that its Pod Security labels apply to the dry-runs) and its
	// RBAC, both exactly as deploy/base renders them.
	if err := installNamespaceAndRBAC(context.Background()); err != nil {
		return fail("%v", err)
	}
	env.broker, err = fakebroker.Start()
	if err != nil {
		return fail("starting the test broker: %v", err)
	}
	defer env.broker.Close()

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done, err := startLockstep(ctx, impersonating(adminConfig, env.serviceAccount))
	if err != nil {
		return fail("%v", err)
	}
	defer func() { cancel(); <-done }()
	return m.Run()
}

// render runs `kubectl kustomize deploy/<variant>` and decodes the result.
func render(variant string) ([]*unstructured.Unstructured, error) {
	out, _, err := run(env.kubectl, "", "kustomize", filepath.Join(env.root, "deploy", variant))
	if err != nil {
		return nil, fmt.Errorf("kubectl kustomize deploy/%s: %w", variant, err)
	}
	return decode(out)
}

// decode reads a stream of YAML documents (numbers as int64, as the API
// machinery reads them).
func decode(manifests string) ([]*unstructured.Unstructured, error) {
	r := utilyaml.NewYAMLReader(bufio.NewReader(strings.NewReader(manifests)))
	var objs []*unstructured.Unstructured
	for {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			return objs, nil
		}
		if err != nil {
			return nil, fmt.Errorf("reading rendered manifests: %w", err)
		}
		raw, err := yaml.YAMLToJSON(doc)
		if err != nil {
			return nil, fmt.Errorf("decoding rendered manifests: %w", err)
		}
		if len(bytes.TrimSpace(raw)) == 0 || string(bytes.TrimSpace(raw)) == "null" {
			continue
		}
		u := &unstructured.Unstructured{}
		if err := u.UnmarshalJSON(raw); err != nil {
			return nil, fmt.Errorf("decoding rendered manifests: %w", err)
		}
		objs = append(objs, u)
	}
}

// installNamespaceAndRBAC creates deploy/base's Namespace, ServiceAccount
// and RBAC objects, and finds the service account the Deployment runs as.
func installNamespaceAndRBAC(ctx context.Context) error {
	var deployment *unstructured.Unstructured
	for _, u := range env.rendered["base"] {
		switch u.GetKind() {
		case "Namespace", "ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding":
			if err := env.admin.Create(ctx, u.DeepCopy()); err != nil {
				return fmt.Errorf("creating %s %s from deploy/base: %w", u.GetKind(), u.GetName(), err)
			}
		case "Deployment":
			deployment = u
		}
	}
	if deployment == nil {
		return errors.New("deploy/base renders no Deployment")
	}
	sa, _, _ := unstructured.NestedString(deployment.Object, "spec", "template", "spec", "serviceAccountName")
	if sa == "" {
		return errors.New("the Deployment names no serviceAccountName")
	}
	env.serviceAccount = "system:serviceaccount:" + deployment.GetNamespace() + ":" + sa
	return nil
}

// impersonating is cfg acting as the service account, with the groups the
// API server gives a service account's token.
func impersonating(cfg *rest.Config, serviceAccount string) *rest.Config {
	c := rest.CopyConfig(cfg)
	parts := strings.Split(serviceAccount, ":")
	c.Impersonate = rest.ImpersonationConfig{
		UserName: serviceAccount,
		Groups:   []string{"system:serviceaccounts", "system:serviceaccounts:" + parts[2], "system:authenticated"},
	}
	return c
}

// startLockstep runs lockstep's manager in-process, as restConfig, on the
// port and certificates envtest prepared for the webhook configurations,
// and waits until it serves TLS. Intervals are short; the embedded broker
// is off (the deployment does not run it); at most two BrokerOperations are
// kept per object, so that pruning (a delete) happens.
func startLockstep(ctx context.Context, restConfig *rest.Config) (<-chan struct{}, error) {
	env.logs = &syncWriter{}
	logger := zap.New(zap.WriteTo(env.logs), zap.UseDevMode(true))
	ctrl.SetLogger(logger)
	klog.SetLogger(logger.WithName("client-go"))
	opts := env.testEnv.WebhookInstallOptions
	cfg := app.Config{
		WebhookHost:            opts.LocalServingHost,
		WebhookPort:            opts.LocalServingPort,
		CertDir:                opts.LocalServingCertDir,
		Namespace:              "lockstep-system",
		MetricsAddr:            "0",
		HealthAddr:             "0",
		AdmissionBudget:        5 * time.Second,
		BrokerTimeout:          3 * time.Second,
		PollInterval:           50 * time.Millisecond,
		PollMaxInterval:        200 * time.Millisecond,
		LockDuration:           time.Minute,
		LockWait:               3 * time.Second,
		CommitGrace:            2 * time.Second,
		KeepOperations:         2,
		CatalogRefreshInterval: time.Second,
		LogLevel:               "debug",
		LogFormat:              "console",
	}
	done := make(chan struct{})
	errc := make(chan error, 1)
	go func() {
		defer close(done)
		if err := app.Run(ctx, cfg, restConfig); err != nil {
			errc <- err
		}
	}()
	addr := net.JoinHostPort(opts.LocalServingHost, strconv.Itoa(opts.LocalServingPort))
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case err := <-errc:
			return done, fmt.Errorf("lockstep stopped: %w\n%s", err, env.logs)
		default:
		}
		conn, err := tls.DialWithDialer(&net.Dialer{Timeout: time.Second}, "tcp", addr, &tls.Config{InsecureSkipVerify: true}) //nolint:gosec // readiness probe only
		if err == nil {
			_ = conn.Close()
			return done, nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	return done, fmt.Errorf("lockstep did not serve on %s within 30s\n%s", addr, env.logs)
}

// testBinaries returns the directory with kube-apiserver, etcd and kubectl:
// KUBEBUILDER_ASSETS when set (make test sets it), else what
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

// run runs a program with stdin and returns its stdout and stderr; a
// failure also carries its stderr.
func run(program, stdin string, args ...string) (string, string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, program, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if stdin != "" {
		cmd.Stdin = strings.NewReader(stdin)
	}
	if err := cmd.Run(); err != nil {
		return stdout.String(), stderr.String(), fmt.Errorf("%s %s: %w\n%s", filepath.Base(program), strings.Join(args, " "), err, stderr.String())
	}
	return stdout.String(), stderr.String(), nil
}

// syncWriter keeps what lockstep logs, safe for concurrent use.
type syncWriter struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (s *syncWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.buf.Write(p)
}

func (s *syncWriter) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.buf.String()
}

// secretOf reads a Secret as the cluster admin.
func secretOf(ctx context.Context, ns, name string) (*corev1.Secret, error) {
	var s corev1.Secret
	err := env.admin.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &s)
	return &s, err
}
