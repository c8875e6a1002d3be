package e2e

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/lockstep-dev/lockstep/api/v1alpha1"
	"github.com/lockstep-dev/lockstep/internal/admission"
	"github.com/lockstep-dev/lockstep/internal/broker/fakebroker"
)

// webhookRequests reads how many admission requests lockstep's webhook
// server has answered, by path (controller-runtime's
// controller_runtime_webhook_requests_total; lockstep runs in this
// process).
func webhookRequests(t *testing.T) map[string]int {
	t.Helper()
	families, err := ctrlmetrics.Registry.Gather()
	require.NoError(t, err)
	out := map[string]int{}
	for _, f := range families {
		if f.GetName() != "controller_runtime_webhook_requests_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "webhook" {
					out[l.GetValue()] += int(m.GetCounter().GetValue())
				}
			}
		}
	}
	return out
}

// dropDefaulted is a JSON patch that drops the defaulted label and
// spec.externalID: the mutating webhook is sent it, and refills both.
const dropDefaulted = `[{"op":"remove","path":"/metadata/labels/lockstep.dev~1defaulted"},{"op":"remove","path":"/spec/externalID"}]`

// brokerDown makes every change at the test broker fail without an answer
// (the connection closes).
func brokerDown(b *fakebroker.Broker) {
	for _, op := range []fakebroker.Op{fakebroker.OpProvision, fakebroker.OpUpdate, fakebroker.OpDeprovision, fakebroker.OpBind, fakebroker.OpUnbind} {
		b.Always(op, fakebroker.Respond{CloseConnection: true})
	}
}

