package admission

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/go-logr/logr"
	admissionv1 "k8s.io/api/admission/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/lockstep-dev/lockstep/api/v1alpha1"
	"github.com/lockstep-dev/lockstep/internal/broker/osbclient"
	"github.com/lockstep-dev/lockstep/internal/brokercall"
)

// BrokerOptions tune the broker phase.
type BrokerOptions struct {
	// Poll tunes last_operation polling within the admission budget.
	Poll osbclient.PollOptions
	// ClusterID is sent in the OSB context.
	ClusterID string
	// Log receives one line per broker outcome; never credentials.
	Log logr.Logger
}

// instanceBroker carries an instance's create, spec update or delete out at
// the broker: provision (or adopt), update, deprovision, through the one
// protocol of a broker call (see carry.go): the object's lock first,
// carrying the operation's record, so that two admissions for one object
// never both reach the broker and every broker call is attributable. The
// record follows the reply; a refusal's lock is released once it is
// written, otherwise the operations reconciler releases the lock once the
// change is committed.
type instanceBroker struct {
	carry *carrier
}

func (s *instanceBroker) Name() string { return "broker" }

func (s *instanceBroker) Admit(ctx context.Context, a *Attributes[Instance], t *Target) (admission.Warnings, error) {
	si := a.Object()
	if a.Operation == admissionv1.Delete && si.DeletionTimestamp != nil {
		return nil, nil // already being deleted: the broker confirmed before
	}
	req := brokercall.ForInstance(instanceVerb(a.Operation), si, t.Entry, t.Plan, brokercall.Requester(a.User))
	req.ParametersDigest, req.CreateOnlyDigest = parametersDigest(t.Params), createOnlyDigest(t.Plan.Schemas, t.Params)
	var ch wording
	switch a.Operation {
	case admissionv1.Create:
		ch = wording{
			broker: t.Entry.Broker, kind: "instance",
			what:     fmt.Sprintf("provision instance %q (service %q, plan %q)", si.Name, si.Spec.ServiceName, si.Spec.PlanName),
			stays:    "nothing was created",
			unsure:   "the instance is not created",
			ifDone:   "if the broker created the instance, lockstep deprovisions it",
			whenDone: "lockstep follows the operation to its end",
		}
		if v1alpha1.Adopting(si) {
			req.Verb = v1alpha1.VerbAdopt
			ch.what = fmt.Sprintf("read instance %q to adopt it", si.Spec.ExternalID)
			if err := adoptableInstance(si, t); err != nil {
				return nil, err
			}
			req.Adopt = func(_ context.Context, held brokercall.Held) error { return adoptedInstance(si, t, held) }
			break
		}
		req.Parameters = raw(mergedParams(t.Params, si.Spec.Parameters))

	case admissionv1.Update:
		old := a.Old
		ch = updateWording(t.Entry.Broker, old, si)
		if t.OldPlan != nil {
			req.PreviousPlanID = t.OldPlan.Plan.ID
		}
		req.NewPlan = old.Spec.PlanName != si.Spec.PlanName
		if parametersChanged(old, si) {
			params, err := t.Plan.Schemas.UpdateParameters(mergedParams(t.Params, si.Spec.Parameters))
			if err != nil {
				return nil, ch.refusal(err)
			}
			req.Parameters = params
		}

	case admissionv1.Delete:
		ch = wording{
			broker: t.Entry.Broker, kind: "instance",
			what:   fmt.Sprintf("deprovision instance %q", si.Name),
			stays:  "the instance stays as it was (no deletion was started)",
			unsure: "the instance is not deleted for now",
			ifDone: "if the broker deprovisioned it, lockstep deletes the instance",
			wayOut: wayOut(v1alpha1.InstanceKind(si), si.Namespace, si.Name),
		}
	}
	return s.carry.carryOut(ctx, req, ch)
}

func updateWording(brokerName string, old, si Instance) wording {
	planChanged := old.Spec.PlanName != si.Spec.PlanName
	paramsChanged := parametersChanged(old, si)
	ch := wording{broker: brokerName, kind: "instance", whenDone: "lockstep follows the operation to its end",
		unsure: "the instance keeps its spec for now",
		ifDone: "if the broker applied the update, lockstep applies the instance's current spec again"}
	switch {
	case planChanged && paramsChanged:
		ch.what = fmt.Sprintf("change plan of instance %q from %q to %q and update its parameters", si.Name, old.Spec.PlanName, si.Spec.PlanName)
		ch.stays = fmt.Sprintf("the instance keeps plan %q and its current parameters", old.Spec.PlanName)
	case planChanged:
		ch.what = fmt.Sprintf("change plan of instance %q from %q to %q", si.Name, old.Spec.PlanName, si.Spec.PlanName)
		ch.stays = fmt.Sprintf("the instance keeps plan %q", old.Spec.PlanName)
	default:
		ch.what = fmt.Sprintf("update the parameters of instance %q", si.Name)
		ch.stays = "the instance keeps its current parameters"
	}
	return ch
}

// parametersChanged reports whether an update sends parameters: when
// spec.parameters changed, and on every update of an instance with
// spec.parametersFrom (the Secrets' current values are sent with every
// change of the spec; spec.parametersFromGeneration is the change to make
// when nothing else changes).
func parametersChanged(old, si Instance) bool {
	return !equality.Semantic.DeepEqual(old.Spec.Parameters, si.Spec.Parameters) ||
		len(si.Spec.ParametersFrom) > 0 || len(old.Spec.ParametersFrom) > 0
}

func instanceVerb(op admissionv1.Operation) v1alpha1.Verb {
	switch op {
	case admissionv1.Create:
		return v1alpha1.VerbProvision
	case admissionv1.Delete:
		return v1alpha1.VerbDeprovision
	default:
		return v1alpha1.VerbUpdate
	}
}

// raw returns parameters as JSON for the broker; nil when there are none.
func raw(p *runtime.RawExtension) json.RawMessage {
	if p == nil || len(p.Raw) == 0 || string(p.Raw) == "null" {
		return nil
	}
	return p.Raw
}
