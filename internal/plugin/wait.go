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
// reports while its operation is under way (progress), or, while the
// status reports none, what the object's BrokerOperation in flight says
// (inFlight), each change once.
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
		line := progress(cur)
		if line == "" {
			line = s.inFlight(ctx, c, cur)
		}
		if line != "" && line != seen {
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

// inFlight is what the journal says of b's operation under way while b's
// status does not report it yet (lockstep writes the status from the
// journal, and may do so only once the broker has answered): the newest
// of b's BrokerOperations that is Pending, InProgress or Succeeded (the
// broker done, the commit to come), as progress shows an operation; ""
// when there is none, or the user may not read BrokerOperations (the
// wait goes on without it).
func (s *session) inFlight(ctx context.Context, c client.Client, b brokered) string {
	ops, err := s.operations(ctx, c, b.kind, b.obj.GetNamespace(), b.obj.GetName())
	if err != nil {
		return ""
	}
	ops = ofObject(ops, b.obj.GetUID())
	for i := len(ops) - 1; i >= 0; i-- {
		if line := flightText(&ops[i]); line != "" {
			return line
		}
	}
	return ""
}

// flightText is one line of a BrokerOperation under way, in progress's
// words: its verb, its phase, its name, the broker's description and what
// it hands over to the object's InSync (an outcome not known yet); "" for
// a record that is final.
func flightText(op *v1alpha1.BrokerOperation) string {
	phase := map[v1alpha1.OperationPhase]string{
		v1alpha1.PhasePending:    "pending",
		v1alpha1.PhaseInProgress: string(v1alpha1.StateInProgress),
		v1alpha1.PhaseSucceeded:  "succeeded, to be committed",
	}[op.Status.Phase]
	if phase == "" {
		return ""
	}
	line := fmt.Sprintf("%s %s (BrokerOperation %s)", op.Spec.Verb, phase, op.Name)
	if op.Status.Description != "" {
		line += ": " + op.Status.Description
	}
	if n := op.Status.TargetInSync; n != nil {
		line += fmt.Sprintf("; %s %s", v1alpha1.ConditionInSync, n.Status)
		if n.Reason != "" {
			line += " (" + n.Reason + ")"
		}
	}
	return line
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