// TestAPIServerSkipsRequestsWhoseAnswerIsKnown: the webhook
// configurations' matchConditions keep lockstep out of the requests whose
// answer is known in advance, and each such request behaves as it did when
// lockstep was asked: it succeeds with the broker down, and lockstep is
// not called. The requests lockstep must judge still reach it.
//
// A request lockstep answers is counted once its answer is written, which
// may be just after kubectl has its result. So before and after each row
// two fence requests follow that lockstep answers (a dry-run update that
// drops the defaulted label and a defaulted field, for the mutating
// webhook; a dry-run spec change, for the validating one), and the counts are read once the fences are
// counted: a call before them would have been counted first.
func TestAPIServerSkipsRequestsWhoseAnswerIsKnown(t *testing.T) {
	b := freshBroker(t)
	ns := namespace(t)
	// The status guard is left out: lockstep's own status writes reach it
	// here (lockstep does not run as its service account in these tests).
	paths := []string{admission.MutateInstancePath, admission.ValidateInstancePath, admission.MutateBindingPath, admission.ValidateBindingPath}
	require.Equal(t, 0, kubectl(t, instanceWith(ns, "fence", "small", ns+"-fence", ""), "apply", "-f", "-").ExitCode)
	// fenced runs the fences and returns the counts once they are counted:
	// at least from plus the fences.
	fences := map[string]int{admission.MutateInstancePath: 1, admission.ValidateInstancePath: 1}
	fenced := func(t *testing.T, from map[string]int) map[string]int {
		r := kubectl(t, "", "patch", "serviceinstance", "fence", "-n", ns, "--dry-run=server", "--type=json", "-p", dropDefaulted)
		require.Equal(t, 0, r.ExitCode, r.Output())
		r = kubectl(t, "", "patch", "serviceinstance", "fence", "-n", ns, "--dry-run=server", "--type=merge", "-p", `{"spec":{"planName":"large"}}`)
		require.Equal(t, 0, r.ExitCode, r.Output())
		var got map[string]int
		require.Eventually(t, func() bool {
			got = webhookRequests(t)
			for _, p := range paths {
				if got[p] < from[p]+fences[p] {
					return false
				}
			}
			return true
		}, 10*time.Second, 50*time.Millisecond, "the fences are counted")
		return got
	}

	tests := []struct {
		name string
		// setup prepares the object name in namespace ns, with the broker up.
		setup func(t *testing.T, name string)
		// do runs the request, with the broker down.
		do func(t *testing.T, name string) result
		// calls are the requests lockstep answers, by path.
		calls map[string]int
		// refused is a fragment of the refusal; "" when the request succeeds.
		refused string
		// check looks at the outcome.
		check func(t *testing.T, name string)
	}{
		{
			name: "label change",
			do: func(t *testing.T, name string) result {
				return kubectl(t, "", "label", "serviceinstance", name, "-n", ns, "team=payments")
			},
			check: func(t *testing.T, name string) {
				assert.Equal(t, "payments", getInstance(t, ns, name).Labels["team"])
			},
		},
		{
			name: "reconcile policy change: the way out when the broker is down",
			do: func(t *testing.T, name string) result {
				return kubectl(t, "", "annotate", "serviceinstance", name, "-n", ns, v1alpha1.AnnotationReconcilePolicy+"="+string(v1alpha1.PolicyDetachOnDelete))
			},
			check: func(t *testing.T, name string) {
				policy, _ := v1alpha1.PolicyOf(getInstance(t, ns, name))
				assert.Equal(t, v1alpha1.PolicyDetachOnDelete, policy)
			},
		},
		{
			name: "dry-run label change",
			do: func(t *testing.T, name string) result {
				return kubectl(t, "", "label", "serviceinstance", name, "-n", ns, "team=payments", "--dry-run=server")
			},
			check: func(t *testing.T, name string) { assert.NotContains(t, getInstance(t, ns, name).Labels, "team") },
		},
		{
			name: "finalizer removal of an object being deleted",
			setup: func(t *testing.T, name string) {
				r := kubectl(t, "", "patch", "serviceinstance", name, "-n", ns, "--type=json",
					"-p", `[{"op":"add","path":"/metadata/finalizers/-","value":"e2e.lockstep.dev/hold"}]`)
				require.Equal(t, 0, r.ExitCode, r.Output())
				r = kubectl(t, "", "delete", "serviceinstance", name, "-n", ns, "--wait=false")
				require.Equal(t, 0, r.ExitCode, r.Output())
				require.Eventually(t, func() bool {
					return len(getInstance(t, ns, name).Finalizers) == 1
				}, 20*time.Second, 100*time.Millisecond, "lockstep lets go of the deprovisioned object")
			},
			do: func(t *testing.T, name string) result {
				return kubectl(t, "", "patch", "serviceinstance", name, "-n", ns, "--type=json", "-p", `[{"op":"replace","path":"/metadata/finalizers","value":[]}]`)
			},
			check: func(t *testing.T, name string) {
				require.Eventually(t, func() bool {
					err := cluster.client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, &v1alpha1.ServiceInstance{})
					return apierrors.IsNotFound(err)
				}, 10*time.Second, 100*time.Millisecond, "the object is gone once its finalizers are removed")
			},
		},
		{
			name: "update that drops the defaulted label and leaves a defaulted field empty: refilled by the mutating webhook, then unchanged",
			do: func(t *testing.T, name string) result {
				return kubectl(t, "", "patch", "serviceinstance", name, "-n", ns, "--type=json", "-p", dropDefaulted)
			},
			calls: map[string]int{admission.MutateInstancePath: 1},
			check: func(t *testing.T, name string) {
				si := getInstance(t, ns, name)
				assert.Equal(t, ns+"-"+name, si.Spec.ExternalID)
				assert.Equal(t, "true", si.Labels[v1alpha1.DefaultedLabel])
			},
		},
		{
			name: "update of a defaulted object that leaves a defaulted field empty: refused by the API server's own rules",
			do: func(t *testing.T, name string) result {
				return kubectl(t, "", "patch", "serviceinstance", name, "-n", ns, "--type=json", "-p", `[{"op":"remove","path":"/spec/externalID"}]`)
			},
			refused: "spec.externalID: Forbidden: create-only field: it cannot be removed after the ServiceInstance is created; put the old value back",
			check: func(t *testing.T, name string) {
				assert.Equal(t, ns+"-"+name, getInstance(t, ns, name).Spec.ExternalID)
			},
		},
		{
			name: "lockstep's finalizer taken off an object not being deleted: put back by the reconciler",
			do: func(t *testing.T, name string) result {
				return kubectl(t, "", "patch", "serviceinstance", name, "-n", ns, "--type=json", "-p", `[{"op":"remove","path":"/metadata/finalizers"}]`)
			},
			check: func(t *testing.T, name string) {
				assert.Eventually(t, func() bool {
					return slices.Equal(getInstance(t, ns, name).Finalizers, []string{v1alpha1.Finalizer})
				}, 20*time.Second, 100*time.Millisecond)
			},
		},
		{
			name: "dry-run spec change: judged, never sent to the broker",
			do: func(t *testing.T, name string) result {
				return kubectl(t, "", "patch", "serviceinstance", name, "-n", ns, "--dry-run=server", "--type=merge", "-p", `{"spec":{"planName":"large"}}`)
			},
			calls: map[string]int{admission.ValidateInstancePath: 1},
			check: func(t *testing.T, name string) { assert.Equal(t, "small", getInstance(t, ns, name).Spec.PlanName) },
		},
		{
			name: "spec change: judged, and refused while the broker is down",
			do: func(t *testing.T, name string) result {
				return kubectl(t, "", "patch", "serviceinstance", name, "-n", ns, "--type=merge", "-p", `{"spec":{"planName":"large"}}`)
			},
			calls:   map[string]int{admission.ValidateInstancePath: 1},
			refused: fmt.Sprintf("broker %q", brokerName),
			check:   func(t *testing.T, name string) { assert.Equal(t, "small", getInstance(t, ns, name).Spec.PlanName) },
		},
		{
			name: "forged status: the status guard refuses",
			do: func(t *testing.T, name string) result {
				return kubectl(t, "", "patch", "serviceinstance", name, "-n", ns, "--subresource=status", "--type=merge",
					"-p", `{"status":{"dashboardURL":"https://evil.example"}}`)
			},
			refused: "is written by lockstep only",
			check: func(t *testing.T, name string) {
				assert.NotEqual(t, "https://evil.example", getInstance(t, ns, name).Status.DashboardURL)
			},
		},
		{
			name: "binding label change",
			setup: func(t *testing.T, name string) {
				retried(t, bindingYAML(ns, name+"-creds", name, ns+"-"+name+"-creds", ""), "apply", "-f", "-")
			},
			do: func(t *testing.T, name string) result {
				return kubectl(t, "", "label", "servicebinding", name+"-creds", "-n", ns, "team=payments")
			},
			check: func(t *testing.T, name string) {
				var sb v1alpha1.ServiceBinding
				require.NoError(t, cluster.client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name + "-creds"}, &sb))
				assert.Equal(t, "payments", sb.Labels["team"])
			},
		},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			name := fmt.Sprintf("db%d", i)
			b.Reset()
			r := kubectl(t, instanceWith(ns, name, "small", ns+"-"+name, ""), "apply", "-f", "-")
			require.Equal(t, 0, r.ExitCode, r.Output())
			if tt.setup != nil {
				tt.setup(t, name)
			}
			brokerDown(b)
			b.ResetCalls()
			// Whatever the setup sent is counted before the fences are.
			before := fenced(t, webhookRequests(t))

			r = tt.do(t, name)

			after := fenced(t, before)
			for _, p := range paths {
				n := after[p] - before[p] - fences[p]
				if tt.refused != "" && tt.calls[p] > 0 {
					// kubectl may send a refused request again; lockstep
					// repeats its refusal then, without a broker call.
					assert.GreaterOrEqual(t, n, tt.calls[p], "requests lockstep answered on %s", p)
					continue
				}
				assert.Equal(t, tt.calls[p], n, "requests lockstep answered on %s", p)
			}
			if tt.refused == "" {
				require.Equal(t, 0, r.ExitCode, r.Output())
			} else {
				require.NotEqual(t, 0, r.ExitCode, r.Output())
				assert.Contains(t, r.Stderr, tt.refused)
			}
			if tt.refused == "" {
				// About this row's objects: lockstep goes on settling what
				// an earlier row left unknown.
				assert.Empty(t, callsIn(b, ns+"-"+name), "no broker call")
			}
			tt.check(t, name)
		})
	}
}
