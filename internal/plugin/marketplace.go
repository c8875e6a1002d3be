package plugin

import (
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/printers"

	"github.com/lockstep-dev/lockstep/api/v1alpha1"
)

func (s *session) marketplaceCommand() *cobra.Command {
	var broker, service string
	cmd := &cobra.Command{
		Use:     "marketplace",
		Aliases: []string{"mp"},
		Short:   "List the services and plans of every registered broker, with prices and parameters",
		Long: "marketplace lists every plan of every ServiceBroker's catalog (lockstep's ServicePlans): its service, " +
			"price, whether it can be bound, and the parameters of its create schema; a create-only parameter " +
			"(in the create schema, not in the update schema) is marked with *. Then the per-plan limits of the " +
			"brokers' access rules, with the namespace's use of each (-n NAMESPACE, or the kubeconfig's).",
		Example: "  kubectl lockstep marketplace\n  kubectl lockstep marketplace --broker embedded --service quick",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, ns, err := s.client()
			if err != nil {
				return err
			}
			var plans v1alpha1.ServicePlanList
			if err := c.List(cmd.Context(), &plans); err != nil {
				return err
			}
			all := append([]v1alpha1.ServicePlan(nil), plans.Items...)
			rows := plans.Items[:0]
			for _, p := range plans.Items {
				if (broker == "" || p.Spec.BrokerName == broker) && (service == "" || p.Spec.ServiceName == service) {
					rows = append(rows, p)
				}
			}
			if len(rows) == 0 {
				fmt.Fprintln(s.out(), "No plans found: register a ServiceBroker (kubectl get servicebrokers shows those there are).")
				return nil
			}
			sort.Slice(rows, func(i, j int) bool { return rows[i].Name < rows[j].Name })
			w := printers.GetNewTabWriter(s.out())
			fmt.Fprintln(w, "SERVICE\tPLAN\tBROKER\tPRICE\tBINDABLE\tPARAMETERS\tDESCRIPTION")
			createOnly := false
			for _, p := range rows {
				plan := p.Spec.Name
				if p.Status.RemovedFromCatalog {
					plan += " (removed)"
				}
				params := make([]string, 0, len(p.Spec.Parameters))
				for _, param := range p.Spec.Parameters {
					name := param.Name
					if param.CreateOnly {
						name += "*"
						createOnly = true
					}
					params = append(params, name)
				}
				fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", p.Spec.ServiceName, plan, p.Spec.BrokerName, price(p),
					yesNo(p.Spec.Bindable), orNone(strings.Join(params, ",")), p.Spec.Description)
			}
			if err := w.Flush(); err != nil {
				return err
			}
			if createOnly {
				fmt.Fprintln(s.out(), "\n* create-only: set it when you provision, it cannot change afterwards.")
			}
			if err := s.printLimits(cmd.Context(), c, ns, all, broker); err != nil {
				return err
			}
			fmt.Fprintln(s.out(), "kubectl lockstep describe plan SERVICE/PLAN shows a plan's parameters.")
			return nil
		},
	}
	cmd.Flags().StringVar(&broker, "broker", "", "only the plans of this ServiceBroker")
	cmd.Flags().StringVar(&service, "service", "", "only the plans of this service")
	s.completeFlag(cmd, "broker", s.completeBrokers)
	s.completeFlag(cmd, "service", s.completeServices)
	return cmd
}

// price is what a plan costs: "free", its costs from the catalog's plan
// metadata (OSB's "costs": amounts per unit), or "not free".
func price(p v1alpha1.ServicePlan) string {
	if p.Spec.Free {
		return "free"
	}
	if p.Spec.Metadata != nil {
		var meta struct {
			Costs []struct {
				Amount map[string]float64 `json:"amount"`
				Unit   string             `json:"unit"`
			} `json:"costs"`
		}
		if json.Unmarshal(p.Spec.Metadata.Raw, &meta) == nil && len(meta.Costs) > 0 {
			var costs []string
			for _, c := range meta.Costs {
				currencies := make([]string, 0, len(c.Amount))
				for cur := range c.Amount {
					currencies = append(currencies, cur)
				}
				sort.Strings(currencies)
				for _, cur := range currencies {
					costs = append(costs, fmt.Sprintf("%s %s/%s", strconv.FormatFloat(c.Amount[cur], 'f', 2, 64),
						strings.ToUpper(cur), strings.ToLower(c.Unit)))
				}
			}
			return strings.Join(costs, " + ")
		}
	}
	return "not free"
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

func orNone(s string) string {
	if s == "" {
		return "<none>"
	}
	return s
}
