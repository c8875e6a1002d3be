package e2e

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/lockstep-dev/lockstep/api/v1alpha1"
	"github.com/lockstep-dev/lockstep/internal/broker/fakebroker"
	"github.com/lockstep-dev/lockstep/internal/plugin"
)

// marketplace runs kubectl lockstep marketplace as alice, in namespace ns.
func marketplace(t *testing.T, ns string, args ...string) string {
	t.Helper()
	var out, errOut bytes.Buffer
	code := plugin.Run(append([]string{"--kubeconfig", cluster.kubeconfig, "-n", ns, "marketplace"}, args...),
		genericiooptions.IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut})
	require.Equal(t, 0, code, errOut.String())
	t.Logf("$ kubectl lockstep marketplace %s\n%s", strings.Join(args, " "), out.String())
	return out.String()
}

// TestPerPlanLimitsRefuseAndShowAsWritten: the administrator lets every
// namespace hold one instance of the plans not free (large) of a broker.
// A team's first large instance is provisioned; the next, and a move of
// another instance to large, are refused before the broker with the
// limit, what it counts and the count; the marketplace shows the team the
// limit and its use.
func TestPerPlanLimitsRefuseAndShowAsWritten(t *testing.T) {
	broker := "limited"
	b := marketBroker(t, broker)
	ns := tenant(t, "ben", nil)
	t.Cleanup(func() { kubectl(t, "", "delete", "serviceinstances", "--all", "-n", ns, "--timeout=30s") })
	setAccess(t, broker, []v1alpha1.AccessRule{{Name: "everyone", Services: []string{"*"}, Plans: []string{"*"},
		Limits: []v1alpha1.PlanLimit{{Name: "paid", NotFree: true, MaxInstances: 1}}}})

	provisions := func() int {
		n := 0
		for _, c := range onBehalfOf(t, b, "ben") {
			if c.Op == fakebroker.OpProvision || c.Op == fakebroker.OpUpdate {
				n++
			}
		}
		return n
	}
	limited := `plan "large" of service "db" (broker "limited") is limited in namespace "` + ns + `": limit "paid" of access rule "everyone" allows 1 instance(s) ` +
		`of its plans (plans not free among "*" of services "*"), and the namespace holds 1; delete one of them, or ask a cluster administrator to raise the limit ` +
		`(spec.access of ServiceBroker "limited"); kubectl lockstep marketplace shows the namespace's limits and use`

	t.Run("allowed within the limit", func(t *testing.T) {
		r := kubectlAs(t, "ben", instanceAt(ns, "big", broker, "large"), "apply", "-f", "-")
		require.Equal(t, 0, r.ExitCode, r.Output())
		assert.Equal(t, 1, provisions())
	})
	t.Run("refused at the limit", func(t *testing.T) {
		r := kubectlAs(t, "ben", instanceAt(ns, "big2", broker, "large"), "apply", "-f", "-")
		assert.NotEqual(t, 0, r.ExitCode)
		assert.Contains(t, r.Stderr, "Error from server (Forbidden)")
		assert.Contains(t, strings.Join(strings.Fields(r.Stderr), " "), limited+"; nothing was created and the broker was not called")
		assert.False(t, instanceExists(t, ns, "big2"))
		assert.Equal(t, 1, provisions(), "the broker is not called")
	})
	t.Run("a free plan is not counted", func(t *testing.T) {
		r := kubectlAs(t, "ben", instanceAt(ns, "mine", broker, "small"), "apply", "-f", "-")
		require.Equal(t, 0, r.ExitCode, r.Output())
		assert.Equal(t, 2, provisions())
	})
	t.Run("a plan change into the limited plan is counted", func(t *testing.T) {
		r := kubectlAs(t, "ben", "", "patch", "serviceinstance", "mine", "-n", ns, "--type=merge", "-p", `{"spec":{"planName":"large"}}`)
		assert.NotEqual(t, 0, r.ExitCode)
		assert.Contains(t, strings.Join(strings.Fields(r.Stderr), " "), limited+`; the instance keeps plan "small" and the broker was not called`)
		assert.Equal(t, "small", getInstance(t, ns, "mine").Spec.PlanName)
		assert.Equal(t, 2, provisions(), "the broker is not called")
	})
	t.Run("the marketplace shows the namespace's limits and use", func(t *testing.T) {
		var out string
		require.Eventually(t, func() bool {
			out = marketplace(t, ns, "--broker", broker)
			return strings.Contains(out, "paid")
		}, 20*time.Second, 200*time.Millisecond, "the plans list the limit")
		assert.Contains(t, out, "Per-plan limits of the brokers' access rules, and their use in namespace "+ns+":")
		assert.Regexp(t, `(?m)^BROKER\s+RULE\s+LIMIT\s+APPLIES\s+USED\s+MAX\s+COUNTS$`, out)
		assert.Regexp(t, `(?m)^limited\s+everyone\s+paid\s+yes\s+1\s+1\s+plans not free among "\*" of services "\*"$`, out)
	})
	t.Run("once one is deleted, the next is allowed", func(t *testing.T) {
		r := kubectlAs(t, "ben", "", "delete", "serviceinstance", "big", "-n", ns, "--timeout=30s")
		require.Equal(t, 0, r.ExitCode, r.Output())
		r = kubectlAs(t, "ben", "", "patch", "serviceinstance", "mine", "-n", ns, "--type=merge", "-p", `{"spec":{"planName":"large"}}`)
		require.Equal(t, 0, r.ExitCode, r.Output())
		out := marketplace(t, ns, "--broker", broker)
		assert.Regexp(t, `(?m)^limited\s+everyone\s+paid\s+yes\s+1\s+1\s`, out)
	})
}
