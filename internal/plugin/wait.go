package plugin

import (
	"context"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/lockstep-dev/lockstep/api/v1alpha1"
)

// waitFlags are the flags of the commands that wait for Ready.
type waitFlags struct {
	wait    bool
	timeout time.Duration
}

// waitReady waits until a new object is Ready, printing what lockstep
// reports meanwhile (each change of an operation in progress once). It
// stops early when the broker failed the operation: lockstep allowed the
// create while the broker still worked on it, and the broker's answer came
// later.
func (s *session) waitReady(ctx context.Context, c client.Client, b brokered, timeout time.Duration) (brokered, error) {
	fmt.Fprintf(s.out(), "waiting for %s to be Ready\n", b.resource())
	var seen string
	var last brokered
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	err := wait.PollUntilContextCancel(ctx, s.poll, true, func(ctx context.Context) (bool, error) {
		cur, err := get(ctx, c, b.kind, b.obj.GetNamespace(), b.obj.GetName())
		if err != nil {
			return false, err
		}
		last = cur
		ready := cur.condition(v1alpha1.ConditionReady)
		if ready != nil && ready.Status == "True" && cur.obj.GetGeneration() == observed(cur.obj) {
			return true, nil
		}
		if l := cur.last; l != nil && l.State == v1alpha1.StateInProgress {
			if text := lastText(l); text != seen {
				seen = text
				fmt.Fprintf(s.out(), "  %s\n", text)
			}
		}
		if l := cur.last; l != nil && l.State == v1alpha1.StateFailed {
			return false, fmt.Errorf("%s is not Ready: %s", cur.resource(), lastText(l))
		}
		return false, nil
	})
	switch {
	case err == nil:
		fmt.Fprintf(s.out(), "%s is Ready\n", last.resource())
		return last, nil
	case wait.Interrupted(err):
		return last, fmt.Errorf("%s is not Ready after %s (Ready: %s); kubectl lockstep why %s shows why",
			b.resource(), timeout, conditionText(last.condition(v1alpha1.ConditionReady)), b.resource())
	default:
		return last, err
	}
}

// observed is the generation the broker last confirmed for obj.
func observed(obj client.Object) int64 {
	switch o := obj.(type) {
	case *v1alpha1.ServiceInstance:
		return o.Status.ObservedGeneration
	case *v1alpha1.ServiceBinding:
		return o.Status.ObservedGeneration
	}
	return 0
}
