package check

import (
	"fmt"
	"strings"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/lockstep-dev/lockstep/api/v1alpha1"
	"github.com/lockstep-dev/lockstep/internal/journal"
)

// Final checks that lockstep finished: every operation record in a final
// phase, every lock released, and nothing being deleted (no object, no
// namespace) unless one of the objects that hold it up names the way out
// (the reconcile-policy annotation).
func Final(s Snapshot) []Violation {
	var out []Violation
	for _, rec := range s.Records {
		if !s.live(rec.Namespace) {
			continue
		}
		switch rec.Status.Phase {
		case v1alpha1.PhaseCommitted, v1alpha1.PhaseCompensated, v1alpha1.PhaseFailed:
			continue
		}
		t := rec.Spec.Target
		out = append(out, Violation{Invariant: OperationsFinal, Object: fmt.Sprintf("%s %s/%s", t.Kind, targetNamespace(rec), t.Name), ExternalID: t.ExternalID,
			Message: fmt.Sprintf("operation %s/%s (%s by %s) is still %s: %s", rec.Namespace, rec.Name, rec.Spec.Verb, rec.Spec.Requester.Username, phase(rec.Status.Phase), rec.Status.Description)})
	}
	for _, l := range s.Locks {
		if ns := lockNamespace(l); ns != "" && !s.live(ns) {
			continue
		}
		holder := ""
		if l.Spec.HolderIdentity != nil {
			holder = *l.Spec.HolderIdentity
		}
		out = append(out, Violation{Invariant: LocksReleased, Object: "Lease " + l.Namespace + "/" + l.Name,
			Message: fmt.Sprintf("the lock is still held by %q", holder)})
	}
	wayOut := map[string]bool{} // namespaces with an object that names the way out
	stuck := func(kind, namespace, name string, deleting *metav1.Time, conditions []metav1.Condition, last *v1alpha1.LastOperation) {
		if !s.live(namespace) {
			return
		}
		if namesWayOut(conditions, last) {
			wayOut[namespace] = true
			return
		}
		if deleting != nil {
			out = append(out, Violation{Invariant: NothingStuck, Object: kind + " " + namespace + "/" + name,
				Message: fmt.Sprintf("still being deleted (since %s), and nothing on it names the way out", deleting.Format("15:04:05"))})
		}
	}
	for _, si := range s.Instances {
		stuck("ServiceInstance", si.Namespace, si.Name, si.DeletionTimestamp, si.Status.Conditions, si.Status.LastOperation)
	}
	for _, sb := range s.Bindings {
		stuck("ServiceBinding", sb.Namespace, sb.Name, sb.DeletionTimestamp, sb.Status.Conditions, sb.Status.LastOperation)
	}
	for _, ns := range s.Namespaces {
		if ns.DeletionTimestamp != nil && !wayOut[ns.Name] {
			out = append(out, Violation{Invariant: NothingStuck, Object: "Namespace " + ns.Name,
				Message: fmt.Sprintf("still Terminating (since %s), and no object in it names the way out", ns.DeletionTimestamp.Format("15:04:05"))})
		}
	}
	return out
}

// live reports whether a namespace exists; every one does when the
// snapshot does not say.
func (s Snapshot) live(namespace string) bool { return s.Live == nil || s.Live[namespace] }

// lockNamespace is the namespace of the object a lock locks.
func lockNamespace(l coordinationv1.Lease) string { return l.Annotations[journal.AnnotationNamespace] }

// namesWayOut reports whether an object tells how to get past a broker
// that refuses: its conditions or last operation name the annotation.
func namesWayOut(conditions []metav1.Condition, last *v1alpha1.LastOperation) bool {
	for _, c := range conditions {
		if strings.Contains(c.Message, v1alpha1.AnnotationReconcilePolicy) {
			return true
		}
	}
	return last != nil && strings.Contains(last.Description, v1alpha1.AnnotationReconcilePolicy)
}

func targetNamespace(rec v1alpha1.BrokerOperation) string {
	if rec.Spec.Target.Namespace != "" {
		return rec.Spec.Target.Namespace
	}
	return rec.Namespace
}

func phase(p v1alpha1.OperationPhase) v1alpha1.OperationPhase {
	if p == "" {
		return v1alpha1.PhasePending
	}
	return p
}
