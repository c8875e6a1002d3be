package plugin

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/lockstep-dev/lockstep/api/v1alpha1"
)

func (s *session) detachCommand() *cobra.Command {
	var all bool
	cmd := &cobra.Command{
		Use:   "detach KIND/NAME... | --all",
		Short: "Let go of objects at their broker: deleting them then leaves what the broker holds in place",
		Long: "detach sets the reconcile policy " + string(v1alpha1.PolicyDetachOnDelete) + " (annotation " +
			v1alpha1.AnnotationReconcilePolicy + "): changes still go to the broker, but a delete only removes the " +
			"object. It is a change of metadata, always allowed, also when the broker is down or its ServiceBroker " +
			"is gone: the way out of a delete the broker refuses, and of a namespace stuck on one.",
		Example: "  kubectl lockstep detach si/db\n  kubectl lockstep detach quick/orders\n  kubectl lockstep detach --all -n team-a",
		RunE: func(cmd *cobra.Command, args []string) error {
			if all == (len(args) > 0) {
				return fmt.Errorf("detach takes objects (KIND/NAME: si/NAME, sbd/NAME, or a typed kind's) or --all, not both")
			}
			c, ns, err := s.client()
			if err != nil {
				return err
			}
			var objs []brokered
			if all {
				if objs, err = s.everyObject(cmd.Context(), c, ns); err != nil {
					return err
				}
				if len(objs) == 0 {
					fmt.Fprintf(s.out(), "No instance or binding in namespace %s.\n", ns)
					return nil
				}
			}
			for _, arg := range args {
				b, err := s.resolve(cmd.Context(), c, ns, arg)
				if err != nil {
					return err
				}
				objs = append(objs, b)
			}
			for _, b := range objs {
				if err := s.detach(cmd.Context(), c, b); err != nil {
					return err
				}
			}
			return nil
		},
		ValidArgsFunction: s.completeObjects(""),
	}
	cmd.Flags().BoolVar(&all, "all", false, "every instance (of every kind) and binding of the namespace")
	return cmd
}

// everyObject lists the instances, of every kind, and the bindings of a
// namespace: the bindings first, as the namespace controller would best
// delete them.
func (s *session) everyObject(ctx context.Context, c client.Client, ns string) ([]brokered, error) {
	var out []brokered
	var bindings v1alpha1.ServiceBindingList
	if err := c.List(ctx, &bindings, client.InNamespace(ns)); err != nil {
		return nil, err
	}
	for i := range bindings.Items {
		out = append(out, view(&bindings.Items[i]))
	}
	var instances v1alpha1.ServiceInstanceList
	if err := c.List(ctx, &instances, client.InNamespace(ns)); err != nil {
		return nil, err
	}
	for i := range instances.Items {
		out = append(out, view(&instances.Items[i]))
	}
	typed, err := s.typedKinds()
	if err != nil {
		return nil, err
	}
	for _, kind := range typed {
		list := &unstructured.UnstructuredList{}
		list.SetGroupVersionKind(kind.gvk.GroupVersion().WithKind(kind.gvk.Kind + "List"))
		if err := c.List(ctx, list, client.InNamespace(ns)); err != nil {
			return nil, err
		}
		for i := range list.Items {
			out = append(out, view(&list.Items[i]))
		}
	}
	return out, nil
}

// detach annotates one object detach-on-delete (a merge patch of its
// annotations: a metadata-only update, which lockstep always allows).
func (s *session) detach(ctx context.Context, c client.Client, b brokered) error {
	policy, _ := v1alpha1.PolicyOf(b.obj)
	if policy == v1alpha1.PolicyDetachOnDelete || policy == v1alpha1.PolicyObserve {
		fmt.Fprintf(s.out(), "%s is already detached (%s)\n", b.resource(), policy)
		return nil
	}
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]string{
		v1alpha1.AnnotationReconcilePolicy: string(v1alpha1.PolicyDetachOnDelete)}}})
	if err != nil {
		return err
	}
	if err := c.Patch(ctx, b.obj, client.RawPatch("application/merge-patch+json", patch)); err != nil {
		return err
	}
	fmt.Fprintf(s.out(), "%s detached: deleting it leaves what its broker holds in place\n", b.resource())
	return nil
}
