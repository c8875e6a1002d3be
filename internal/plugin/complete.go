package plugin

import (
	"sort"
	"strings"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/lockstep-dev/lockstep/api/v1alpha1"
)

// completion is a function that completes an argument or a flag's value
// from the cluster.
type completion = func(cmd *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective)

// completeFlag registers the completion of a flag's values.
func (s *session) completeFlag(cmd *cobra.Command, flag string, f completion) {
	_ = cmd.RegisterFlagCompletionFunc(flag, f)
}

// completeWith lists names from the cluster that start with toComplete;
// nothing (and no file names) when the cluster cannot be asked.
func (s *session) completeWith(toComplete string, list func(c client.Client, ns string) ([]string, error)) ([]string, cobra.ShellCompDirective) {
	c, ns, err := s.client()
	if err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	names, err := list(c, ns)
	if err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	seen := map[string]bool{}
	var out []string
	for _, n := range names {
		if strings.HasPrefix(n, toComplete) && !seen[n] {
			seen[n] = true
			out = append(out, n)
		}
	}
	sort.Strings(out)
	return out, cobra.ShellCompDirectiveNoFileComp
}

// completePlans completes SERVICE/PLAN.
func (s *session) completePlans(cmd *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
	if len(args) > 0 {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	return s.completeWith(toComplete, func(c client.Client, _ string) ([]string, error) {
		var plans v1alpha1.ServicePlanList
		err := c.List(cmd.Context(), &plans)
		var out []string
		for _, p := range plans.Items {
			out = append(out, p.Spec.ServiceName+"/"+p.Spec.Name)
		}
		return out, err
	})
}

// completePlanNames completes --plan, of the --service given.
func (s *session) completePlanNames(cmd *cobra.Command, _ []string, toComplete string) ([]string, cobra.ShellCompDirective) {
	service, _ := cmd.Flags().GetString("service")
	return s.completeWith(toComplete, func(c client.Client, _ string) ([]string, error) {
		var plans v1alpha1.ServicePlanList
		err := c.List(cmd.Context(), &plans)
		var out []string
		for _, p := range plans.Items {
			if service == "" || p.Spec.ServiceName == service {
				out = append(out, p.Spec.Name)
			}
		}
		return out, err
	})
}

func (s *session) completeServices(cmd *cobra.Command, _ []string, toComplete string) ([]string, cobra.ShellCompDirective) {
	return s.completeWith(toComplete, func(c client.Client, _ string) ([]string, error) {
		var offerings v1alpha1.ServiceOfferingList
		err := c.List(cmd.Context(), &offerings)
		var out []string
		for _, o := range offerings.Items {
			out = append(out, o.Spec.Name)
		}
		return out, err
	})
}

func (s *session) completeBrokers(cmd *cobra.Command, _ []string, toComplete string) ([]string, cobra.ShellCompDirective) {
	return s.completeWith(toComplete, func(c client.Client, _ string) ([]string, error) {
		var brokers v1alpha1.ServiceBrokerList
		err := c.List(cmd.Context(), &brokers)
		var out []string
		for _, b := range brokers.Items {
			out = append(out, b.Name)
		}
		return out, err
	})
}

func (s *session) completeNamespaces(cmd *cobra.Command, _ []string, toComplete string) ([]string, cobra.ShellCompDirective) {
	return s.completeWith(toComplete, func(c client.Client, _ string) ([]string, error) {
		var namespaces corev1.NamespaceList
		err := c.List(cmd.Context(), &namespaces)
		var out []string
		for _, n := range namespaces.Items {
			out = append(out, n.Name)
		}
		return out, err
	})
}

// completeTypedKinds completes --kind: the typed kinds the API server
// serves, lowercased as kubectl takes them.
func (s *session) completeTypedKinds(cmd *cobra.Command, _ []string, toComplete string) ([]string, cobra.ShellCompDirective) {
	return s.completeWith(toComplete, func(client.Client, string) ([]string, error) {
		kinds, err := s.typedKinds()
		var out []string
		for _, k := range kinds {
			out = append(out, k.word())
		}
		return out, err
	})
}

// completeObjects completes the instances (si/NAME, and KIND/NAME of the
// typed kinds) and bindings (sbd/NAME) of the namespace, or only one
// kind's names when kind is set (a ServiceInstance's: its name alone, a
// typed kind's objects as KIND/NAME).
func (s *session) completeObjects(kind v1alpha1.TargetKind) completion {
	return func(cmd *cobra.Command, _ []string, toComplete string) ([]string, cobra.ShellCompDirective) {
		return s.completeWith(toComplete, func(c client.Client, ns string) ([]string, error) {
			var out []string
			if kind != v1alpha1.KindServiceBinding {
				var instances v1alpha1.ServiceInstanceList
				if err := c.List(cmd.Context(), &instances, client.InNamespace(ns)); err != nil {
					return nil, err
				}
				for _, i := range instances.Items {
					out = append(out, prefixed(kind, "si/", i.Name))
				}
			}
			if kind != v1alpha1.KindServiceInstance {
				var bindings v1alpha1.ServiceBindingList
				if err := c.List(cmd.Context(), &bindings, client.InNamespace(ns)); err != nil {
					return nil, err
				}
				for _, b := range bindings.Items {
					out = append(out, prefixed(kind, "sbd/", b.Name))
				}
			}
			if kind != v1alpha1.KindServiceBinding {
				typed, err := s.typedKinds()
				if err != nil {
					return nil, err
				}
				for _, k := range typed {
					list := &unstructured.UnstructuredList{}
					list.SetGroupVersionKind(k.gvk.GroupVersion().WithKind(k.gvk.Kind + "List"))
					if err := c.List(cmd.Context(), list, client.InNamespace(ns)); err != nil {
						return nil, err
					}
					for _, o := range list.Items {
						out = append(out, k.word()+"/"+o.GetName())
					}
				}
			}
			return out, nil
		})
	}
}

// prefixed is name with its kind's prefix unless one kind was asked for.
func prefixed(kind v1alpha1.TargetKind, prefix, name string) string {
	if kind != "" {
		return name
	}
	return prefix + name
}
