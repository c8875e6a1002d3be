package e2e

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/lockstep-dev/lockstep/api/v1alpha1"
)

// TestParametersDigestNeedsTheKey: the digest of parameters from Secrets
// that an instance's status and its operation records keep cannot be
// reproduced from the parameters without the key lockstep keeps in its
// namespace: whoever may read the instance but not the Secret cannot test
// guesses of the Secret's value against it. With the key, it is the
// HMAC-SHA256 of the parameters sent.
func TestParametersDigestNeedsTheKey(t *testing.T) {
	awaitEmbeddedBroker(t)
	ns := namespace(t)
	password := "pf-digest-" + uuid.NewString()[:8]
	r := kubectl(t, fmt.Sprintf(`apiVersion: v1
kind: Secret
metadata: {name: admin, namespace: %s}
stringData:
  parameters: '{"adminPassword": %q}'
---
apiVersion: lockstep.dev/v1alpha1
kind: ServiceInstance
metadata: {name: vault, namespace: %s}
spec:
  brokerName: embedded
  serviceName: quick
  planName: small
  parameters: {size: 2, region: eu}
  parametersFrom:
  - secretKeyRef: {name: admin, key: parameters}
`, ns, password, ns), "apply", "-f", "-")
	require.Equal(t, 0, r.ExitCode, r.Output())
	var si v1alpha1.ServiceInstance
	require.Eventually(t, func() bool {
		require.NoError(t, cluster.client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "vault"}, &si))
		return si.Status.LastApplied != nil && si.Status.LastApplied.ParametersDigest != ""
	}, 20*time.Second, 200*time.Millisecond, "the instance's status keeps the digest of what was sent")
	digest := si.Status.LastApplied.ParametersDigest
	var ops v1alpha1.BrokerOperationList
	require.NoError(t, cluster.client.List(context.Background(), &ops, client.InNamespace(ns)))
	require.NotEmpty(t, ops.Items)
	for _, op := range ops.Items {
		assert.Equal(t, digest, op.Spec.ParametersDigest, "the record keeps the same digest")
	}

	// What was sent, in the canonical form digests are made of (compact,
	// keys sorted).
	sent := fmt.Sprintf(`{"adminPassword":%q,"region":"eu","size":2}`, password)
	plain := sha256.Sum256([]byte(sent))
	seen := kubectl(t, "", "get", "serviceinstance,brokeroperations", "-n", ns, "-o", "yaml")
	require.Equal(t, 0, seen.ExitCode, seen.Output())
	assert.NotContains(t, seen.Stdout, hex.EncodeToString(plain[:]), "no plain hash of the parameters, against which guesses could be tested")

	lockstepNS := lockstepConfig().Namespace
	if lockstepNS == "" {
		lockstepNS = v1alpha1.DefaultNamespace
	}
	var keys corev1.Secret
	require.NoError(t, cluster.client.Get(context.Background(), client.ObjectKey{Namespace: lockstepNS, Name: "lockstep-digest-keys"}, &keys))
	current := string(keys.Data["current"])
	require.NotEmpty(t, current)
	id, sum, ok := strings.Cut(strings.TrimPrefix(digest, "hmac-sha256:"), ":")
	require.True(t, ok && strings.HasPrefix(digest, "hmac-sha256:"), "a keyed digest: %s", digest)
	assert.Equal(t, current, id, "made under the current key")
	mac := hmac.New(sha256.New, keys.Data[current])
	mac.Write([]byte(sent))
	assert.Equal(t, hex.EncodeToString(mac.Sum(nil)), sum, "with the key, the digest is reproduced")
	assert.True(t, strings.HasPrefix(si.Status.LastApplied.CreateOnlyDigest, "hmac-sha256:"+current+":"), "the create-only parameters' digest is keyed too")

	require.Equal(t, 0, kubectl(t, "", "delete", "serviceinstance", "vault", "-n", ns, "--timeout=30s").ExitCode)
}
