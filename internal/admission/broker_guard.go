package admission

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sort"
	"strconv"
	"strings"

	admissionv1 "k8s.io/api/admission/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/lockstep-dev/lockstep/api/v1alpha1"
	"github.com/lockstep-dev/lockstep/internal/marketplace"
	"github.com/lockstep-dev/lockstep/internal/typed/inuse"
)

// BrokerGuard refuses to delete a ServiceBroker while lockstep manages
// instances or bindings at it: without the ServiceBroker they could never
// be deprovisioned or unbound, so they could never be deleted. Objects
// whose reconcile policy keeps the broker's resource on delete
// (detach-on-delete, observe) do not hold the ServiceBroker.
//
// It also refuses a change of spec.typedKinds, or the delete, that takes a
// typed kind from a service while objects of the kind remain: its CRD
// could not go, and lockstep keeps it (never deleting their objects with
// it), so the change would not be carried out; and one that gives a kind
// a name another resource or typed kind has (broker_names.go).
//
// And it refuses a ServiceBroker whose credentials lockstep may not use
// (brokerCredentials).
type BrokerGuard struct {
	// Reader reads instances, bindings and ServiceOfferings from the
	// manager's cache.
	Reader client.Reader
	// Objects lists the objects of typed kinds.
	Objects dynamic.Interface
	// Discovery lists the resources the API server serves, whose names
	// spec.typedKinds may not give a kind (broker_names.go); nil checks
	// only the other typed kinds.
	Discovery discovery.DiscoveryInterface
	// Namespace is lockstep's own namespace: the only one a broker's
	// credentials may come from.
	Namespace string
	// Access, when set, is asked whether the writer of a ServiceBroker may
	// get the Secret its spec.authSecretRef names.
	Access Authorizer
}

// maxNamed is how many objects a refusal names; it counts them all.
const maxNamed = 5

// Handle implements admission.Handler.
func (g *BrokerGuard) Handle(ctx context.Context, req admission.Request) admission.Response {
	switch req.Operation {
	case admissionv1.Create:
		var cur v1alpha1.ServiceBroker
		if err := json.Unmarshal(req.Object.Raw, &cur); err != nil {
			return admission.Errored(http.StatusBadRequest, fmt.Errorf("decoding the ServiceBroker: %w", err))
		}
		if resp := g.brokerCredentials(ctx, req.UserInfo, nil, &cur); !resp.Allowed {
			return resp
		}
		return g.namesTaken(ctx, nil, &cur)
	case admissionv1.Delete:
		if resp := g.heldByObjects(ctx, req.Name); !resp.Allowed {
			return resp
		}
		return g.heldByTypedObjects(ctx, req.Name, nil)
	case admissionv1.Update:
		var old, cur v1alpha1.ServiceBroker
		if err := json.Unmarshal(req.OldObject.Raw, &old); err != nil {
			return admission.Errored(http.StatusBadRequest, fmt.Errorf("decoding the ServiceBroker as it was: %w", err))
		}
		if err := json.Unmarshal(req.Object.Raw, &cur); err != nil {
			return admission.Errored(http.StatusBadRequest, fmt.Errorf("decoding the ServiceBroker: %w", err))
		}
		if cur.DeletionTimestamp != nil {
			return admission.Allowed("")
		}
		if resp := g.brokerCredentials(ctx, req.UserInfo, &old, &cur); !resp.Allowed {
			return resp
		}
		if equality.Semantic.DeepEqual(old.Spec.TypedKinds, cur.Spec.TypedKinds) {
			return admission.Allowed("")
		}
		if resp := g.namesTaken(ctx, &old, &cur); !resp.Allowed {
			return resp
		}
		return g.heldByTypedObjects(ctx, req.Name, &cur)
	}
	return admission.Allowed("")
}

// heldByObjects refuses the delete of ServiceBroker name while lockstep
// manages instances or bindings at it.
func (g *BrokerGuard) heldByObjects(ctx context.Context, name string) admission.Response {
	var instances v1alpha1.ServiceInstanceList
	if err := g.Reader.List(ctx, &instances); err != nil {
		return admission.Errored(http.StatusServiceUnavailable, fmt.Errorf("could not list the instances of ServiceBroker %q: %w; nothing was changed: retry", name, err))
	}
	var bindings v1alpha1.ServiceBindingList
	if err := g.Reader.List(ctx, &bindings); err != nil {
		return admission.Errored(http.StatusServiceUnavailable, fmt.Errorf("could not list the bindings of ServiceBroker %q: %w; nothing was changed: retry", name, err))
	}
	atBroker := map[string]bool{} // namespace/name of the ServiceInstances at this broker
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
		// A binding of a typed instance holds the broker through its
		// instance, which heldByTypedObjects counts.
		if b.Spec.InstanceKind == "" && atBroker[b.Namespace+"/"+b.Spec.InstanceName] && !v1alpha1.KeepsBrokerOnDelete(&b) {
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

// heldByTypedObjects refuses a change of ServiceBroker name to cur (nil:
// its delete) that takes a typed kind from a service of the broker while
// objects of the kind remain, naming some of them.
func (g *BrokerGuard) heldByTypedObjects(ctx context.Context, name string, cur *v1alpha1.ServiceBroker) admission.Response {
	var offerings v1alpha1.ServiceOfferingList
	if err := g.Reader.List(ctx, &offerings); err != nil {
		return admission.Errored(http.StatusServiceUnavailable, fmt.Errorf("could not list the ServiceOfferings of ServiceBroker %q: %w; nothing was changed: retry", name, err))
	}
	var held []string
	for _, o := range offerings.Items {
		tk := o.Status.TypedKind
		if o.Spec.BrokerName != name || tk == nil || (cur != nil && marketplace.KeepsKind(cur, o.Spec.Name, tk)) {
			continue
		}
		objs, err := inuse.Objects(ctx, g.Objects, tk)
		if err != nil {
			return admission.Errored(http.StatusServiceUnavailable, fmt.Errorf("could not list the objects of typed kind %s of ServiceBroker %q: %w; nothing was changed: retry", tk.Kind, name, err))
		}
		if len(objs) > 0 {
			held = append(held, fmt.Sprintf("kind %s of service %q has %d object(s): %s", tk.Kind, o.Spec.Name, len(objs), inuse.Some(inuse.Names(objs), maxNamed)))
		}
	}
	if len(held) == 0 {
		return admission.Allowed("")
	}
	sort.Strings(held)
	what, keep := "deleting ServiceBroker "+strconv.Quote(name), "the ServiceBroker stays"
	if cur != nil {
		what, keep = "this change of ServiceBroker "+strconv.Quote(name)+" spec.typedKinds", "or keep the services activated (with their kinds) in spec.typedKinds; the ServiceBroker stays as it was"
	}
	return admission.Response{AdmissionResponse: admissionResponse(http.StatusConflict, "Conflict", fmt.Sprintf(
		"%s takes typed kinds away whose objects remain (%s): their CRDs would delete them; delete the objects first (kubectl delete <plural> <name> -n <namespace>), %s",
		what, strings.Join(held, "; "), keep))}
}
