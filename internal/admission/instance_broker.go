package admission

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/go-logr/logr"
	"github.com/google/uuid"
	admissionv1 "k8s.io/api/admission/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/lockstep-dev/lockstep/api/v1alpha1"
	"github.com/lockstep-dev/lockstep/internal/broker"
	"github.com/lockstep-dev/lockstep/internal/journal"
)

// BrokerOptions tune the broker phase.
type BrokerOptions struct {
	// Poll tunes last_operation polling within the admission budget.
	Poll broker.PollOptions
	// FollowTimeout bounds how long an operation still running when
	// admission answered is followed in the background.
	FollowTimeout time.Duration
	// ClusterID is sent in the OSB context.
	ClusterID string
	// Log receives one line per broker outcome; never credentials.
	Log logr.Logger
}

// instanceBroker carries an instance's create, spec update or delete out at
// the broker: provision, update, deprovision. It takes the object's lock
// first, so that two admissions for one object never both reach the broker.
type instanceBroker struct {
	locks     *journal.Locks
	journal   *journal.Journal
	writer    client.Client // deletes an instance once a followed deprovision succeeded
	confirmed *journal.Confirmed
	opts      BrokerOptions
}

func (s *instanceBroker) Name() string { return "broker" }

func (s *instanceBroker) Admit(ctx context.Context, a *Attributes[Instance]) (admission.Warnings, error) {
	si := a.Object()
	key := lockKey("ServiceInstance", si)
	op := &journal.Operation{ID: uuid.NewString(), Verb: instanceVerb(a.Operation), User: a.User.Username, Started: time.Now()}
	if holder, ok := s.locks.Acquire(key, op); !ok {
		return nil, conflict("another change of instance %q is in flight at the broker: %s; nothing was changed: retry when it has finished", si.Name, holder)
	}
	if si.DeletionTimestamp != nil && a.Operation == admissionv1.Delete {
		s.locks.Release(key, op)
		return nil, nil // already being deleted: the broker confirmed before
	}
	rec, err := s.journal.Begin(ctx, journal.Intent{
		ID: op.ID, Target: si, Kind: "ServiceInstance", ExternalID: si.Spec.ExternalID, Broker: a.Target.Entry.Broker,
		Verb: op.Verb, User: a.User, Spec: si.Spec,
	})
	if err != nil {
		s.locks.Release(key, op)
		return nil, unavailable("could not record the operation before calling the broker: %v; nothing was changed: retry", err)
	}
	meta := broker.RequestMeta{Identity: identity(a.User), RequestID: op.ID}
	ans := &journal.Answer{}
	warnings, follow, err := s.call(ctx, a, meta, ans)
	s.opts.Log.Info("broker operation", "verb", op.Verb, "instance", client.ObjectKeyFromObject(si).String(),
		"operation", rec.Name, "user", op.User, "allowed", err == nil, "following", follow != nil)
	finish(ctx, s.journal, rec, si, ans, follow != nil, err, s.opts.Log)
	if follow == nil {
		s.locks.Release(key, op)
		return warnings, err
	}
	s.locks.Follow(key, op, func(ctx context.Context, release func()) {
		ctx, cancel := context.WithTimeout(ctx, s.opts.FollowTimeout)
		defer cancel()
		final := follow(ctx, release)
		record(ctx, s.journal, rec, si, final, s.opts.Log)
	})
	return warnings, err
}

// call makes the broker call for the request. When the broker is still
// working at the end of the budget it returns a follow function that polls
// the operation to its end in the background.
func (s *instanceBroker) call(ctx context.Context, a *Attributes[Instance], meta broker.RequestMeta, ans *journal.Answer) (admission.Warnings, followFunc, error) {
	t := a.Target
	c := t.Entry.Client
	switch a.Operation {
	case admissionv1.Create:
		si := a.New
		ch := change{
			broker: t.Entry.Broker,
			what:   fmt.Sprintf("provision instance %q (service %q, plan %q)", si.Name, si.Spec.ServiceName, si.Spec.PlanName),
			stays:  "nothing was created",
		}
		resp, err := c.Provision(ctx, meta, broker.ProvisionRequest{
			InstanceID: si.Spec.ExternalID,
			ServiceID:  t.Plan.Service.ID,
			PlanID:     t.Plan.Plan.ID,
			Context:    s.context(si),
			Parameters: raw(si.Spec.Parameters),
		})
		if err != nil {
			ans.HTTPStatus = brokerStatus(err)
			return nil, nil, ch.refusal(err)
		}
		ans.HTTPStatus = resp.HTTPStatus
		if !resp.Async {
			return nil, nil, nil
		}
		ans.OperationKey = resp.Operation
		return s.poll(ctx, c, meta, si, t, resp.Operation, ch, false)

	case admissionv1.Update:
		old, si := a.Old, a.New
		ch := updateChange(t.Entry.Broker, old, si)
		req := broker.UpdateRequest{
			InstanceID:     si.Spec.ExternalID,
			ServiceID:      t.Plan.Service.ID,
			PreviousValues: &broker.PreviousValues{ServiceID: t.Plan.Service.ID},
		}
		if t.OldPlan != nil {
			req.PreviousValues.PlanID = t.OldPlan.Plan.ID
		}
		if old.Spec.PlanName != si.Spec.PlanName {
			req.PlanID = t.Plan.Plan.ID
		}
		if !equality.Semantic.DeepEqual(old.Spec.Parameters, si.Spec.Parameters) {
			params, err := t.Plan.Schemas.UpdateParameters(si.Spec.Parameters)
			if err != nil {
				return nil, nil, ch.refusal(err)
			}
			req.Parameters = params
		}
		resp, err := c.Update(ctx, meta, req)
		if err != nil {
			ans.HTTPStatus = brokerStatus(err)
			return nil, nil, ch.refusal(err)
		}
		ans.HTTPStatus = resp.HTTPStatus
		if !resp.Async {
			return nil, nil, nil
		}
		ans.OperationKey = resp.Operation
		return s.poll(ctx, c, meta, si, t, resp.Operation, ch, false)

	case admissionv1.Delete:
		si := a.Old
		ch := change{
			broker: t.Entry.Broker,
			what:   fmt.Sprintf("deprovision instance %q", si.Name),
			stays:  "the instance stays as it was (no deletion was started)",
		}
		resp, err := c.Deprovision(ctx, meta, broker.DeprovisionRequest{
			InstanceID: si.Spec.ExternalID, ServiceID: t.Plan.Service.ID, PlanID: t.Plan.Plan.ID,
		})
		if err != nil {
			ans.HTTPStatus = brokerStatus(err)
			return nil, nil, ch.refusal(err)
		}
		ans.HTTPStatus = resp.HTTPStatus
		if !resp.Async {
			s.confirmed.Add(si.UID)
			return nil, nil, nil
		}
		ans.OperationKey = resp.Operation
		return s.poll(ctx, c, meta, si, t, resp.Operation, ch, true)
	}
	return nil, nil, nil
}

