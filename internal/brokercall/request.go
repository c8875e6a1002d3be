package brokercall

import (
	"context"
	"encoding/json"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/lockstep-dev/lockstep/api/v1alpha1"
	"github.com/lockstep-dev/lockstep/internal/broker/osbapi"
	"github.com/lockstep-dev/lockstep/internal/broker/osbclient"
	"github.com/lockstep-dev/lockstep/internal/catalog"
	"github.com/lockstep-dev/lockstep/internal/credentials"
	"github.com/lockstep-dev/lockstep/internal/journal"
)

// Request is one broker call: which object, what to do with it, and for
// whom. ForInstance, ForBinding and ForRecord build one; the caller adds
// the parameters and the hooks its verb needs.
type Request struct {
	// Verb is what to ask: provision, update, deprovision, bind, unbind,
	// or adopt (read what the broker holds, change nothing).
	Verb v1alpha1.Verb
	// Kind is the object's kind, and APIGroup its group when that is not
	// lockstep.dev (an instance of a typed kind).
	Kind     v1alpha1.TargetKind
	APIGroup string
	// Object is the instance or binding, its spec as the change leaves it
	// (on a delete: as it is). Nil for the undo of an object that never
	// persisted (ForRecord).
	Object client.Object
	// Namespace and Name name the object; InstanceName is its instance's
	// name (the object's own for an instance), for the OSB context.
	Namespace, Name, InstanceName string
	// Broker is the ServiceBroker's name and Client talks to it.
	Broker string
	Client *osbclient.Client
	// Offering is the broker and service, for the well-known entries of a
	// binding's Secret.
	Offering credentials.Offering
	// InstanceID and BindingID are the OSB ids (BindingID empty for an
	// instance); ServiceID and PlanID the service and plan the change
	// leaves the object on.
	InstanceID, BindingID, ServiceID, PlanID string
	// PreviousPlanID is the plan the broker holds before an update, when
	// it is known; NewPlan says that the update moves the instance to
	// PlanID (plan_id is sent only then).
	PreviousPlanID string
	NewPlan        bool
	// Retrievable says that the catalog lets lockstep read objects of this
	// kind and service (instances_retrievable, bindings_retrievable).
	Retrievable bool
	// Parameters are sent with a provision, bind or update; nil sends none.
	Parameters json.RawMessage
	// ParametersDigest and CreateOnlyDigest are recorded in the journal:
	// the digests of the parameters sent when some came from Secrets.
	ParametersDigest, CreateOnlyDigest string
	// Who asks.
	Who Who
	// Store writes a bind's credentials into the binding's Secret (bind,
	// and adopt of a binding). When it fails, the broker's binding is
	// undone (orphan mitigation) and the bind refused.
	Store func(ctx context.Context, credentials map[string]any) error
	// Adopt compares what the broker holds with the object (adopt); its
	// error refuses the adoption.
	Adopt func(ctx context.Context, held Held) error
	// Before, when set, runs under the object's lock before the broker
	// call; its error refuses the change without a call (the record says
	// Failed with its message, and the requester is told the error).
	Before func(ctx context.Context) error
	// Tell turns the result into what the requester is told (an
	// admission's rejection); the record's description is that message.
	// Nil tells the result's own error.
	Tell func(Result) error
}

// Held is what a broker holds of an object an adoption names.
type Held struct {
	// Missing says that the broker holds nothing under the id (404, 410).
	Missing  bool
	Instance *osbapi.GetInstanceResponse
	Binding  *osbapi.Binding
}

// ForInstance is a request of verb for instance si on plan of entry, for
// who.
func ForInstance(verb v1alpha1.Verb, si *v1alpha1.ServiceInstance, entry *catalog.Entry, plan catalog.Plan, who Who) Request {
	return Request{
		Verb: verb, Kind: v1alpha1.InstanceKind(si), APIGroup: v1alpha1.InstanceAPIGroup(si), Object: si,
		Namespace: si.Namespace, Name: si.Name, InstanceName: si.Name,
		Broker: entry.Broker, Client: entry.Client,
		InstanceID: si.Spec.ExternalID, ServiceID: plan.Service.ID, PlanID: plan.Plan.ID,
		Retrievable: plan.Service.InstancesRetrievable, Who: who,
	}
}

// ForBinding is a request of verb for binding b of instance si on plan of
// entry, for who.
func ForBinding(verb v1alpha1.Verb, b *v1alpha1.ServiceBinding, si *v1alpha1.ServiceInstance, entry *catalog.Entry, plan catalog.Plan, who Who) Request {
	return Request{
		Verb: verb, Kind: v1alpha1.KindServiceBinding, Object: b,
		Namespace: b.Namespace, Name: b.Name, InstanceName: si.Name,
		Broker: entry.Broker, Client: entry.Client,
		InstanceID: si.Spec.ExternalID, BindingID: b.Spec.ExternalID, ServiceID: plan.Service.ID, PlanID: plan.Plan.ID,
		Retrievable: plan.Service.BindingsRetrievable, Who: who,
		Offering: credentials.Offering{Provider: entry.Broker, Service: plan.Service.Name, Tags: plan.Service.Tags},
	}
}

// ForRecord is a request of verb about the object of the operation record
// op (which may never have persisted), at entry's broker, for who: the
// ids are the record's.
func ForRecord(verb v1alpha1.Verb, op *v1alpha1.BrokerOperation, entry *catalog.Entry, who Who) Request {
	t := op.Spec.Target
	r := Request{
		Verb: verb, Kind: t.Kind, APIGroup: t.APIGroup, Namespace: journal.TargetNamespace(op), Name: t.Name, InstanceName: t.Name,
		Broker: entry.Broker, Client: entry.Client,
		InstanceID: t.ExternalID, ServiceID: op.Spec.ServiceID, PlanID: op.Spec.PlanID, PreviousPlanID: op.Spec.PreviousPlanID,
		Who: who, Offering: credentials.Offering{Provider: entry.Broker},
	}
	if t.Kind == v1alpha1.KindServiceBinding {
		r.InstanceID, r.BindingID = t.InstanceID, t.ExternalID
	}
	if s, ok := entry.Catalog.FindServiceByID(op.Spec.ServiceID); ok {
		r.Retrievable = s.InstancesRetrievable
		r.Offering.Service, r.Offering.Tags = s.Name, s.Tags
		if t.Kind == v1alpha1.KindServiceBinding {
			r.Retrievable = s.BindingsRetrievable
		}
	}
	return r
}

// deletes reports whether the request removes its object at the broker.
func (r Request) deletes() bool {
	return r.Verb == v1alpha1.VerbDeprovision || r.Verb == v1alpha1.VerbUnbind
}

// creates reports whether the request creates its object at the broker.
// ClaimsID reports whether the request creates something at the broker
// under its external id, or takes over what the broker holds there.
func (r Request) ClaimsID() bool { return r.creates() || r.Verb == v1alpha1.VerbAdopt }

func (r Request) creates() bool {
	return r.Verb == v1alpha1.VerbProvision || r.Verb == v1alpha1.VerbBind
}

// pollPlanID is the plan last_operation is asked with: after an update,
// the plan from before it.
func (r Request) pollPlanID() string {
	if r.PreviousPlanID != "" {
		return r.PreviousPlanID
	}
	return r.PlanID
}

// Change is what req asks of the broker: the object, the verb and the spec
// it applies (see journal.Change).
func (r Request) Change() journal.Change {
	return journal.Change{UID: r.Object.GetUID(), Verb: r.Verb, SpecHash: journal.SpecHash(journal.SpecOf(r.Object))}
}
