package parametersfrom

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
)

func keysSecret(data map[string]string) *corev1.Secret {
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "lockstep-system", Name: KeysSecret}, Data: map[string][]byte{}}
	for k, v := range data {
		s.Data[k] = []byte(v)
	}
	return s
}

var (
	key1 = strings.Repeat("a1", 32)
	key2 = strings.Repeat("b2", 32)
)

func TestEnsureKeys(t *testing.T) {
	secretGroup := schema.GroupResource{Resource: "secrets"}
	tests := []struct {
		name        string
		existing    *corev1.Secret
		createFails error // the Create answers this (after creating, for AlreadyExists)
		wantCurrent string
		wantCreated bool
		wantErr     string
	}{
		{name: "missing: created with one random key", wantCurrent: "1", wantCreated: true},
		{name: "existing: read", existing: keysSecret(map[string]string{"current": "2", "1": key1, "2": key2}), wantCurrent: "2"},
		{name: "another replica created it meanwhile", createFails: apierrors.NewAlreadyExists(secretGroup, KeysSecret), wantCurrent: "1", wantCreated: true},
		{name: "not allowed to create it", createFails: apierrors.NewForbidden(secretGroup, KeysSecret, errors.New("no")),
			wantErr: "create it yourself: kubectl create secret generic lockstep-digest-keys -n lockstep-system"},
		{name: "existing but unusable", existing: keysSecret(map[string]string{"current": "3", "1": key1}),
			wantErr: `Secret lockstep-system/lockstep-digest-keys does not hold the keys of parameters' digests as lockstep reads them (the current key "3" is not among the keys)`},
		{name: "existing with a short key", existing: keysSecret(map[string]string{"current": "1", "1": "s3cr3t"}),
			wantErr: `key "1" has 6 bytes`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := fake.NewClientBuilder()
			if tt.existing != nil {
				b = b.WithObjects(tt.existing)
			}
			if tt.createFails != nil {
				b = b.WithInterceptorFuncs(interceptor.Funcs{Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
					if apierrors.IsAlreadyExists(tt.createFails) {
						require.NoError(t, c.Create(ctx, obj, opts...))
					}
					return tt.createFails
				}})
			}
			c := b.Build()
			k, err := EnsureKeys(context.Background(), c, "lockstep-system", KeysSecret)
			if tt.wantErr != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tt.wantErr)
				assert.NotContains(t, err.Error(), "s3cr3t", "never a key")
				assert.NotContains(t, err.Error(), key1, "never a key")
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.wantCurrent, k.Current())
			var s corev1.Secret
			require.NoError(t, c.Get(context.Background(), client.ObjectKey{Namespace: "lockstep-system", Name: KeysSecret}, &s))
			if tt.wantCreated {
				assert.Len(t, s.Data["1"], 2*minKeyBytes, "a random key of 32 bytes, hex encoded")
				assert.Equal(t, "1", string(s.Data["current"]))
				assert.Equal(t, s.Data["1"], k.byID["1"], "the keys are the Secret's")
			}
		})
	}
}

// Two replicas that start at once use the same key.
func TestEnsureKeysTwice(t *testing.T) {
	c := fake.NewClientBuilder().Build()
	a, err := EnsureKeys(context.Background(), c, "lockstep-system", KeysSecret)
	require.NoError(t, err)
	b, err := EnsureKeys(context.Background(), c, "lockstep-system", KeysSecret)
	require.NoError(t, err)
	assert.Equal(t, a, b)
}

// A rotation in the Secret reaches every replica's keys; a Secret made
// unusable meanwhile leaves them as they were.
func TestKeysWatch(t *testing.T) {
	s := keysSecret(map[string]string{"current": "1", "1": key1})
	k, err := KeysFromSecret(s)
	require.NoError(t, err)
	prev := UseKeys(k)
	t.Cleanup(func() { UseKeys(prev) })

	var reads atomic.Int64 // the watch's reads done
	c := fake.NewClientBuilder().WithObjects(s).WithInterceptorFuncs(interceptor.Funcs{
		Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			defer reads.Add(1)
			return c.Get(ctx, key, obj, opts...)
		}}).Build()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() {
		done <- (&KeysWatch{Reader: c, Namespace: "lockstep-system", Name: KeysSecret, Every: time.Millisecond}).Start(ctx)
	}()
	t.Cleanup(func() {
		cancel()
		require.NoError(t, <-done)
	})
	current := func() string { return keys.Load().Current() }

	s.Data = map[string][]byte{"current": []byte("2"), "1": []byte(key1), "2": []byte(key2)}
	require.NoError(t, c.Update(ctx, s))
	require.Eventually(t, func() bool { return current() == "2" }, 10*time.Second, time.Millisecond, "the rotation is read")
	assert.Equal(t, []byte(key1), keys.Load().byID["1"], "the older key stays for the digests made under it")

	s.Data = map[string][]byte{"current": []byte("3")}
	require.NoError(t, c.Update(ctx, s))
	// Of the reads done after the update, the first may have begun
	// before it; the second began after and read the unusable Secret;
	// the third begins once the watch is done with the second.
	after := reads.Load()
	require.Eventually(t, func() bool { return reads.Load() >= after+3 }, 10*time.Second, time.Millisecond, "the watch reads the Secret")
	assert.Equal(t, "2", current(), "an unusable Secret leaves the keys as they were")
}
