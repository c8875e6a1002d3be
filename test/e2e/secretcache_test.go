package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/lockstep-dev/lockstep/internal/app"
	"github.com/lockstep-dev/lockstep/internal/credentials"
)

// TestSecretCacheHoldsNoSecretsData: anyone who may create Secrets may
// label one lockstep.dev/binding-uid, and so put it into lockstep's cache.
// Such Secrets, large ones, enter a cache built with lockstep's own
// options (app.CacheOptions) and watched as the binding controller watches
// them (metadata): the cache holds about a kilobyte of each, without its
// data or its annotations, and the heap grows by far less than they hold.
func TestSecretCacheHoldsNoSecretsData(t *testing.T) {
	ns := namespace(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	opts := app.CacheOptions()
	opts.Scheme = app.Scheme()
	c, err := cache.New(cluster.config, opts)
	require.NoError(t, err)
	_, err = c.GetInformer(ctx, credentials.NewMetadata())
	require.NoError(t, err)
	cacheCtx, stop := context.WithCancel(ctx)
	defer stop()
	go func() { _ = c.Start(cacheCtx) }()
	require.True(t, c.WaitForCacheSync(ctx))

	const secrets = 16
	data := strings.Repeat("d", 900<<10)
	annotation := strings.Repeat("a", 200<<10)
	before := liveHeap()
	for i := range secrets {
		s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("big-%d", i),
			Labels:      map[string]string{credentials.LabelBindingUID: "not-locksteps"},
			Annotations: map[string]string{"note": annotation}},
			StringData: map[string]string{"blob": data}}
		require.NoError(t, cluster.client.Create(ctx, s))
	}
	var cached *metav1.PartialObjectMetadataList
	err = wait.PollUntilContextCancel(ctx, 200*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		cached = &metav1.PartialObjectMetadataList{}
		cached.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("SecretList"))
		if err := c.List(ctx, cached, client.InNamespace(ns)); err != nil {
			return false, err
		}
		return len(cached.Items) == secrets, nil
	})
	require.NoError(t, err, "the cache holds the labelled Secrets")
	grew := liveHeap() - before

	for _, o := range cached.Items {
		raw, err := json.Marshal(o)
		require.NoError(t, err)
		assert.Less(t, len(raw), 1024, "Secret %s is trimmed in the cache", o.Name)
		_, kept := o.Annotations["note"]
		assert.False(t, kept, "Secret %s keeps no annotation but lockstep's in the cache", o.Name)
	}
	held := secrets * (len(data) + len(annotation))
	t.Logf("the Secrets hold %d bytes; the live heap grew by %d bytes while the cache took them in", held, grew)
	assert.Less(t, grew, int64(held/4), "the cache holds a small part of what the Secrets hold")
}

// liveHeap is the heap in use after a collection.
func liveHeap() int64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return int64(m.HeapAlloc)
}
