package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/lockstep-dev/lockstep/api/v1alpha1"
	"github.com/lockstep-dev/lockstep/internal/app"
	"github.com/lockstep-dev/lockstep/internal/broker/fakebroker"
	"github.com/lockstep-dev/lockstep/test/framework"
)

// cluster is the environment every e2e test shares.
var cluster struct {
	*framework.ControlPlane
	config     *rest.Config
	client     client.Client
	kubeconfig string // for kubectl, as user "alice"
	kubectl    string // path of the real kubectl binary
	logs       *framework.LogBuffer
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
	fail := func(err error) int { fmt.Fprintln(os.Stderr, "e2e:", err); return 1 }
	cp, err := framework.Start(framework.Options{Name: "e2e", ControllerManager: true})
	if err != nil {
		return fail(err)
	}
	defer func() {
		if err := cp.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, "e2e:", err)
		}
		fmt.Fprintln(os.Stderr, "e2e: kube-controller-manager's log is in", cp.ControllerManagerLog)
	}()
	cluster.ControlPlane, cluster.config, cluster.kubectl = cp, cp.Config, cp.Kubectl

	// The embedded broker serves the sample bundles, as `make run` does.
	cfg := lockstepConfig()
	if err := cp.ServeSamples(&cfg); err != nil {
		return fail(err)
	}

	lockstep, err := cp.RunLockstep(context.Background(), cfg, nil)
	if err != nil {
		return fail(err)
	}
	defer func() { _ = lockstep.Stop() }()
	cluster.logs = lockstep.Logs

	if cluster.client, err = cp.Client(); err != nil {
		return fail(err)
	}
	if cluster.kubeconfig, _, err = cp.Kubeconfig("alice", "system:masters"); err != nil {
		return fail(err)
	}
	cluster.broker, err = fakebroker.Start()
	if err != nil {
		return fail(fmt.Errorf("starting the test broker: %w", err))
	}
	defer cluster.broker.Close()
	if err := registerBroker(brokerName, cluster.broker.URL()); err != nil {
		return fail(err)
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
	err := wait.PollUntilContextCancel(ctx, 100*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		err := cluster.client.Get(ctx, client.ObjectKeyFromObject(sb), sb)
		return err == nil && meta.IsStatusConditionTrue(sb.Status.Conditions, v1alpha1.ConditionReady), nil
	})
	if err != nil {
		return fmt.Errorf("ServiceBroker %q did not become Ready: %+v", name, sb.Status.Conditions)
	}
	return nil
}

// lockstepConfig is lockstep's configuration in the e2e tests: the test
// configuration with leader election on and resync every resyncInterval.
func lockstepConfig() app.Config {
	cfg := framework.Config()
	cfg.LeaderElection = true
	// One process: it takes the lead at once; short periods all the same.
	cfg.LeaderElectionLeaseDuration = 4 * time.Second
	cfg.LeaderElectionRenewDeadline = 3 * time.Second
	cfg.LeaderElectionRetryPeriod = 500 * time.Millisecond
	cfg.ResyncInterval = resyncInterval
	cfg.ResyncBrokerConcurrency = 4
	cfg.ResyncBrokerQPS = 50
	return cfg
}
