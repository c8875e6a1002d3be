package e2e

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/lockstep-dev/lockstep/api/v1alpha1"
)

// brokerGuardWebhook is the webhook that refuses to delete a ServiceBroker
// lockstep manages objects at (deploy/webhook/manifests.yaml).
const brokerGuardWebhook = "servicebrokers.validate.lockstep.dev"

// deleteServiceBrokerPastTheGuard deletes a ServiceBroker as if lockstep's
// guard had not been installed yet: it takes the guard out of the
// validating configuration, deletes the ServiceBroker once the API server
// no longer asks the guard, and puts the guard back.
func deleteServiceBrokerPastTheGuard(t *testing.T, name string) {
	t.Helper()
	ctx := context.Background()
	key := client.ObjectKey{Name: "lockstep-validating"}
	var config admissionregistrationv1.ValidatingWebhookConfiguration
	require.NoError(t, cluster.client.Get(ctx, key, &config))
	var guard admissionregistrationv1.ValidatingWebhook
	kept := config.Webhooks[:0]
	for _, w := range config.Webhooks {
		if w.Name == brokerGuardWebhook {
			guard = w
			continue
		}
		kept = append(kept, w)
	}
	require.Equal(t, brokerGuardWebhook, guard.Name, "the guard is installed")
	config.Webhooks = kept
	require.NoError(t, cluster.client.Update(ctx, &config))
	defer func() {
		require.NoError(t, cluster.client.Get(ctx, key, &config))
		config.Webhooks = append(config.Webhooks, guard)
		require.NoError(t, cluster.client.Update(ctx, &config))
	}()
	sb := &v1alpha1.ServiceBroker{ObjectMeta: metav1.ObjectMeta{Name: name}}
	require.Eventually(t, func() bool {
		err := cluster.client.Delete(ctx, sb)
		return err == nil || apierrors.IsNotFound(err)
	}, 20*time.Second, 200*time.Millisecond, "the API server stops asking the guard")
	require.Eventually(t, func() bool {
		return apierrors.IsNotFound(cluster.client.Get(ctx, client.ObjectKeyFromObject(sb), sb))
	}, 20*time.Second, 100*time.Millisecond)
}
