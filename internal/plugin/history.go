package plugin

import (
	"context"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/cli-runtime/pkg/printers"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/lockstep-dev/lockstep/api/v1alpha1"
)

func (s *session) historyCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "history si/NAME | sbd/NAME",
		Short: "Show the object's BrokerOperations as a timeline: every change lockstep carried to its broker, who asked, and the answer",
		Long: "history lists the BrokerOperations of an instance or binding, oldest first: when, what (provision, update, " +
			"deprovision, bind, unbind, adopt, detach), who asked, where it stands (Committed: the broker and the API server " +
			"agree; Failed: the broker refused, nothing changed; InProgress: the broker still works on it) and the " +
			"broker's answer. Records of a delete in a namespace that was being deleted are in lockstep's namespace: " +
			"they are shown too when you may read them.",
		Example:           "  kubectl lockstep history si/db\n  kubectl lockstep history sbd/db-creds -n team-a",
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: s.completeObjects(""),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, ns, err := s.client()
			if err != nil {
				return err
			}
			kind, name, err := s.target(cmd.Context(), c, ns, args[0])
			if err != nil {
				return err
			}
			ops, err := s.operations(cmd.Context(), c, kind, ns, name)
			if err != nil {
				return err
			}
			if len(ops) == 0 {
				fmt.Fprintf(s.out(), "No BrokerOperations of %s/%s in namespace %s.\n", strings.ToLower(string(kind)), name, ns)
				return nil
			}
			return timeline(s.out(), ops)
		},
	}
}

// target is the kind and name of the object a user named; an object that
// is gone can still be named as KIND/NAME (its records stay for the
// retention).
func (s *session) target(ctx context.Context, c client.Client, ns, arg string) (v1alpha1.TargetKind, string, error) {
	if k, name, ok := strings.Cut(arg, "/"); ok {
		if kind, known := kinds[strings.ToLower(k)]; known && name != "" {
			return kind, name, nil
		}
	}
	b, err := resolve(ctx, c, ns, arg)
	if err != nil {
		return "", "", err
	}
	return b.kind, b.obj.GetName(), nil
}

// operations are the BrokerOperations of the object kind/name in ns,
// oldest first: those next to it and those in lockstep's namespace
// (deletes while its namespace was being deleted) when readable.
func (s *session) operations(ctx context.Context, c client.Client, kind v1alpha1.TargetKind, ns, name string) ([]v1alpha1.BrokerOperation, error) {
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
			if target.Kind == kind && target.Name == name && targetNS == ns {
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

// timeline prints operations, one a line, in UTC; then the answer of each
// operation that has one, under its name.
func timeline(out io.Writer, ops []v1alpha1.BrokerOperation) error {
	w := printers.GetNewTabWriter(out)
	fmt.Fprintln(w, "TIME\tVERB\tUSER\tPHASE\tHTTP\tOPERATION")
	var answers []string
	for _, op := range ops {
		http := "-"
		if op.Status.HTTPStatus != 0 {
			http = fmt.Sprint(op.Status.HTTPStatus)
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\n", started(op).UTC().Format(time.RFC3339), op.Spec.Verb, op.Spec.Requester.Username,
			phaseOf(&op), http, op.Name)
		answer := op.Status.Description
		if n := op.Status.TargetInSync; n != nil && n.Reason != "" {
			answer = strings.TrimSpace(answer + " (InSync " + string(n.Status) + ": " + n.Reason + ")")
		}
		if answer != "" {
			answers = append(answers, op.Name+": "+answer)
		}
	}
	if err := w.Flush(); err != nil {
		return err
	}
	if len(answers) > 0 {
		fmt.Fprintf(out, "\n%s\n", strings.Join(answers, "\n"))
	}
	return nil
}
