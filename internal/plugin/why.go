package plugin

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/cli-runtime/pkg/printers"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/lockstep-dev/lockstep/api/v1alpha1"
	"github.com/lockstep-dev/lockstep/internal/typed/render"
)

func (s *session) whyCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "why KIND/NAME | NAME | namespace NS",
		Short: "Explain why an object is not Ready or not InSync, or why a namespace is stuck, and name the way out",
		Long: "why reads what lockstep wrote (conditions, last operation, the journal, the ServiceBroker) and says, in " +
			"lockstep's words, where the object stands and what to do. `why namespace NS` explains a namespace that " +
			"stays Terminating because a broker refuses (or cannot be asked) to deprovision or unbind what is in it.",
		Example: "  kubectl lockstep why si/db\n  kubectl lockstep why quick/orders\n  kubectl lockstep why namespace team-a",
		Args:    cobra.RangeArgs(1, 2),
		ValidArgsFunction: func(cmd *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
			if len(args) == 1 && args[0] == "namespace" {
				return s.completeNamespaces(cmd, nil, toComplete)
			}
			if len(args) > 0 {
				return nil, cobra.ShellCompDirectiveNoFileComp
			}
			objects, directive := s.completeObjects("")(cmd, args, toComplete)
			return append(objects, "namespace"), directive
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			c, ns, err := s.client()
			if err != nil {
				return err
			}
			if args[0] == "namespace" || args[0] == "ns" {
				if len(args) != 2 {
					return fmt.Errorf("why namespace NS: name the namespace")
				}
				return s.whyNamespace(cmd.Context(), c, args[1])
			}
			if len(args) != 1 {
				return fmt.Errorf("why takes one object (KIND/NAME: si/NAME, sbd/NAME, or a typed kind's) or namespace NS")
			}
			b, err := s.resolve(cmd.Context(), c, ns, args[0])
			if err != nil {
				return err
			}
			return s.whyObject(cmd.Context(), c, b)
		},
	}
	return cmd
}

// brokerOf returns the ServiceBroker an object's broker calls go to: an
// instance's, or a binding's instance's; nil when it does not exist.
func brokerOf(ctx context.Context, c client.Client, b brokered) (string, *v1alpha1.ServiceBroker, error) {
	name := b.broker
	if sb, ok := b.obj.(*v1alpha1.ServiceBinding); ok {
		// An instance of a typed kind is read as it is (reading its
		// kind's CRD may need more than the user's permissions): its
		// spec.brokerName is defaulted on create, as a ServiceInstance's.
		var si client.Object = &v1alpha1.ServiceInstance{}
		if sb.Spec.InstanceKind != "" {
			u := &unstructured.Unstructured{}
			u.SetGroupVersionKind(schema.GroupVersionKind{Group: render.Group, Version: render.Version, Kind: sb.Spec.InstanceKind})
			si = u
		}
		err := c.Get(ctx, client.ObjectKey{Namespace: sb.Namespace, Name: sb.Spec.InstanceName}, si)
		if apierrors.IsNotFound(err) || meta.IsNoMatchError(err) {
			return "", nil, nil
		}
		if err != nil {
			return "", nil, err
		}
		switch o := si.(type) {
		case *v1alpha1.ServiceInstance:
			name = o.Spec.BrokerName
		case *unstructured.Unstructured:
			name, _, _ = unstructured.NestedString(o.Object, "spec", "brokerName")
		}
	}
	var broker v1alpha1.ServiceBroker
	err := c.Get(ctx, client.ObjectKey{Name: name}, &broker)
	if apierrors.IsNotFound(err) {
		return name, nil, nil
	}
	if err != nil {
		return name, nil, err
	}
	return name, &broker, nil
}

