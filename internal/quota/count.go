package quota

import (
	"fmt"
	"sort"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// ResourceName is the object count of resource in a ResourceQuota:
// count/<resource>.<group>, as kube-apiserver names it.
func ResourceName(gr schema.GroupResource) corev1.ResourceName {
	if gr.Group == "" {
		return corev1.ResourceName("count/" + gr.Resource)
	}
	return corev1.ResourceName("count/" + gr.Resource + "." + gr.Group)
}

// Covering returns the quotas that count a create of the resource named
// name, in name order: those whose status.hard has it, and no scopes.
// kube-apiserver reads status.hard, which the resource quota controller
// writes from spec.hard, so a quota it has not seen yet limits nothing;
// and its object count evaluator matches no scope, so a quota with scopes
// or a scope selector never counts a custom resource.
func Covering(quotas []corev1.ResourceQuota, name corev1.ResourceName) []corev1.ResourceQuota {
	var out []corev1.ResourceQuota
	for _, q := range quotas {
		if _, ok := q.Status.Hard[name]; !ok {
			continue
		}
		if len(q.Spec.Scopes) > 0 || (q.Spec.ScopeSelector != nil && len(q.Spec.ScopeSelector.MatchExpressions) > 0) {
			continue
		}
		out = append(out, q)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// Refusal is why kube-apiserver would refuse a create: the quota, and
// either its unknown status or its limit and use.
type Refusal struct {
	// Quota is the ResourceQuota's name.
	Quota string
	// Resource is the object count it limits.
	Resource corev1.ResourceName
	// Unknown is true when the quota records no use of the resource yet.
	Unknown bool
	// Hard is the quota's limit (status.hard).
	Hard resource.Quantity
	// Used is the use the quota records (status.used).
	Used resource.Quantity
	// InFlight is how many creates through this replica are counted
	// besides Used (allowed a moment ago, or still being decided).
	InFlight int64
}

// Error is kube-apiserver's own message for the refusal.
func (r *Refusal) Error() string {
	if r.Unknown {
		return fmt.Sprintf("status unknown for quota: %s, resources: %s", r.Quota, r.Resource)
	}
	used := r.Used.DeepCopy()
	used.Add(*resource.NewQuantity(r.InFlight, resource.DecimalSI))
	return fmt.Sprintf("exceeded quota: %s, requested: %s=1, used: %s=%s, limited: %s=%s",
		r.Quota, r.Resource, r.Resource, used.String(), r.Resource, r.Hard.String())
}

// Check decides one more object counted as name against quotas: nil when
// it fits in every quota that covers it, or the first refusal, in name
// order, an unknown status before any limit (as kube-apiserver reports
// them). inFlight(q) is how many creates to count besides q's
// status.used; nil counts none.
func Check(quotas []corev1.ResourceQuota, name corev1.ResourceName, inFlight func(q *corev1.ResourceQuota) int64) *Refusal {
	covering := Covering(quotas, name)
	for i := range covering {
		q := &covering[i]
		if _, ok := q.Status.Used[name]; !ok {
			return &Refusal{Quota: q.Name, Resource: name, Unknown: true}
		}
	}
	for i := range covering {
		q := &covering[i]
		hard, used := q.Status.Hard[name], q.Status.Used[name]
		var pending int64
		if inFlight != nil {
			pending = inFlight(q)
		}
		next := used.DeepCopy()
		next.Add(*resource.NewQuantity(pending+1, resource.DecimalSI))
		if next.Cmp(hard) > 0 {
			return &Refusal{Quota: q.Name, Resource: name, Hard: hard, Used: used, InFlight: pending}
		}
	}
	return nil
}
