package plugin

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/cli-runtime/pkg/printers"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/lockstep-dev/lockstep/api/v1alpha1"
)

func (s *session) historyCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "history KIND/NAME | NAME",
		Short: "Show the object's BrokerOperations as a timeline: every change lockstep carried to its broker, who asked, and the answer",
		Long: "history lists the BrokerOperations of an instance (of any kind) or binding, oldest first: when, what (provision, update, " +
			"deprovision, bind, unbind, adopt, detach), who asked, where it stands (Committed: the broker and the API server " +
			"agree; Failed: the broker refused, nothing changed; InProgress: the broker still works on it) and the " +
			"broker's answer. The records of an earlier object of the same name (deleted, then created again) are shown " +
			"apart, each object under its uid. Records of a delete in a namespace that was being deleted are in lockstep's " +
			"namespace: they are shown too when you may read them.",
		Example:           "  kubectl lockstep history si/db\n  kubectl lockstep history quick/orders\n  kubectl lockstep history sbd/db-creds -n team-a",
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: s.completeObjects(""),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, ns, err := s.client()
			if err != nil {
				return err
			}
			n, err := s.target(cmd.Context(), c, ns, args[0])
			if err != nil {
				return err
			}
			ops, err := s.operations(cmd.Context(), c, n.kind, ns, n.name)
			if err != nil {
				return err
			}
			if len(ops) == 0 {
				fmt.Fprintf(s.out(), "No BrokerOperations of %s in namespace %s.\n", n.resource(), ns)
				return nil
			}
			return timeline(s.out(), n, ops)
		},
	}
}

// named is an object a user named: the kind as the journal's records
// name it, its name, and the uid of the object of that name that exists
// ("" when there is none).
type named struct {
	kind kindRef
	name string
	uid  types.UID
}

func (n named) resource() string { return n.kind.word() + "/" + n.name }

// target is the object a user named; an object that is gone can still be
// named as KIND/NAME (its records stay for the retention), even when its
// kind is no longer served.
func (s *session) target(ctx context.Context, c client.Client, ns, arg string) (named, error) {
	k, name, ok := strings.Cut(arg, "/")
	if !ok || name == "" {
		b, err := s.resolve(ctx, c, ns, arg)
		if err != nil {
			return named{}, err
		}
		return named{kind: b.kind, name: b.obj.GetName(), uid: b.obj.GetUID()}, nil
	}
	kind, err := s.kindFor(k)
	var unknown *unknownKindError
	switch {
	case errors.As(err, &unknown):
		// Records name the kind: compared in lower case.
		return named{kind: kindRef{gvk: schema.GroupVersionKind{Kind: k}}, name: name}, nil
	case err != nil:
		return named{}, err
	}
	n := named{kind: kind, name: name}
	b, err := get(ctx, c, kind, ns, name)
	switch {
	case err == nil:
		n.uid = b.obj.GetUID()
	case !apierrors.IsNotFound(err) && !meta.IsNoMatchError(err):
		return named{}, err
	}
	return n, nil
}

// operations are the BrokerOperations of the object kind/name in ns,
// oldest first: those next to it and those in lockstep's namespace
// (deletes while its namespace was being deleted) when readable.
func (s *session) operations(ctx context.Context, c client.Client, kind kindRef, ns, name string) ([]v1alpha1.BrokerOperation, error) {
	var out []v1alpha1.BrokerOperation
	for _, where := range []string{ns, s.lockstepNamespace} {
		var list v1alpha1.BrokerOperationList
		err := c.List(ctx, &list, client.InNamespace(where))
		if where != ns && (apierrors.IsForbidden(err) || apierrors.IsNotFound(err)) {
			continue
		}
		if err != nil {
			return nil, err
		}
		for _, op := range list.Items {
			target := op.Spec.Target
			targetNS := target.Namespace
			if targetNS == "" {
				targetNS = op.Namespace
			}
			if strings.EqualFold(string(target.Kind), kind.gvk.Kind) && target.Name == name && targetNS == ns {
				out = append(out, op)
			}
		}
		if where == ns && ns == s.lockstepNamespace {
			break
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return before(out[i], out[j]) })
	return out, nil
}

// before orders operations by when they started; within one second (a
// record's times have seconds only) by the order of their records' last
// writes, which the API server's resource versions follow.
func before(a, b v1alpha1.BrokerOperation) bool {
	ta, tb := started(a), started(b)
	if !ta.Equal(tb) {
		return ta.Before(tb)
	}
	ra, errA := strconv.ParseUint(a.ResourceVersion, 10, 64)
	rb, errB := strconv.ParseUint(b.ResourceVersion, 10, 64)
	if errA == nil && errB == nil && ra != rb {
		return ra < rb
	}
	return a.Name < b.Name
}

