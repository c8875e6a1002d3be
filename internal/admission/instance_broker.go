package admission

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/go-logr/logr"
	"github.com/google/uuid"
	admissionv1 "k8s.io/api/admission/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/lockstep-dev/lockstep/api/v1alpha1"
	"github.com/lockstep-dev/lockstep/internal/journal"
	"github.com/lockstep-dev/lockstep/internal/osbapi"
	"github.com/lockstep-dev/lockstep/internal/osbclient"
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
// the broker: provision, update, deprovision. It takes the object's lock
// first, carrying the operation's record, so that two admissions for one
// object never both reach the broker and every broker call is attributable.
// The record follows the reply; a refusal's lock is released once it is
// written, otherwise the operations reconciler releases the lock once the
// change is committed.
type instanceBroker struct {
	carry *carrier
	opts  BrokerOptions
}

func (s *instanceBroker) Name() string { return "broker" }

func (s *instanceBroker) Admit(ctx context.Context, a *Attributes[Instance], t *Target) (admission.Warnings, error) {
	si := a.Object()
	if a.Operation == admissionv1.Delete && si.DeletionTimestamp != nil {
		return nil, nil // already being deleted: the broker confirmed before
	}
	verb := instanceVerb(a.Operation)
	if a.Operation == admissionv1.Create && v1alpha1.Adopting(si) {
		verb = v1alpha1.VerbAdopt
	}
	return s.carry.carryOut(ctx, journal.Intent{
		ID: uuid.NewString(), Target: si, Kind: v1alpha1.KindServiceInstance, ExternalID: si.Spec.ExternalID, Broker: t.Entry.Broker,
		Verb: verb, User: a.User, SpecHash: journal.SpecHash(si.Spec), ServiceID: t.Plan.Service.ID, PlanID: t.Plan.Plan.ID,
		PreviousPlanID: t.previousPlanID(), ParametersDigest: parametersDigest(t.Params),
		CreateOnlyDigest: createOnlyDigest(t.Plan.Schemas, t.Params),
	}, func(meta osbclient.RequestMeta, ans *journal.Answer) (admission.Warnings, bool, error) {
		return s.call(ctx, a, t, meta, ans)
	})
}

// call makes the broker call for the request. It reports whether the
// operation goes on after the reply (still running at the end of the
// budget, or its outcome unknown): the operations reconciler then follows
// it to its end.
func (s *instanceBroker) call(ctx context.Context, a *Attributes[Instance], t *Target, meta osbclient.RequestMeta, ans *journal.Answer) (admission.Warnings, bool, error) {
	c := t.Entry.Client
	switch a.Operation {
	case admissionv1.Create:
		si := a.New
		if v1alpha1.Adopting(si) {
			return nil, false, s.adoptInstance(ctx, si, t, meta, ans)
		}
		ch := change{
			broker: t.Entry.Broker,
			what:   fmt.Sprintf("provision instance %q (service %q, plan %q)", si.Name, si.Spec.ServiceName, si.Spec.PlanName),
			stays:  "nothing was created",
			ifDone: "if the broker created the instance, lockstep deprovisions it",
		}
		resp, err := c.Provision(ctx, meta, osbclient.ProvisionRequest{
			InstanceID: si.Spec.ExternalID,
			ServiceID:  t.Plan.Service.ID,
			PlanID:     t.Plan.Plan.ID,
			Context:    s.context(si),
			Parameters: raw(mergedParams(t.Params, si.Spec.Parameters)),
		})
		if err != nil {
			ans.HTTPStatus, ans.Mitigate = brokerStatus(err), osbclient.NeedsOrphanMitigation(err)
			return nil, false, ch.refusal(err)
		}
		ans.HTTPStatus, ans.DashboardURL = resp.HTTPStatus, resp.DashboardURL
		if !resp.Async {
			return nil, false, nil
		}
		ans.OperationKey = resp.Operation
		return s.poll(ctx, c, meta, si, t, resp.Operation, ch, false)

	case admissionv1.Update:
		old, si := a.Old, a.New
		ch := updateChange(t.Entry.Broker, old, si)
		ctxObj := s.context(si)
		req := osbclient.UpdateRequest{
			InstanceID:     si.Spec.ExternalID,
			ServiceID:      t.Plan.Service.ID,
			Context:        &ctxObj,
			PreviousValues: &osbapi.PreviousValues{ServiceID: t.Plan.Service.ID},
		}
		if t.OldPlan != nil {
			req.PreviousValues.PlanID = t.OldPlan.Plan.ID
		}
		if old.Spec.PlanName != si.Spec.PlanName {
			req.PlanID = t.Plan.Plan.ID
		}
		if parametersChanged(old, si) {
			params, err := t.Plan.Schemas.UpdateParameters(mergedParams(t.Params, si.Spec.Parameters))
			if err != nil {
				return nil, false, ch.refusal(err)
			}
			req.Parameters = params
		}
		resp, err := c.Update(ctx, meta, req)
		if err != nil {
			ans.HTTPStatus = brokerStatus(err)
			return nil, false, ch.refusal(err)
		}
		ans.HTTPStatus, ans.DashboardURL = resp.HTTPStatus, resp.DashboardURL
		if !resp.Async {
			return nil, false, nil
		}
		ans.OperationKey = resp.Operation
		return s.poll(ctx, c, meta, si, t, resp.Operation, ch, false)

	case admissionv1.Delete:
		si := a.Old
		ch := change{
			broker: t.Entry.Broker,
			what:   fmt.Sprintf("deprovision instance %q", si.Name),
			stays:  "the instance stays as it was (no deletion was started)",
			ifDone: "if the broker deprovisioned it, lockstep deletes the instance",
			wayOut: wayOut(v1alpha1.KindServiceInstance, si.Namespace, si.Name),
		}
		resp, err := c.Deprovision(ctx, meta, osbclient.DeprovisionRequest{
			InstanceID: si.Spec.ExternalID, ServiceID: t.Plan.Service.ID, PlanID: t.Plan.Plan.ID,
		})
		if err != nil {
			ans.HTTPStatus = brokerStatus(err)
			return nil, false, ch.refusal(err)
		}
		ans.HTTPStatus = resp.HTTPStatus
		if !resp.Async {
			return nil, false, nil
		}
		ans.OperationKey = resp.Operation
		return s.poll(ctx, c, meta, si, t, resp.Operation, ch, true)
	}
	return nil, false, nil
}

