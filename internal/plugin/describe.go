package plugin

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/cli-runtime/pkg/printers"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/lockstep-dev/lockstep/api/v1alpha1"
	"github.com/lockstep-dev/lockstep/internal/marketplace"
)

func (s *session) describeCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "describe",
		Short: "Describe a plan: its parameters as a table, or its schemas as YAML",
	}
	var broker, output string
	plan := &cobra.Command{
		Use:   "plan SERVICE/PLAN | BROKER.SERVICE.PLAN",
		Short: "Show a plan's parameters (create, update, bind) as tables; -o yaml prints its three schemas",
		Example: "  kubectl lockstep describe plan quick/small\n" +
			"  kubectl lockstep describe plan embedded.quick.small -o yaml",
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: s.completePlans,
		RunE: func(cmd *cobra.Command, args []string) error {
			c, _, err := s.client()
			if err != nil {
				return err
			}
			p, err := findPlan(cmd.Context(), c, args[0], broker)
			if err != nil {
				return err
			}
			switch output {
			case "":
				return describePlan(s.out(), p)
			case "yaml":
				return planSchemas(s.out(), p)
			default:
				return fmt.Errorf("--output %q: the plan is shown as a table, or its schemas with -o yaml", output)
			}
		},
	}
	plan.Flags().StringVar(&broker, "broker", "", "the ServiceBroker, when several offer SERVICE/PLAN")
	plan.Flags().StringVarP(&output, "output", "o", "", "yaml: the plan's schemas (instanceCreate, instanceUpdate, bindingCreate) as the broker gave them")
	s.completeFlag(plan, "broker", s.completeBrokers)
	cmd.AddCommand(plan)
	return cmd
}

// findPlan finds the ServicePlan a user named: its object name
// (BROKER.SERVICE.PLAN) or SERVICE/PLAN, at broker when given.
func findPlan(ctx context.Context, c client.Client, arg, broker string) (*v1alpha1.ServicePlan, error) {
	service, name, ok := strings.Cut(arg, "/")
	if !ok {
		var p v1alpha1.ServicePlan
		err := c.Get(ctx, client.ObjectKey{Name: arg}, &p)
		if apierrors.IsNotFound(err) {
			return nil, fmt.Errorf("no plan %q: name it SERVICE/PLAN or BROKER.SERVICE.PLAN (kubectl lockstep marketplace lists them)", arg)
		}
		return &p, err
	}
	var plans v1alpha1.ServicePlanList
	if err := c.List(ctx, &plans); err != nil {
		return nil, err
	}
	var found []*v1alpha1.ServicePlan
	for i, p := range plans.Items {
		if p.Spec.ServiceName == service && p.Spec.Name == name && (broker == "" || p.Spec.BrokerName == broker) {
			found = append(found, &plans.Items[i])
		}
	}
	switch len(found) {
	case 0:
		return nil, fmt.Errorf("no plan %q of service %q%s (kubectl lockstep marketplace lists them)", name, service, atBroker(broker))
	case 1:
		return found[0], nil
	}
	brokers := make([]string, 0, len(found))
	for _, p := range found {
		brokers = append(brokers, p.Spec.BrokerName)
	}
	return nil, fmt.Errorf("brokers %s all offer %s: say which with --broker", strings.Join(brokers, ", "), arg)
}

func atBroker(broker string) string {
	if broker == "" {
		return ""
	}
	return " at broker " + broker
}

