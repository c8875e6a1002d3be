package e2e

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/lockstep-dev/lockstep/api/v1alpha1"
)

// TestBrokerCredentialsLockstepMayNotUse: kubectl refuses a ServiceBroker
// whose credentials lockstep would read from a user's namespace, send over
// plain http, or read for a writer who may not read them; each refusal
// says why and what to do, and no ServiceBroker is created.
func TestBrokerCredentialsLockstepMayNotUse(t *testing.T) {
	ns := namespace(t)
	ctx := context.Background()
	broker := func(name, url, secretNS string) string {
		return fmt.Sprintf(`apiVersion: lockstep.dev/v1alpha1
kind: ServiceBroker
metadata: {name: %s}
spec:
  url: %s
  authSecretRef: {namespace: %s, name: creds, type: basic}
`, name, url, secretNS)
	}
	require.NoError(t, cluster.client.Create(ctx, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "broker-writer-" + ns},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{v1alpha1.GroupVersion.Group}, Resources: []string{"servicebrokers"}, Verbs: []string{"get", "create"}}}}))
	require.NoError(t, cluster.client.Create(ctx, &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "broker-writer-" + ns},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "broker-writer-" + ns},
		Subjects: []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: "broker-writer"}}}))
	t.Cleanup(func() {
		_ = cluster.client.Delete(ctx, &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "broker-writer-" + ns}})
		_ = cluster.client.Delete(ctx, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "broker-writer-" + ns}})
	})

	tests := []struct {
		name     string
		as       string // "" for alice, a cluster administrator
		manifest string
		want     string
	}{
		{name: "credentials in a user's namespace", manifest: broker("creds-elsewhere", "https://broker.example", ns),
			want: fmt.Sprintf(`The ServiceBroker "creds-elsewhere" is invalid: spec.authSecretRef.namespace: Invalid value: %q: lockstep reads a broker's credentials only from its own namespace "lockstep-system", out of the users' namespaces; put the Secret there`, ns)},
		{name: "credentials over plain http", manifest: broker("creds-plain", "http://broker.example:8080", "lockstep-system"),
			want: `The ServiceBroker "creds-plain" is invalid: spec: Invalid value: lockstep sends a broker's credentials (spec.authSecretRef) only over https, or to a loopback address`},
		{name: "credentials the writer may not read", as: "broker-writer", manifest: broker("creds-unreadable", "https://broker.example", "lockstep-system"),
			want: `admission webhook "servicebrokers.validate.lockstep.dev" denied the request: ServiceBroker "creds-unreadable": user "broker-writer" may not get Secret "creds" in namespace "lockstep-system", and lockstep sends a broker's credentials only for a writer who may read them`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			args := []string{"apply", "-f", "-"}
			if tt.as != "" {
				args = append([]string{"--as", tt.as}, args...)
			}
			out := kubectl(t, tt.manifest, args...)
			assert.NotZero(t, out.ExitCode)
			assert.Contains(t, out.Output(), tt.want)
			var sbs v1alpha1.ServiceBrokerList
			require.NoError(t, cluster.client.List(ctx, &sbs))
			for _, sb := range sbs.Items {
				assert.NotContains(t, sb.Name, "creds-", "nothing was created")
			}
		})
	}

	// Loopback is exempt: credentials over http never leave the machine.
	out := kubectl(t, broker("creds-loopback", "http://127.0.0.1:1", "lockstep-system"), "apply", "-f", "-")
	assert.Zero(t, out.ExitCode, out.Output())
	err := cluster.client.Delete(ctx, &v1alpha1.ServiceBroker{ObjectMeta: metav1.ObjectMeta{Name: "creds-loopback"}})
	require.True(t, err == nil || apierrors.IsNotFound(err), "%v", err)
}