// poll follows an asynchronous operation within the admission budget.
// Succeeded allows; failed rejects with the broker's description. Still in
// progress at the end of the budget: a create or update is allowed with a
// warning, a delete is rejected (a deletionTimestamp is never set before the
// broker confirmed); either way the operations reconciler follows it to its
// end (and deletes the object once a deprovision finished).
func (s *instanceBroker) poll(ctx context.Context, c *osbclient.Client, meta osbclient.RequestMeta, si Instance, t *Target,
	operation string, ch change, deleting bool) (admission.Warnings, bool, error) {
	// After an update, last_operation is asked with the plan from before it.
	planID := t.Plan.Plan.ID
	if prev := t.previousPlanID(); prev != "" {
		planID = prev
	}
	req := osbclient.InstanceLastOperationRequest{
		InstanceID: si.Spec.ExternalID, ServiceID: t.Plan.Service.ID, PlanID: planID, Operation: operation,
	}
	opts := s.opts.Poll
	opts.Deleting = deleting
	last, err := c.PollInstance(ctx, meta, req, opts)
	switch {
	case err == nil && last.State == osbapi.StateSucceeded:
		return nil, false, nil
	case err == nil:
		return nil, false, ch.failed(last)
	case !errors.Is(err, osbclient.ErrStillInProgress):
		return nil, true, ch.unknown(err)
	}
	if deleting {
		return nil, true, conflict("broker %q is still working to %s (%s); the instance stays until the broker finishes, then lockstep deletes it",
			ch.broker, ch.what, describeStill(err))
	}
	return admission.Warnings{fmt.Sprintf("broker %q is still working to %s (%s); lockstep follows the operation to its end",
		ch.broker, ch.what, describeStill(err))}, true, nil
}

func describeStill(err error) string {
	var still *osbclient.StillInProgressError
	if errors.As(err, &still) && still.Description() != "" {
		return fmt.Sprintf("broker: %q", still.Description())
	}
	return "in progress"
}

func (s *instanceBroker) context(si Instance) osbapi.Context {
	return osbapi.Context{Platform: osbapi.KubernetesPlatform, Namespace: si.Namespace, InstanceName: si.Name, ClusterID: s.opts.ClusterID}
}

func updateChange(brokerName string, old, si Instance) change {
	planChanged := old.Spec.PlanName != si.Spec.PlanName
	paramsChanged := parametersChanged(old, si)
	ch := change{broker: brokerName, ifDone: "if the broker applied the update, lockstep applies the instance's current spec again"}
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
