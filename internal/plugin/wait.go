package plugin

import (
	"context"
	"fmt"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/lockstep-dev/lockstep/api/v1alpha1"
)

// waitFlags are the flags of the commands that wait for Ready.
type waitFlags struct {
	wait    bool
	timeout time.Duration
}

// waitReady waits until a new object is Ready, printing what its status
// reports while its operation is under way (progress), each change once.
// It stops early when the broker failed the operation: lockstep allowed
// the create while the broker still worked on it, and the broker's answer
// came later.
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
		if ready != nil && ready.Status == metav1.ConditionTrue && cur.obj.GetGeneration() == cur.observed {
			return true, nil
		}
		if line := progress(cur); line != "" && line != seen {
			seen = line
			fmt.Fprintf(s.out(), "  %s\n", line)
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

// progress is what b's status reports of an operation under way, as one
// line: the operation (its verb, where it stands, its BrokerOperation and
// the broker's description) and each condition that says something is
// not right yet (Ready or InSync not True, Reconciling or Stalled True),
// with its reason; "" when no operation is under way (none in progress, and no
// condition says Reconciling). It reads only the status, so that it shows
// whatever conditions lockstep reports.
func progress(b brokered) string {
	l := b.last
	reconciling := b.condition("Reconciling")
	underWay := (l != nil && l.State == v1alpha1.StateInProgress) || (reconciling != nil && reconciling.Status == metav1.ConditionTrue)
	if !underWay {
		return ""
	}
	var parts []string
	if l != nil {
		op := fmt.Sprintf("%s %s", l.Verb, l.State)
		if l.OperationName != "" {
			op += " (BrokerOperation " + l.OperationName + ")"
		}
		if l.Description != "" {
			op += ": " + l.Description
		}
		parts = append(parts, op)
	}
	for _, c := range b.conditions {
		// Reconciling and Stalled say something when True (kstatus's
		// abnormal-true conditions), the others when they are not.
		abnormal := c.Type == "Reconciling" || c.Type == "Stalled"
		if abnormal != (c.Status == metav1.ConditionTrue) {
			continue
		}
		text := fmt.Sprintf("%s %s", c.Type, c.Status)
		if c.Reason != "" {
			text += " (" + c.Reason + ")"
		}
		parts = append(parts, text)
	}
	return strings.Join(parts, "; ")
}
