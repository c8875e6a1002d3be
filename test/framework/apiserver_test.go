package framework

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

func TestParseParent(t *testing.T) {
	tests := []struct {
		name     string
		stat     string
		wantComm string
		wantPPID int
		wantOK   bool
	}{
		{"plain", "42 (kube-apiserver) S 7 42 42 0", "kube-apiserver", 7, true},
		{"a name with spaces and parentheses", "42 (a (b) c) R 9 1", "a (b) c", 9, true},
		{"garbage", "garbage", "", 0, false},
		{"cut short", "42 (x) S", "", 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			comm, ppid, ok := parseParent([]byte(tt.stat))
			assert.Equal(t, tt.wantOK, ok)
			if tt.wantOK {
				assert.Equal(t, tt.wantComm, comm)
				assert.Equal(t, tt.wantPPID, ppid)
			}
		})
	}
}

// TestAPIServerKilledAndRestarted: kube-apiserver killed with SIGKILL comes
// back on the same etcd, port and certificates: what was stored is there,
// and a user provisioned before still gets in.
func TestAPIServerKilledAndRestarted(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a control plane")
	}
	cp, err := Start(Options{Name: "framework-apiserver", NoWebhooks: true})
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, cp.Stop()) })
	_, userConfig, err := cp.Kubeconfig("carol", "system:masters")
	require.NoError(t, err)
	user, err := client.New(userConfig, client.Options{})
	require.NoError(t, err)
	ctx := context.Background()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "kept"}}
	require.NoError(t, user.Create(ctx, ns))

	for round := range 2 {
		i, err := cp.KillAPIServer()
		require.NoError(t, err, "round %d", round)
		assert.Error(t, user.Get(ctx, client.ObjectKeyFromObject(ns), &corev1.Namespace{}), "nothing answers while it is down")
		_, err = cp.KillAPIServer()
		assert.ErrorIs(t, err, ErrNoAPIServerToKill, "round %d: none is left to kill", round)
		require.NoError(t, cp.RestartAPIServer(ctx, i, 2*time.Minute), "round %d", round)
		assert.NoError(t, user.Get(ctx, client.ObjectKeyFromObject(ns), &corev1.Namespace{}), "round %d: the namespace is still there, and carol still gets in", round)
	}
}

// TestThreeAPIServersBehindAFront: with three kube-apiservers on one
// etcd, clients reach them through a front; while two are killed, the
// third answers, and it is never killed; each is killed in turn.
func TestThreeAPIServersBehindAFront(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a control plane")
	}
	cp, err := Start(Options{Name: "framework-apiservers", NoWebhooks: true, APIServers: 3})
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, cp.Stop()) })
	admin, err := cp.Client()
	require.NoError(t, err)
	ctx := context.Background()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "kept"}}
	require.NoError(t, admin.Create(ctx, ns))

	var killed []int
	for round := range 2 {
		first, err := cp.KillAPIServer()
		require.NoError(t, err, "round %d", round)
		second, err := cp.KillAPIServer()
		require.NoError(t, err, "round %d", round)
		_, err = cp.KillAPIServer()
		require.ErrorIs(t, err, ErrNoAPIServerToKill, "round %d: the last one ready is not killed", round)
		require.Eventually(t, func() bool {
			return admin.Get(ctx, client.ObjectKeyFromObject(ns), &corev1.Namespace{}) == nil
		}, time.Minute, 100*time.Millisecond, "round %d: the third kube-apiserver answers", round)
		require.NoError(t, cp.RestartAPIServer(ctx, first, 2*time.Minute), "round %d", round)
		require.NoError(t, cp.RestartAPIServer(ctx, second, 2*time.Minute), "round %d", round)
		killed = append(killed, first, second)
	}
	assert.Equal(t, []int{0, 1, 2, 0}, killed, "each in turn")
}
