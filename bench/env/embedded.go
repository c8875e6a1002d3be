package env

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/lockstep-dev/lockstep/api/v1alpha1"
	"github.com/lockstep-dev/lockstep/test/framework"
)

// EmbeddedBrokerName is the ServiceBroker lockstep registers for its
// embedded broker when started with EmbeddedBroker's settings.
const EmbeddedBrokerName = "embedded"

// EmbeddedBroker returns the settings that make lockstep run its embedded
// broker on a free port on loopback, serving the bundles of the local
// registry registryDir, with a fresh bbolt store under the working
// directory named by state; pass them to StartLockstep. It registers the
// broker as ServiceBroker EmbeddedBrokerName at that port first: lockstep
// would register it itself, but the deployed ClusterRole (which the
// benchmarks run lockstep under) does not let it create ServiceBrokers, as
// a deployment does not run the embedded broker.
func (e *Env) EmbeddedBroker(ctx context.Context, registryDir, state string) ([]string, error) {
	dir := filepath.Join(e.Dir, state)
	if err := os.RemoveAll(dir); err != nil {
		return nil, fmt.Errorf("clearing the embedded broker's directory: %w", err)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("creating the embedded broker's directory: %w", err)
	}
	port, err := framework.FreePort()
	if err != nil {
		return nil, err
	}
	addr := "127.0.0.1:" + strconv.Itoa(port)
	sb := &v1alpha1.ServiceBroker{ObjectMeta: metav1.ObjectMeta{Name: EmbeddedBrokerName}}
	if _, err := controllerutil.CreateOrPatch(ctx, e.Client, sb, func() error {
		sb.Spec.URL = "http://" + addr
		return nil
	}); err != nil {
		return nil, fmt.Errorf("registering the embedded broker as ServiceBroker %q: %w", EmbeddedBrokerName, err)
	}
	return []string{
		"LOCKSTEP_EMBEDDED_BROKER=true",
		"LOCKSTEP_EMBEDDED_BROKER_ADDR=" + addr,
		"LOCKSTEP_EMBEDDED_BROKER_NAME=" + EmbeddedBrokerName,
		"LOCKSTEP_EMBEDDED_BROKER_REGISTRIES=bench=local:" + registryDir,
		"LOCKSTEP_EMBEDDED_BROKER_BBOLT_PATH=" + filepath.Join(dir, "broker.db"),
		"LOCKSTEP_EMBEDDED_BROKER_WORK_DIR=" + filepath.Join(dir, "work"),
	}, nil
}

// BrokerReady waits until ServiceBroker name exists and is Ready: lockstep
// loaded the catalog of the broker it points at.
func (e *Env) BrokerReady(ctx context.Context, name string, timeout time.Duration) error {
	var sb v1alpha1.ServiceBroker
	err := Poll(ctx, timeout, 50*time.Millisecond, func(ctx context.Context) (bool, error) {
		if err := e.Client.Get(ctx, client.ObjectKey{Name: name}, &sb); err != nil {
			return false, client.IgnoreNotFound(err)
		}
		return meta.IsStatusConditionTrue(sb.Status.Conditions, v1alpha1.ConditionReady), nil
	})
	if err != nil {
		return fmt.Errorf("ServiceBroker %q did not become Ready (conditions %+v): %w", name, sb.Status.Conditions, err)
	}
	return nil
}
