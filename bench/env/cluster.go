package env

import (
	"context"
	"fmt"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/lockstep-dev/lockstep/api/v1alpha1"
	"github.com/lockstep-dev/lockstep/internal/journal"
)

// Namespace creates a namespace (if absent); skipAdmission labels it so
// that lockstep's serviceinstances webhooks do not apply there.
func (e *Env) Namespace(ctx context.Context, name string, skipAdmission bool) error {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if skipAdmission {
		ns.Labels = map[string]string{SkipAdmissionLabel: "true"}
	}
	if err := e.Client.Create(ctx, ns); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating namespace %s: %w", name, err)
	}
	return nil
}

// RegisterBroker creates a ServiceBroker for the broker at url and waits
// until lockstep loaded its catalog (Ready). It returns how long that took.
func (e *Env) RegisterBroker(ctx context.Context, name, url string, timeout time.Duration) (time.Duration, error) {
	start := time.Now()
	sb := &v1alpha1.ServiceBroker{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: v1alpha1.ServiceBrokerSpec{URL: url}}
	if err := e.Client.Create(ctx, sb); err != nil {
		return 0, fmt.Errorf("creating ServiceBroker %q: %w", name, err)
	}
	if err := e.BrokerReady(ctx, name, timeout); err != nil {
		return 0, err
	}
	return time.Since(start), nil
}

// Settle waits until every BrokerOperation in namespace ns is final
// (Committed, Compensated or Failed) and no lock Lease is left there: the
// reconcilers have caught up with what the benchmark did, so that the next
// measurement does not pay for the previous one.
func (e *Env) Settle(ctx context.Context, ns string, timeout time.Duration) error {
	var pending, leases int
	err := Poll(ctx, timeout, 100*time.Millisecond, func(ctx context.Context) (bool, error) {
		var ops v1alpha1.BrokerOperationList
		if err := e.Client.List(ctx, &ops, client.InNamespace(ns)); err != nil {
			return false, err
		}
		pending = 0
		for _, op := range ops.Items {
			switch op.Status.Phase {
			case v1alpha1.PhaseCommitted, v1alpha1.PhaseCompensated, v1alpha1.PhaseFailed:
			default:
				pending++
			}
		}
		var ls coordinationv1.LeaseList
		if err := e.Client.List(ctx, &ls, client.InNamespace(LockstepNamespace)); err != nil {
			return false, err
		}
		leases = 0
		for _, l := range ls.Items {
			if l.Annotations[journal.AnnotationNamespace] == ns {
				leases++
			}
		}
		return pending == 0 && leases == 0, nil
	})
	if err != nil {
		return fmt.Errorf("namespace %s did not settle: %d operation(s) not final, %d lock(s) held: %w", ns, pending, leases, err)
	}
	return nil
}

// Poll calls cond at once and then every interval until it reports done,
// fails, or timeout passes: every wait of the benchmarks is bounded.
func Poll(ctx context.Context, timeout, interval time.Duration, cond func(context.Context) (bool, error)) error {
	err := wait.PollUntilContextTimeout(ctx, interval, timeout, true, cond)
	if err != nil && wait.Interrupted(err) {
		return fmt.Errorf("gave up after %s: %w", timeout, err)
	}
	return err
}

// LockstepNamespace is lockstep's own namespace in the bench (the
// default of LOCKSTEP_NAMESPACE), where its locks live.
const LockstepNamespace = v1alpha1.DefaultNamespace