// underWay is the newest operation of an object that the broker has
// answered and that is not final yet: still in progress at the broker,
// succeeded but not committed, or orphaned and not compensated. A Pending
// record is an admission under way (or one lockstep settles itself after
// a restart): it says nothing yet.
func underWay(ops []v1alpha1.BrokerOperation) *v1alpha1.BrokerOperation {
	for i := len(ops) - 1; i >= 0; i-- {
		switch ops[i].Status.Phase {
		case v1alpha1.PhaseInProgress, v1alpha1.PhaseSucceeded, v1alpha1.PhaseOrphaned:
			return &ops[i]
		}
	}
	return nil
}

func (s *session) whyObject(ctx context.Context, c client.Client, b brokered) error {
	ns, name := b.obj.GetNamespace(), b.obj.GetName()
	brokerName, broker, err := brokerOf(ctx, c, b)
	if err != nil {
		return err
	}
	ops, err := s.operations(ctx, c, b.kind, ns, name)
	if err != nil {
		return err
	}
	ops = ofObject(ops, b.obj.GetUID())
	policy, _ := v1alpha1.PolicyOf(b.obj)
	ready, inSync := b.condition(v1alpha1.ConditionReady), b.condition(v1alpha1.ConditionInSync)

	w := printers.GetNewTabWriter(s.out())
	fmt.Fprintf(w, "%s in namespace %s\n", b.resource(), ns)
	fmt.Fprintf(w, "Broker:\t%s\n", brokerText(brokerName, broker))
	fmt.Fprintf(w, "Ready:\t%s\n", conditionText(ready))
	fmt.Fprintf(w, "InSync:\t%s\n", conditionText(inSync))
	fmt.Fprintf(w, "Policy:\t%s\n", policy)
	fmt.Fprintf(w, "Last operation:\t%s\n", lastText(b.last))
	flight := underWay(ops)
	if flight != nil {
		fmt.Fprintf(w, "Under way:\t%s %s (BrokerOperation %s, since %s)\n", flight.Spec.Verb, phaseOf(flight),
			flight.Name, started(*flight).UTC().Format(time.RFC3339))
	}
	if err := w.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(s.out())
	detach := fmt.Sprintf("kubectl lockstep detach %s -n %s", b.resource(), ns)
	say := func(format string, args ...any) error {
		_, err := fmt.Fprintf(s.out(), format+"\n", args...)
		return err
	}
	kind := b.kind.word()
	switch {
	case b.obj.GetDeletionTimestamp() != nil && !v1alpha1.KeepsBrokerOnDelete(b.obj):
		return say("It is being deleted: lockstep removes it once broker %q has %s it.\n"+
			"To let it go without the broker (which then keeps what it holds): %s", brokerName, undone(b.kind.target()), detach)
	case b.obj.GetDeletionTimestamp() != nil:
		return say("It is being deleted and is detached (%s): it goes without any call to its broker.", policy)
	case brokerName == "" && b.kind == bindingKind:
		return say("Its instance %q does not exist: nothing can be bound or unbound.\n"+
			"To delete the binding without the broker: %s, then delete it.", b.obj.(*v1alpha1.ServiceBinding).Spec.InstanceName, detach)
	case broker == nil:
		return say("Its ServiceBroker %q does not exist: nothing can change at the broker, and lockstep refuses to delete it "+
			"there. Create the ServiceBroker again, or let go of the %s (the broker keeps what it holds): %s", brokerName, kind, detach)
	case !meta.IsStatusConditionTrue(broker.Status.Conditions, v1alpha1.ConditionReady):
		return say("ServiceBroker %q is not Ready: %s.\nChanges are refused until its catalog loads; kubectl describe servicebroker %s says more.",
			brokerName, conditionText(meta.FindStatusCondition(broker.Status.Conditions, v1alpha1.ConditionReady)), brokerName)
	case flight != nil && flight.Status.Phase == v1alpha1.PhaseInProgress && (inSync == nil || inSync.Reason != "OutcomeUnknown"):
		return say("Broker %q still works on the %s (BrokerOperation %s): lockstep follows it to the end; the %s cannot change meanwhile.",
			brokerName, flight.Spec.Verb, flight.Name, kind)
	case inSync != nil && inSync.Reason == "OutcomeUnknown":
		return say("Broker %q accepted a change but has not said how it ended: lockstep keeps asking (less often the longer it lasts), "+
			"then commits or undoes it. Nothing to do while the broker is there; if it is gone for good: %s", brokerName, detach)
	case inSync != nil && (inSync.Reason == "PlanDrift" || inSync.Reason == "ParametersDrift") && policy == v1alpha1.PolicyObserve:
		return say("Broker %q holds something else than the %s says, and under the observe policy lockstep only reports it.\n"+
			"Write what the broker holds into the spec, or change it at the broker.", brokerName, kind)
	case inSync != nil && (inSync.Reason == "PlanDrift" || inSync.Reason == "ParametersDrift"):
		return say("Broker %q holds something else than the %s says: lockstep applies the spec again (kubectl lockstep history %s "+
			"shows the correction and the broker's answer).", brokerName, kind, b.resource())
	case inSync != nil && inSync.Reason == "GoneAtBroker":
		return say("Broker %q no longer holds it: kubectl delete %s -n %s lets go of the %s (nothing is sent to the broker).",
			brokerName, b.resource(), ns, kind)
	case inSync != nil && inSync.Reason == "BrokerUnreachable":
		return say("Broker %q could not be asked at the last resync: lockstep asks again at the next one. kubectl describe servicebroker %s says more.",
			brokerName, brokerName)
	case ready != nil && ready.Reason == "CredentialsMissing":
		return say("Its Secret is gone: the credentials cannot be written again (a binding cannot be changed at a broker). " +
			"Delete the binding and bind again.")
	case ready == nil:
		return say("lockstep has not reported on it yet: kubectl lockstep history %s shows what it carried out.", b.resource())
	case b.last != nil && b.last.State == v1alpha1.StateFailed && ready.Status == "True":
		if b.last.Verb == v1alpha1.VerbDeprovision || b.last.Verb == v1alpha1.VerbUnbind {
			return say("Broker %q did not carry out the last %s (its answer is above): the %s stays as it was, no deletion "+
				"was started. To delete it without the broker (which then keeps what it holds): %s, then delete it again.",
				brokerName, b.last.Verb, kind, detach)
		}
		return say("Broker %q did not carry out the last %s (its answer is above): the %s stays as it was. Correct what "+
			"the broker refused and change it again.", brokerName, b.last.Verb, kind)
	case ready.Status != "True":
		return say("It is not Ready: %s\nkubectl lockstep history %s shows what lockstep carried out and the broker's answers.",
			ready.Message, b.resource())
	case inSync != nil && inSync.Status != "True":
		return say("%s", inSync.Message)
	}
	return say("Ready and InSync: broker %q holds what the %s says. Nothing to do.", brokerName, kind)
}

