package observability

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

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/lockstep-dev/lockstep/api/v1alpha1"
	"github.com/lockstep-dev/lockstep/internal/broker/fakebroker"
	"github.com/lockstep-dev/lockstep/test/framework"
)

// env is what every test of the package shares.
var env struct {
	cp         *framework.ControlPlane
	client     client.Client
	kubeconfig string // for kubectl, as user "alice"
	receiver   *framework.OTLPReceiver
	// metrics is lockstep's /metrics.
	metrics string
	logs    *framework.LogBuffer
}

func TestMain(m *testing.M) {
	os.Exit(runMain(m))
}

func runMain(m *testing.M) int {
	fail := func(err error) int { fmt.Fprintln(os.Stderr, "observability:", err); return 1 }
	receiver, err := framework.StartOTLPReceiver()
	if err != nil {
		return fail(err)
	}
	defer receiver.Stop()
	env.receiver = receiver
	cp, err := framework.Start(framework.Options{Name: "observability", TracingEndpoint: receiver.Endpoint()})
	if err != nil {
		return fail(err)
	}
	defer func() {
		if err := cp.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, "observability:", err)
		}
	}()
	env.cp = cp

	// lockstep's tracing, as a deployment turns it on: the standard
	// variables, spans over OTLP gRPC to the collector (here the
	// receiver), exported every 100ms rather than every 5s.
	for k, v := range map[string]string{
		"OTEL_TRACES_EXPORTER":        "otlp",
		"OTEL_EXPORTER_OTLP_PROTOCOL": "grpc",
		"OTEL_EXPORTER_OTLP_ENDPOINT": "http://" + receiver.Endpoint(),
		"OTEL_BSP_SCHEDULE_DELAY":     "100",
	} {
		if err := os.Setenv(k, v); err != nil {
			return fail(err)
		}
	}
	port, err := framework.FreePort()
	if err != nil {
		return fail(err)
	}
	cfg := framework.Config()
	cfg.MetricsAddr = "127.0.0.1:" + strconv.Itoa(port)
	// Plain HTTP on loopback: the test reads the series as Prometheus would,
	// without the token and TLS a deployment asks for (test/deploy checks those).
	cfg.MetricsSecure = false
	env.metrics = "http://" + cfg.MetricsAddr + "/metrics"
	cfg.LeaderElection = true
	cfg.LeaderElectionLeaseDuration = 4 * time.Second
	cfg.LeaderElectionRenewDeadline = 3 * time.Second
	cfg.LeaderElectionRetryPeriod = 500 * time.Millisecond
	// Drift is found within seconds, and every object keeps one record
	// (the others are pruned, and counted).
	cfg.ResyncInterval = time.Second
	cfg.ResyncBrokerConcurrency = 4
	cfg.ResyncBrokerQPS = 50
	cfg.KeepOperations = 1
	lockstep, err := cp.RunLockstep(context.Background(), cfg, nil)
	if err != nil {
		return fail(err)
	}
	defer func() { _ = lockstep.Stop() }()
	env.logs = lockstep.Logs

	if env.client, err = cp.Client(); err != nil {
		return fail(err)
	}
	if env.kubeconfig, _, err = cp.Kubeconfig("alice", "system:masters"); err != nil {
		return fail(err)
	}
	code := m.Run()
	logFile := filepath.Join(os.TempDir(), "lockstep-observability-webhook.log")
	if err := os.WriteFile(logFile, []byte(env.logs.String()), 0o600); err == nil {
		fmt.Fprintln(os.Stderr, "observability: lockstep's log is in", logFile)
	}
	return code
}

// result is what kubectl printed and how it exited.
type result struct {
	Stdout, Stderr string
	ExitCode       int
}

func (r result) Output() string { return r.Stdout + r.Stderr }