// started is when an operation was sent to the broker (its record's
// creation until the answer is written).
func started(op v1alpha1.BrokerOperation) time.Time {
	if op.Status.StartTime != nil {
		return op.Status.StartTime.Time
	}
	return op.CreationTimestamp.Time
}

// timeline prints the operations of n, one a line, in UTC; then the
// answer of each operation that has one, under its name. Operations of
// more than one object of the name (one deleted, then another created)
// are printed apart, object by object, each under a line that names it
// by its uid and says when an earlier one was deleted.
func timeline(out io.Writer, n named, ops []v1alpha1.BrokerOperation) error {
	objects := byObject(ops)
	for i, o := range objects {
		if len(objects) > 1 || (n.uid != "" && o.uid != n.uid) {
			if i > 0 {
				fmt.Fprintln(out)
			}
			fmt.Fprintln(out, o.heading(n))
		}
		if err := operationTable(out, o.ops); err != nil {
			return err
		}
	}
	var answers []string
	for _, op := range ops {
		answer := op.Status.Description
		if n := op.Status.TargetInSync; n != nil && n.Reason != "" {
			answer = strings.TrimSpace(answer + " (InSync " + string(n.Status) + ": " + n.Reason + ")")
		}
		if answer != "" {
			answers = append(answers, op.Name+": "+answer)
		}
	}
	if len(answers) > 0 {
		fmt.Fprintf(out, "\n%s\n", strings.Join(answers, "\n"))
	}
	return nil
}

// operationTable prints operations, one a line.
func operationTable(out io.Writer, ops []v1alpha1.BrokerOperation) error {
	w := printers.GetNewTabWriter(out)
	fmt.Fprintln(w, "TIME\tVERB\tUSER\tPHASE\tHTTP\tOPERATION")
	for _, op := range ops {
		http := "-"
		if op.Status.HTTPStatus != 0 {
			http = fmt.Sprint(op.Status.HTTPStatus)
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\n", started(op).UTC().Format(time.RFC3339), op.Spec.Verb, op.Spec.Requester.Username,
			phaseOf(&op), http, op.Name)
	}
	return w.Flush()
}

// object is the operations of one object of a name, by its uid.
type object struct {
	uid types.UID
	ops []v1alpha1.BrokerOperation
}

// byObject groups operations, oldest first, by the uid of their target,
// in the order of each object's first operation.
func byObject(ops []v1alpha1.BrokerOperation) []object {
	var out []object
	for _, op := range ops {
		uid := op.Spec.Target.UID
		i := slices.IndexFunc(out, func(o object) bool { return o.uid == uid })
		if i < 0 {
			out = append(out, object{uid: uid})
			i = len(out) - 1
		}
		out[i].ops = append(out[i].ops, op)
	}
	return out
}

// heading names object o of n's name: the object that exists, one whose
// create was refused, or an earlier one, deleted when its last delete (or
// detach) was committed.
func (o object) heading(n named) string {
	uid := string(o.uid)
	if uid == "" {
		uid = "not recorded"
	}
	if o.uid != "" && o.uid == n.uid {
		return fmt.Sprintf("%s (uid %s), as it is now:", n.resource(), uid)
	}
	if !slices.ContainsFunc(o.ops, func(op v1alpha1.BrokerOperation) bool { return !refusedCreate(op) }) {
		return fmt.Sprintf("%s (uid %s), whose create was refused: nothing was created:", n.resource(), uid)
	}
	earlier := "An earlier "
	if n.uid == "" {
		earlier = ""
	}
	for i := len(o.ops) - 1; i >= 0; i-- {
		op := o.ops[i]
		switch op.Spec.Verb {
		case v1alpha1.VerbDeprovision, v1alpha1.VerbUnbind, v1alpha1.VerbDetach:
			if op.Status.Phase == v1alpha1.PhaseCommitted && op.Status.CompletionTime != nil {
				return fmt.Sprintf("%s%s (uid %s), deleted at %s:", earlier, n.resource(), uid, op.Status.CompletionTime.UTC().Format(time.RFC3339))
			}
		}
	}
	return fmt.Sprintf("%s%s (uid %s), deleted:", earlier, n.resource(), uid)
}

// refusedCreate reports whether op is the refused create of its object
// (a provision, adoption or bind the broker refused): the object was
// never stored.
func refusedCreate(op v1alpha1.BrokerOperation) bool {
	switch op.Spec.Verb {
	case v1alpha1.VerbProvision, v1alpha1.VerbAdopt, v1alpha1.VerbBind:
		return op.Status.Phase == v1alpha1.PhaseFailed
	}
	return false
}

// ofObject are the operations of the object of uid.
func ofObject(ops []v1alpha1.BrokerOperation, uid types.UID) []v1alpha1.BrokerOperation {
	return slices.DeleteFunc(slices.Clone(ops), func(op v1alpha1.BrokerOperation) bool { return op.Spec.Target.UID != uid })
}
