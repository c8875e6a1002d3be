package admission

import (
	"context"
	"fmt"
	"net/http"
	"sort"
	"strings"

	admissionv1 "k8s.io/api/admission/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/lockstep-dev/lockstep/api/v1alpha1"
)

// BrokerGuard refuses to delete a ServiceBroker while lockstep manages
// instances or bindings at it: without the ServiceBroker they could never
// be deprovisioned or unbound, so they could never be deleted. Objects
// whose reconcile policy keeps the broker's resource on delete
// (detach-on-delete, observe) do not hold the ServiceBroker.
type BrokerGuard struct {
	// Reader reads instances and bindings from the manager's cache.
	Reader client.Reader
}

// maxNamed is how many objects a refusal names; it counts them all.
const maxNamed = 5

// Handle implements admission.Handler.
func (g *BrokerGuard) Handle(ctx context.Context, req admission.Request) admission.Response {
	if req.Operation != admissionv1.Delete {
		return admission.Allowed("")
	}
	name := req.Name
	var instances v1alpha1.ServiceInstanceList
	if err := g.Reader.List(ctx, &instances); err != nil {
		return admission.Errored(http.StatusServiceUnavailable, fmt.Errorf("could not list the instances of ServiceBroker %q: %w; nothing was changed: retry", name, err))
	}
	var bindings v1alpha1.ServiceBindingList
	if err := g.Reader.List(ctx, &bindings); err != nil {
		return admission.Errored(http.StatusServiceUnavailable, fmt.Errorf("could not list the bindings of ServiceBroker %q: %w; nothing was changed: retry", name, err))
	}
	atBroker := map[string]bool{} // namespace/name of the instances at this broker
	var held []string
	for _, si := range instances.Items {
		if si.Spec.BrokerName != name {
			continue
		}
		atBroker[si.Namespace+"/"+si.Name] = true
		if !v1alpha1.KeepsBrokerOnDelete(&si) {
			held = append(held, "serviceinstance "+si.Namespace+"/"+si.Name)
		}
	}
	for _, b := range bindings.Items {
		if atBroker[b.Namespace+"/"+b.Spec.InstanceName] && !v1alpha1.KeepsBrokerOnDelete(&b) {
			held = append(held, "servicebinding "+b.Namespace+"/"+b.Name)
		}
	}
	if len(held) == 0 {
		return admission.Allowed("")
	}
	sort.Strings(held)
	named := held
	more := ""
	if len(held) > maxNamed {
		named, more = held[:maxNamed], fmt.Sprintf(" and %d more", len(held)-maxNamed)
	}
	return admission.Response{AdmissionResponse: admissionResponse(http.StatusConflict, "Conflict", fmt.Sprintf(
		"ServiceBroker %q cannot be deleted: lockstep manages %d object(s) at it (%s%s), which could then never be deprovisioned or unbound; "+
			"delete them first, or let the broker keep them: kubectl annotate <kind> <name> -n <namespace> %s=%s; the ServiceBroker stays",
		name, len(held), strings.Join(named, ", "), more, v1alpha1.AnnotationReconcilePolicy, v1alpha1.PolicyDetachOnDelete))}
}
