package replicas

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/lockstep-dev/lockstep/api/v1alpha1"
	"github.com/lockstep-dev/lockstep/internal/broker/fakebroker"
)

func TestConcurrentUpdatesThroughTwoReplicas(t *testing.T) {
	a := startReplica(t, "a")
	b := startReplica(t, "b")
	waitBrokerReady(t)
	waitLeader(t, a, b)
	ns := namespace(t)
	si := instance(ns, "small")
	require.NoError(t, env.client.Create(context.Background(), si))
	require.Eventually(t, func() bool {
		require.NoError(t, env.client.Get(context.Background(), client.ObjectKeyFromObject(si), si))
		return meta.IsStatusConditionTrue(si.Status.Conditions, v1alpha1.ConditionReady)
	}, 30*time.Second, 50*time.Millisecond, "the leader commits the provision and frees the lock")
	env.broker.SetLatency(100 * time.Millisecond) // broker calls overlap unless the lock keeps them apart
	t.Cleanup(func() { env.broker.SetLatency(0) })
	env.broker.ResetCalls()

	const clients = 10
	var (
		wg      sync.WaitGroup
		mu      sync.Mutex
		results = map[string]int{}
	)
	for i := 0; i < clients; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			patch := []byte(fmt.Sprintf(`{"spec":{"parameters":{"storageGB":%d}}}`, i+1))
			err := env.client.Patch(context.Background(), instance(ns, "small"), client.RawPatch("application/merge-patch+json", patch))
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil:
				results["ok"]++
			case strings.Contains(err.Error(), `another change of instance "db" is in flight at the broker`):
				results["locked"]++
			default:
				results[err.Error()]++
			}
		}(i)
	}
	wg.Wait()
	t.Logf("results of %d concurrent updates: %v; broker updates: %d", clients, results, env.broker.Count(fakebroker.OpUpdate))
	assert.Equal(t, clients, results["ok"]+results["locked"], "every client got success or the lock message: %v", results)
	assert.GreaterOrEqual(t, results["ok"], 1)

	updates := env.broker.Calls(fakebroker.OpUpdate)
	assert.Len(t, updates, results["ok"], "one broker update per successful change, none for refused ones")
	assert.LessOrEqual(t, env.broker.MaxInFlight(ns+"-db"), 1, "the broker saw the updates one at a time")

	// The final broker state equals the persisted spec.
	require.Eventually(t, func() bool {
		require.NoError(t, env.client.Get(context.Background(), client.ObjectKeyFromObject(si), si))
		held, _ := env.broker.Instance(ns + "-db")
		var persisted map[string]any
		if si.Spec.Parameters != nil {
			require.NoError(t, json.Unmarshal(si.Spec.Parameters.Raw, &persisted))
		}
		return fmt.Sprint(held.Parameters["storageGB"]) == fmt.Sprint(persisted["storageGB"])
	}, 20*time.Second, 100*time.Millisecond, "what the broker holds equals what the API server holds")
}