// kubectl runs the real kubectl as alice, with stdin when it is not empty.
func kubectl(t *testing.T, stdin string, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, env.cp.Kubectl, append([]string{"--kubeconfig", env.kubeconfig}, args...)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if stdin != "" {
		cmd.Stdin = strings.NewReader(stdin)
	}
	err := cmd.Run()
	r := result{Stdout: stdout.String(), Stderr: stderr.String()}
	if exit, ok := err.(*exec.ExitError); ok {
		r.ExitCode = exit.ExitCode()
	} else if err != nil {
		t.Fatalf("running kubectl %s: %v", strings.Join(args, " "), err)
	}
	t.Logf("$ kubectl %s\n%s", strings.Join(args, " "), r.Output())
	return r
}

// namespace creates a namespace of the test's own.
func namespace(t *testing.T) string {
	t.Helper()
	name := "obs-" + strings.ReplaceAll(uuid.NewString()[:8], "-", "")
	require.NoError(t, env.client.Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}))
	return name
}

// broker starts a test broker, registered as ServiceBroker name (with the
// credentials of Secret auth in lockstep's namespace when auth is set;
// with its CA bundle when it serves TLS), and waits until its catalog is
// loaded.
func broker(t *testing.T, name string, auth *corev1.Secret, opts ...fakebroker.Option) *fakebroker.Broker {
	t.Helper()
	b := fakebroker.New(t, opts...)
	sb := &v1alpha1.ServiceBroker{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: v1alpha1.ServiceBrokerSpec{URL: b.URL(), CABundle: b.CABundle()}}
	if auth != nil {
		auth.Namespace = v1alpha1.DefaultNamespace
		require.NoError(t, env.client.Create(context.Background(), auth))
		sb.Spec.AuthSecretRef = &v1alpha1.SecretReference{Namespace: auth.Namespace, Name: auth.Name}
	}
	register(t, sb, true)
	return b
}

// register creates a ServiceBroker and, when ready is set, waits until
// its catalog is loaded.
func register(t *testing.T, sb *v1alpha1.ServiceBroker, ready bool) {
	t.Helper()
	ctx := context.Background()
	require.NoError(t, env.client.Create(ctx, sb))
	if !ready {
		return
	}
	eventually(t, 30*time.Second, "ServiceBroker "+sb.Name+" Ready", func() bool {
		err := env.client.Get(ctx, client.ObjectKeyFromObject(sb), sb)
		return err == nil && meta.IsStatusConditionTrue(sb.Status.Conditions, v1alpha1.ConditionReady)
	})
}

// eventually waits until ok, checking every 200ms, for at most timeout.
func eventually(t *testing.T, timeout time.Duration, what string, ok func() bool) {
	t.Helper()
	err := wait.PollUntilContextTimeout(context.Background(), 200*time.Millisecond, timeout, true, func(context.Context) (bool, error) {
		return ok(), nil
	})
	require.NoError(t, err, "waiting for %s", what)
}

// instanceYAML is ServiceInstance name of service db at ServiceBroker
// brokerName; spec adds lines to its spec (two spaces of indent).
func instanceYAML(ns, name, brokerName, plan string, spec ...string) string {
	y := fmt.Sprintf(`apiVersion: lockstep.dev/v1alpha1
kind: ServiceInstance
metadata:
  name: %s
  namespace: %s
spec:
  brokerName: %s
  serviceName: db
  planName: %s
  externalID: %s-%s
`, name, ns, brokerName, plan, ns, name)
	for _, l := range spec {
		y += "  " + l + "\n"
	}
	return y
}

// ready waits until the instance ns/name is Ready.
func ready(t *testing.T, ns, name string) {
	t.Helper()
	eventually(t, 60*time.Second, "instance "+ns+"/"+name+" Ready", func() bool {
		var si v1alpha1.ServiceInstance
		err := env.client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, &si)
		return err == nil && meta.IsStatusConditionTrue(si.Status.Conditions, v1alpha1.ConditionReady)
	})
}