// undone is what a broker does when an object of kind is deleted.
func undone(kind v1alpha1.TargetKind) string {
	if kind == v1alpha1.KindServiceBinding {
		return "unbound"
	}
	return "deprovisioned"
}

func phaseOf(op *v1alpha1.BrokerOperation) v1alpha1.OperationPhase {
	if op.Status.Phase == "" {
		return v1alpha1.PhasePending
	}
	return op.Status.Phase
}

// brokerText is a ServiceBroker and its readiness as one line.
func brokerText(name string, b *v1alpha1.ServiceBroker) string {
	switch {
	case name == "":
		return "unknown (the instance is gone)"
	case b == nil:
		return name + " (does not exist)"
	case meta.IsStatusConditionTrue(b.Status.Conditions, v1alpha1.ConditionReady):
		return name + " (Ready)"
	}
	return name + " (not Ready)"
}

// whyNamespace explains a namespace: why it stays Terminating, or which of
// its objects are not Ready or not InSync.
func (s *session) whyNamespace(ctx context.Context, c client.Client, name string) error {
	var ns corev1.Namespace
	if err := c.Get(ctx, client.ObjectKey{Name: name}, &ns); err != nil {
		return err
	}
	objs, err := s.everyObject(ctx, c, name)
	if err != nil {
		return err
	}
	out := s.out()
	if ns.DeletionTimestamp == nil {
		return notReadyIn(out, name, objs)
	}
	if len(objs) == 0 {
		fmt.Fprintf(out, "namespace %s is being deleted and holds no instance or binding: it does not wait for lockstep "+
			"(kubectl get namespace %s -o yaml shows what it waits for).\n", name, name)
		return nil
	}
	fmt.Fprintf(out, "namespace %s is being deleted (Terminating) and waits for %d object(s) lockstep manages:\n\n", name, len(objs))
	if err := objectTable(out, objs); err != nil {
		return err
	}
	for _, c := range ns.Status.Conditions {
		if c.Type == corev1.NamespaceDeletionContentFailure && c.Status == corev1.ConditionTrue {
			fmt.Fprintf(out, "\nThe namespace controller could not delete them:\n  %s\n", c.Message)
		}
	}
	managed := 0
	for _, b := range objs {
		if !v1alpha1.KeepsBrokerOnDelete(b.obj) {
			managed++
		}
	}
	if managed == 0 {
		fmt.Fprintf(out, "\nEvery one is detached: each goes without a call to its broker, at the namespace controller's next pass.\n")
		return nil
	}
	fmt.Fprintf(out, "\nThe way out: their broker refuses to deprovision or unbind them, or cannot be asked. Put the broker right and\n"+
		"the namespace goes by itself; or let go of them, leaving what the broker holds in place:\n\n"+
		"  kubectl lockstep detach --all -n %s\n\n"+
		"(the same as: kubectl annotate serviceinstances,servicebindings --all -n %s %s=%s)\n",
		name, name, v1alpha1.AnnotationReconcilePolicy, v1alpha1.PolicyDetachOnDelete)
	return nil
}

