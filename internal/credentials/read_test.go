package credentials

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// countingReader counts the Gets it passes on.
type countingReader struct {
	client.Reader
	gets int
}

func (r *countingReader) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	r.gets++
	return r.Reader.Get(ctx, key, obj, opts...)
}

// TestCacheFirstReadsTheAPIServerOnlyForWhatTheCacheLacks: the Secrets
// of a binding's reconcile (Find, for Adopt and Stored, then Delete) come
// from the cache when lockstep wrote them; one missing from the cache is
// read directly, once for the status and once for the delete,
// so that a user's unlabelled Secret of the name is never taken for gone
// nor for lockstep's.
func TestCacheFirstReadsTheAPIServerOnlyForWhatTheCacheLacks(t *testing.T) {
	b := binding("creds", "1")
	ours := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "creds",
		Labels: map[string]string{LabelBindingUID: string(b.UID)}}}
	users := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "creds"}}
	tests := []struct {
		name          string
		cached        []client.Object
		stored        []client.Object
		wantStored    bool
		wantDirect    int
		wantRemaining bool
	}{
		{name: "lockstep's Secret, in the cache", cached: []client.Object{ours}, stored: []client.Object{ours},
			wantStored: true, wantDirect: 0},
		{name: "a user's Secret of the name, never cached", stored: []client.Object{users},
			wantStored: false, wantDirect: 2, wantRemaining: true},
		{name: "lockstep's Secret, not yet in the cache", stored: []client.Object{ours},
			wantStored: true, wantDirect: 2},
		{name: "no Secret", wantStored: false, wantDirect: 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			c := newClient(t, tt.stored...)
			direct := &countingReader{Reader: c}
			r := CacheFirst{Cache: newClient(t, tt.cached...), Direct: direct}
			secret := find(t, r, b)
			require.NoError(t, Adopt(ctx, c, b, secret))
			assert.Equal(t, tt.wantStored, Stored(secret, b))
			require.NoError(t, Delete(ctx, r, c, b))
			assert.Equal(t, tt.wantDirect, direct.gets, "reads of the API server")
			var s corev1.Secret
			err := c.Get(ctx, client.ObjectKey{Namespace: "team", Name: "creds"}, &s)
			assert.Equal(t, tt.wantRemaining, err == nil, "only lockstep's Secret is deleted")
		})
	}
}
