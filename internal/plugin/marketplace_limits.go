package plugin

import (
	"context"
	"fmt"
	"io"
	"sort"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/cli-runtime/pkg/printers"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/lockstep-dev/lockstep/api/v1alpha1"
)

// The per-plan limits of the brokers' access rules, and a namespace's use
// of each, under the marketplace's table. Each ServicePlan lists the
// limits that count its instances (spec.access.limits, written by
// lockstep from the rules), so the plans a limit counts are the plans
// that list it; the namespace's instances (ServiceInstances and objects
// of typed kinds) on those plans are its use. Whether a limit applies to
// the namespace needs its labels, which not every user may read: then the
// row says which namespaces it applies to.

// limitRow is one limit, and its use in one namespace.
type limitRow struct {
	broker string
	v1alpha1.PlanLimitSummary
	// plans are the plans it counts, "service/plan".
	plans map[string]bool
	// applies says whether it applies to the namespace.
	applies string
	used    int
}

// instanceUse is an instance of the namespace: its broker, service, plan.
type instanceUse struct{ broker, service, plan string }

// limitRows are the limits the plans list, with their use by instances;
// nsLabels are the namespace's labels, nil when they could not be read.
func limitRows(plans []v1alpha1.ServicePlan, instances []instanceUse, nsLabels map[string]string) []limitRow {
	byKey := map[string]*limitRow{}
	var rows []*limitRow
	for _, p := range plans {
		for _, l := range p.Spec.Access.Limits {
			key := p.Spec.BrokerName + "/" + l.Rule + "/" + l.Name
			r := byKey[key]
			if r == nil {
				r = &limitRow{broker: p.Spec.BrokerName, PlanLimitSummary: l, plans: map[string]bool{}}
				byKey[key] = r
				rows = append(rows, r)
			}
			r.plans[p.Spec.ServiceName+"/"+p.Spec.Name] = true
		}
	}
	out := make([]limitRow, 0, len(rows))
	for _, r := range rows {
		for _, u := range instances {
			if u.broker == r.broker && r.plans[u.service+"/"+u.plan] {
				r.used++
			}
		}
		r.applies = applies(r.Namespaces, nsLabels)
		out = append(out, *r)
	}
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].broker != out[j].broker {
			return out[i].broker < out[j].broker
		}
		return out[i].Rule+"/"+out[i].Name < out[j].Rule+"/"+out[j].Name
	})
	return out
}

// applies says whether a limit for namespaces (a selector, or "all")
// applies to a namespace with these labels; nil labels: not known.
func applies(namespaces string, nsLabels map[string]string) string {
	if namespaces == "all" {
		return "yes"
	}
	sel, err := labels.Parse(namespaces)
	if nsLabels == nil || err != nil {
		return "if " + namespaces
	}
	if sel.Matches(labels.Set(nsLabels)) {
		return "yes"
	}
	return "no"
}

// printLimits writes the limits of plans (of broker only, unless it is
// empty) and their use in namespace ns; nothing when no plan has a limit.
func (s *session) printLimits(ctx context.Context, c client.Client, ns string, plans []v1alpha1.ServicePlan, broker string) error {
	limited := false
	for _, p := range plans {
		limited = limited || (len(p.Spec.Access.Limits) > 0 && (broker == "" || p.Spec.BrokerName == broker))
	}
	if !limited {
		return nil
	}
	meta := &metav1.PartialObjectMetadata{}
	meta.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Namespace"))
	var nsLabels map[string]string
	if err := c.Get(ctx, client.ObjectKey{Name: ns}, meta); err == nil {
		nsLabels = meta.Labels
		if nsLabels == nil {
			nsLabels = map[string]string{}
		}
	}
	instances, err := namespaceInstances(ctx, c, ns)
	if err != nil {
		return err
	}
	rows := limitRows(plans, instances, nsLabels)
	if broker != "" {
		kept := rows[:0]
		for _, r := range rows {
			if r.broker == broker {
				kept = append(kept, r)
			}
		}
		rows = kept
	}
	fmt.Fprintf(s.out(), "\nPer-plan limits of the brokers' access rules, and their use in namespace %s:\n", ns)
	return writeLimits(s.out(), rows)
}

func writeLimits(out io.Writer, rows []limitRow) error {
	w := printers.GetNewTabWriter(out)
	fmt.Fprintln(w, "BROKER\tRULE\tLIMIT\tAPPLIES\tUSED\tMAX\tCOUNTS")
	for _, r := range rows {
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%d\t%s\t%s\n", r.broker, r.Rule, r.Name, r.applies, r.used, strconv.Itoa(int(r.MaxInstances)), r.Counts)
	}
	return w.Flush()
}

// namespaceInstances are the instances of namespace ns not being deleted:
// its ServiceInstances and the objects of every typed kind the
// marketplace shows.
func namespaceInstances(ctx context.Context, c client.Client, ns string) ([]instanceUse, error) {
	var out []instanceUse
	var sis v1alpha1.ServiceInstanceList
	if err := c.List(ctx, &sis, client.InNamespace(ns)); err != nil {
		return nil, fmt.Errorf("listing the ServiceInstances of namespace %s: %w", ns, err)
	}
	for _, si := range sis.Items {
		if si.DeletionTimestamp == nil {
			out = append(out, instanceUse{broker: si.Spec.BrokerName, service: si.Spec.ServiceName, plan: si.Spec.PlanName})
		}
	}
	var offerings v1alpha1.ServiceOfferingList
	if err := c.List(ctx, &offerings); err != nil {
		return nil, fmt.Errorf("listing the ServiceOfferings: %w", err)
	}
	for _, o := range offerings.Items {
		k := o.Status.TypedKind
		if k == nil || !k.Established {
			continue
		}
		gv, err := schema.ParseGroupVersion(k.APIVersion)
		if err != nil {
			continue
		}
		list := &unstructured.UnstructuredList{}
		list.SetGroupVersionKind(gv.WithKind(k.Kind + "List"))
		if err := c.List(ctx, list, client.InNamespace(ns)); err != nil {
			continue // a kind the user may not list counts nothing here
		}
		for _, u := range list.Items {
			if u.GetDeletionTimestamp() != nil {
				continue
			}
			plan, _, _ := unstructured.NestedString(u.Object, "spec", "plan")
			out = append(out, instanceUse{broker: o.Spec.BrokerName, service: o.Spec.Name, plan: plan})
		}
	}
	return out, nil
}