// poll follows an asynchronous operation within the admission budget.
// Succeeded allows; failed rejects with the broker's description. Still in
// progress at the end of the budget: a create or update is allowed with a
// warning, a delete is rejected (a deletionTimestamp is never set before the
// broker confirmed); either way the operation is followed to its end.
func (s *instanceBroker) poll(ctx context.Context, c *broker.Client, meta broker.RequestMeta, si Instance, t *Target,
	operation string, ch change, deleting bool) (admission.Warnings, followFunc, error) {
	req := broker.InstanceLastOperationRequest{
		InstanceID: si.Spec.ExternalID, ServiceID: t.Plan.Service.ID, PlanID: t.Plan.Plan.ID, Operation: operation,
	}
	opts := s.opts.Poll
	opts.Deleting = deleting
	last, err := c.PollInstance(ctx, meta, req, opts)
	switch {
	case err == nil && last.State == broker.StateSucceeded:
		if deleting {
			s.confirmed.Add(si.UID)
		}
		return nil, nil, nil
	case err == nil:
		return nil, nil, ch.failed(last)
	case !errors.Is(err, broker.ErrStillInProgress):
		return nil, nil, ch.refusal(err)
	}

	follow := func(ctx context.Context, release func()) journal.Answer {
		last, err := c.PollInstance(ctx, meta, req, opts)
		final := finalAnswer(last, err, operation)
		if final.Phase == v1alpha1.PhaseSucceeded && deleting {
			s.confirmed.Add(si.UID)
			release()
			s.deleteAfterDeprovision(ctx, si)
		}
		return final
	}
	if deleting {
		return nil, follow, statusError(409, metav1.StatusReasonConflict,
			"broker %q is still working to %s (%s); the instance stays until the broker finishes, then lockstep deletes it", ch.broker, ch.what, describeStill(err))
	}
	return admission.Warnings{fmt.Sprintf("broker %q is still working to %s (%s); lockstep follows the operation to its end",
		ch.broker, ch.what, describeStill(err))}, follow, nil
}

// deleteAfterDeprovision deletes an instance whose deprovision the broker
// confirmed after admission had answered. The DELETE goes through admission
// again; the broker then answers 410 Gone, which allows it.
func (s *instanceBroker) deleteAfterDeprovision(ctx context.Context, si Instance) {
	if s.writer == nil {
		return
	}
	uid := si.UID
	err := s.writer.Delete(ctx, si.DeepCopy(), &client.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}})
	if err != nil && !apierrors.IsNotFound(err) {
		s.opts.Log.Info("could not delete the deprovisioned instance; delete it again", "instance", client.ObjectKeyFromObject(si).String(), "error", err.Error())
	}
}

func describeStill(err error) string {
	var still *broker.StillInProgressError
	if errors.As(err, &still) && still.Description() != "" {
		return fmt.Sprintf("broker: %q", still.Description())
	}
	return "in progress"
}

func (s *instanceBroker) context(si Instance) broker.Context {
	return broker.Context{Platform: broker.Platform, Namespace: si.Namespace, InstanceName: si.Name, ClusterID: s.opts.ClusterID}
}

func updateChange(brokerName string, old, si Instance) change {
	planChanged := old.Spec.PlanName != si.Spec.PlanName
	paramsChanged := !equality.Semantic.DeepEqual(old.Spec.Parameters, si.Spec.Parameters)
	ch := change{broker: brokerName}
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

func lockKey(kind string, obj client.Object) string {
	return kind + "/" + obj.GetNamespace() + "/" + obj.GetName()
}

// raw returns parameters as JSON for the broker; nil when there are none.
func raw(p *runtime.RawExtension) json.RawMessage {
	if p == nil || len(p.Raw) == 0 || string(p.Raw) == "null" {
		return nil
	}
	return p.Raw
}