// notReadyIn lists the objects of a namespace that is not being deleted
// that are not Ready or not InSync.
func notReadyIn(out io.Writer, name string, objs []brokered) error {
	var bad []brokered
	for _, b := range objs {
		if !meta.IsStatusConditionTrue(b.conditions, v1alpha1.ConditionReady) || !meta.IsStatusConditionTrue(b.conditions, v1alpha1.ConditionInSync) {
			bad = append(bad, b)
		}
	}
	if len(bad) == 0 {
		fmt.Fprintf(out, "namespace %s is not being deleted, and its %d instance(s) and binding(s) are Ready and InSync.\n", name, len(objs))
		return nil
	}
	fmt.Fprintf(out, "namespace %s is not being deleted; %d of its %d instance(s) and binding(s) are not Ready or not InSync:\n\n",
		name, len(bad), len(objs))
	if err := objectTable(out, bad); err != nil {
		return err
	}
	fmt.Fprintf(out, "\nkubectl lockstep why KIND/NAME -n %s explains each.\n", name)
	return nil
}

// objectTable prints instances and bindings with their conditions,
// policy and last operation.
func objectTable(out io.Writer, objs []brokered) error {
	w := printers.GetNewTabWriter(out)
	fmt.Fprintln(w, "  OBJECT\tREADY\tIN SYNC\tPOLICY\tLAST OPERATION")
	for _, b := range objs {
		policy, _ := v1alpha1.PolicyOf(b.obj)
		fmt.Fprintf(w, "  %s\t%s\t%s\t%s\t%s\n", b.resource(), short(b.condition(v1alpha1.ConditionReady)),
			short(b.condition(v1alpha1.ConditionInSync)), policy, lastText(b.last))
	}
	return w.Flush()
}

// short is a condition's status, with its reason unless it is True.
func short(c *metav1.Condition) string {
	switch {
	case c == nil:
		return "-"
	case c.Status == metav1.ConditionTrue || c.Reason == "":
		return string(c.Status)
	}
	return fmt.Sprintf("%s (%s)", c.Status, c.Reason)
}
