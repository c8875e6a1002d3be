package deploy

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/lockstep-dev/lockstep/internal/app"
	"github.com/lockstep-dev/lockstep/internal/broker/fakebroker"
	"github.com/lockstep-dev/lockstep/test/framework"
)

// variants are the kustomize variants under deploy/ a user can apply.
var variants = []string{"base", "cert-manager", "with-embedded-broker"}

// env is what every test of the package shares.
var env struct {
	kubectl    string
	kubeconfig string // cluster admin, for kubectl
	admin      client.Client
	rendered   map[string][]*unstructured.Unstructured // by variant
	// lockstep runs as its service account, with the deployed RBAC and
	// admission policies; asLockstep acts as it.
	serviceAccount string // system:serviceaccount:<ns>:<name>
	asLockstep     client.Client
	logs           *framework.LogBuffer
	broker         *fakebroker.Broker
	// config reaches the API server as the cluster admin; lockstep serves
	// its webhooks at webhookAddr and its metrics at metricsAddr, with a
	// certificate signed by ca.
	config                   *rest.Config
	webhookAddr, metricsAddr string
	ca                       []byte
}

func TestMain(m *testing.M) {
	os.Exit(runMain(m))
}

func runMain(m *testing.M) int {
	fail := func(format string, args ...any) int {
		fmt.Fprintf(os.Stderr, "test/deploy: "+format+"\n", args...)
		return 1
	}
	// The namespace, garbage-collector and ClusterRole aggregation
	// controllers run, as in a cluster.
	cp, err := framework.Start(framework.Options{
		Name:              "deploy",
		ExtraCRDPaths:     []string{filepath.Join("testdata", "cert-manager-crds.yaml")},
		ControllerManager: true,
	})
	if err != nil {
		return fail("%v", err)
	}
	defer func() { _ = cp.Stop() }()
	env.kubectl = cp.Kubectl
	env.rendered = map[string][]*unstructured.Unstructured{}
	for _, v := range variants {
		if env.rendered[v], err = cp.Render(v); err != nil {
			return fail("%v", err)
		}
	}
	if env.admin, err = cp.Client(); err != nil {
		return fail("%v", err)
	}
	env.kubeconfig = filepath.Join(cp.Dir, "kubeconfig")
	if err := os.WriteFile(env.kubeconfig, cp.Env.KubeConfig, 0o600); err != nil {
		return fail("%v", err)
	}

	// What an operator installs before lockstep starts: its namespace (for
	// real, so that its Pod Security labels apply to the dry-runs), its
	// RBAC and admission policies, exactly as deploy/base renders them.
	if env.serviceAccount, err = framework.InstallRBAC(context.Background(), env.admin, env.rendered["base"]); err != nil {
		return fail("%v", err)
	}
	if env.asLockstep, err = client.New(framework.AsServiceAccount(cp.Config, env.serviceAccount), client.Options{Scheme: app.Scheme()}); err != nil {
		return fail("%v", err)
	}
	// lockstep's work runs under its admission policies, in force from the
	// start.
	if err := waitRightsPolicies(context.Background(), env.asLockstep); err != nil {
		return fail("%v", err)
	}
	env.broker, err = fakebroker.Start()
	if err != nil {
		return fail("starting the test broker: %v", err)
	}
	defer env.broker.Close()

	cfg := lockstepConfig()
	metricsPort, err := framework.FreePortExcept(map[int]bool{cp.Env.WebhookInstallOptions.LocalServingPort: true})
	if err != nil {
		return fail("%v", err)
	}
	cfg.MetricsAddr = "127.0.0.1:" + strconv.Itoa(metricsPort)
	env.config, env.webhookAddr, env.metricsAddr = cp.Config, cp.WebhookAddr(), cfg.MetricsAddr
	env.ca = cp.Env.WebhookInstallOptions.LocalServingCAData
	lockstep, err := cp.RunLockstep(context.Background(), cfg, framework.AsServiceAccount(cp.Config, env.serviceAccount))
	if err != nil {
		return fail("%v", err)
	}
	defer func() { _ = lockstep.Stop() }()
	env.logs = lockstep.Logs
	return m.Run()
}

// lockstepConfig is lockstep's configuration here: the test configuration
// with the embedded broker off (the deployment does not run it), metrics
// served as the deployment serves them (on a port TestMain picks), at most
// two BrokerOperations kept per object, so that pruning (a delete)
// happens, no refusal repeated without asking the broker, and a resync
// every two seconds, so that drift is found while the test runs.
func lockstepConfig() app.Config {
	cfg := framework.Config()
	cfg.CommitGrace = 2 * time.Second
	cfg.ResyncInterval = 2 * time.Second
	cfg.KeepOperations = 2
	cfg.RefusalMemory = 0
	return cfg
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

// secretOf reads a Secret as the cluster admin.
func secretOf(ctx context.Context, ns, name string) (*corev1.Secret, error) {
	var s corev1.Secret
	err := env.admin.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &s)
	return &s, err
}
