package replicas

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/lockstep-dev/lockstep/api/v1alpha1"
	"github.com/lockstep-dev/lockstep/internal/broker/fakebroker"
	"github.com/lockstep-dev/lockstep/test/framework"
)

var env struct {
	*framework.ControlPlane
	client     client.Client
	binary     string // the lockstep webhook binary
	kubeconfig string // lockstep's identity
	dir        string
	broker     *fakebroker.Broker
	front      *framework.Front
}

func TestMain(m *testing.M) { os.Exit(run(m)) }

func run(m *testing.M) int {
	fail := func(err error) int { fmt.Fprintln(os.Stderr, "replicas:", err); return 1 }
	// The namespace, garbage-collector and ClusterRole aggregation
	// controllers run, as in a cluster.
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

	if err := framework.Build(context.Background(), cp.Root, env.dir, nil, "./cmd/webhook"); err != nil {
		return fail(err)
	}
	env.binary = filepath.Join(env.dir, "webhook")

	if env.client, err = cp.Client(); err != nil {
		return fail(err)
	}
	if env.kubeconfig, _, err = cp.Kubeconfig("lockstep", "system:masters"); err != nil {
		return fail(err)
	}

	// The API server calls the webhook at the envtest port; a round-robin
	// front there spreads the calls over the replicas.
	if env.front, err = framework.NewFront(cp.WebhookAddr()); err != nil {
		return fail(err)
	}
	defer env.front.Close()

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

// replica is one lockstep webhook process behind the front.
type replica struct{ *framework.Replica }

// startReplica runs the webhook binary, adds it to the front and waits
// until it serves TLS.
func startReplica(t *testing.T, name string) *replica {
	t.Helper()
	r, err := env.StartReplica(context.Background(), name, framework.ReplicaOptions{
		Binary: env.binary, Kubeconfig: env.kubeconfig, LogPath: filepath.Join(env.dir, name+".log"),
		Env: []string{
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
		},
	})
	if err != nil {
		t.Fatalf("replica %s: %v", name, err)
	}
	rep := &replica{r}
	t.Cleanup(rep.kill)
	env.front.Add(r.Addr)
	return rep
}

// kill stops the replica at once, as a crash would (SIGKILL).
func (r *replica) kill() {
	env.front.Remove(r.Addr)
	r.Kill()
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