// describePlan prints a plan for a person: what it is, then its
// parameters as tables.
func describePlan(out io.Writer, p *v1alpha1.ServicePlan) error {
	w := printers.GetNewTabWriter(out)
	fmt.Fprintf(w, "Plan:\t%s\n", p.Spec.Name)
	fmt.Fprintf(w, "Service:\t%s\n", p.Spec.ServiceName)
	fmt.Fprintf(w, "Broker:\t%s\n", p.Spec.BrokerName)
	fmt.Fprintf(w, "Description:\t%s\n", p.Spec.Description)
	fmt.Fprintf(w, "Price:\t%s\n", price(*p))
	fmt.Fprintf(w, "Bindable:\t%s\n", yesNo(p.Spec.Bindable))
	fmt.Fprintf(w, "Plan change:\t%s\n", map[bool]string{true: "yes, to and from other updateable plans", false: "no"}[p.Spec.PlanUpdateable])
	if p.Status.RemovedFromCatalog {
		fmt.Fprintf(w, "Catalog:\tremoved from the broker's catalog: takes no new instances\n")
	}
	if c := meta.FindStatusCondition(p.Status.Conditions, v1alpha1.ConditionSchemasUsable); c != nil && c.Status != "True" {
		fmt.Fprintf(w, "Schemas:\tnot usable by lockstep (%s): %s\n", c.Reason, c.Message)
	}
	if err := w.Flush(); err != nil {
		return err
	}

	fmt.Fprintln(out, "\nParameters (create schema):")
	create := planSchema(p, func(s *v1alpha1.PlanSchemas) *runtime.RawExtension { return s.InstanceCreate })
	if err := parameterTable(out, p.Spec.Parameters, marketplace.Constraints(create), true); err != nil {
		return err
	}
	var updateable []string
	for _, param := range marketplace.Parameters(planSchema(p, func(s *v1alpha1.PlanSchemas) *runtime.RawExtension { return s.InstanceUpdate }), nil) {
		updateable = append(updateable, param.Name)
	}
	fmt.Fprintf(out, "\nAn update may change: %s\n", orNone(strings.Join(updateable, ", ")))
	fmt.Fprintln(out, "\nBinding parameters (bind schema):")
	bind := planSchema(p, func(s *v1alpha1.PlanSchemas) *runtime.RawExtension { return s.BindingCreate })
	return parameterTable(out, marketplace.Parameters(bind, nil), marketplace.Constraints(bind), false)
}

// planSchema returns one of a plan's schemas as raw JSON (nil when absent).
func planSchema(p *v1alpha1.ServicePlan, which func(*v1alpha1.PlanSchemas) *runtime.RawExtension) json.RawMessage {
	if p.Spec.Schemas == nil {
		return nil
	}
	if raw := which(p.Spec.Schemas); raw != nil && len(raw.Raw) > 0 {
		return raw.Raw
	}
	return nil
}

// parameterTable prints parameters, sorted by name, indented, each with
// what its schema says: type, whether it is required (and create-only),
// its default, the values it may take, the constraints its values keep
// (constraints, by name: marketplace.Constraints) and its description.
func parameterTable(out io.Writer, params []v1alpha1.PlanParameter, constraints map[string]string, createOnly bool) error {
	if len(params) == 0 {
		fmt.Fprintln(out, "  <none>")
		return nil
	}
	params = append([]v1alpha1.PlanParameter(nil), params...)
	sort.Slice(params, func(i, j int) bool { return params[i].Name < params[j].Name })
	w := printers.GetNewTabWriter(out)
	header := "  NAME\tTYPE\tREQUIRED\tDEFAULT\tVALUES\tCONSTRAINTS\tDESCRIPTION"
	if createOnly {
		header = "  NAME\tTYPE\tREQUIRED\tCREATE-ONLY\tDEFAULT\tVALUES\tCONSTRAINTS\tDESCRIPTION"
	}
	fmt.Fprintln(w, header)
	for _, p := range params {
		cols := []string{"  " + p.Name, p.Type, yesNo(p.Required)}
		if createOnly {
			cols = append(cols, yesNo(p.CreateOnly))
		}
		cols = append(cols, p.Default, strings.Join(p.Values, " "), constraints[p.Name], p.Description)
		fmt.Fprintln(w, strings.Join(cols, "\t"))
	}
	return w.Flush()
}

// planSchemas prints a plan's three schemas as YAML.
func planSchemas(out io.Writer, p *v1alpha1.ServicePlan) error {
	doc := map[string]any{}
	for name, raw := range map[string]json.RawMessage{
		"instanceCreate": planSchema(p, func(s *v1alpha1.PlanSchemas) *runtime.RawExtension { return s.InstanceCreate }),
		"instanceUpdate": planSchema(p, func(s *v1alpha1.PlanSchemas) *runtime.RawExtension { return s.InstanceUpdate }),
		"bindingCreate":  planSchema(p, func(s *v1alpha1.PlanSchemas) *runtime.RawExtension { return s.BindingCreate }),
	} {
		if raw == nil {
			continue
		}
		var v any
		if err := json.Unmarshal(raw, &v); err != nil {
			return fmt.Errorf("the plan's %s schema: %w", name, err)
		}
		doc[name] = v
	}
	b, err := yaml.Marshal(doc)
	if err != nil {
		return err
	}
	_, err = out.Write(b)
	return err
}
