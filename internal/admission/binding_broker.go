package admission

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	admissionv1 "k8s.io/api/admission/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/lockstep-dev/lockstep/api/v1alpha1"
	"github.com/lockstep-dev/lockstep/internal/broker"
	"github.com/lockstep-dev/lockstep/internal/credentials"
	"github.com/lockstep-dev/lockstep/internal/journal"
)

// bindingBroker carries a binding's create and delete out at the broker:
// bind (then the credentials go into the binding's Secret) and unbind.
type bindingBroker struct {
	locks     *journal.Locks
	journal   *journal.Journal
	writer    client.Client
	confirmed *journal.Confirmed
	opts      BrokerOptions
}

func (s *bindingBroker) Name() string { return "broker" }

func (s *bindingBroker) Admit(ctx context.Context, a *Attributes[Binding]) (admission.Warnings, error) {
	b := a.Object()
	key := lockKey("ServiceBinding", b)
	verb := v1alpha1.VerbBind
	if a.Operation == admissionv1.Delete {
		verb = v1alpha1.VerbUnbind
	}
	op := &journal.Operation{ID: uuid.NewString(), Verb: verb, User: a.User.Username, Started: time.Now()}
	if holder, ok := s.locks.Acquire(key, op); !ok {
		return nil, conflict("another change of binding %q is in flight at the broker: %s; nothing was changed: retry when it has finished", b.Name, holder)
	}
	if a.Operation == admissionv1.Delete && b.DeletionTimestamp != nil {
		s.locks.Release(key, op)
		return nil, nil // already being deleted: the broker confirmed before
	}
	rec, err := s.journal.Begin(ctx, journal.Intent{
		ID: op.ID, Target: b, Kind: "ServiceBinding", ExternalID: b.Spec.ExternalID, Broker: a.Target.Entry.Broker,
		Verb: verb, User: a.User, Spec: b.Spec,
	})
	if err != nil {
		s.locks.Release(key, op)
		return nil, unavailable("could not record the operation before calling the broker: %v; nothing was changed: retry", err)
	}
	meta := broker.RequestMeta{Identity: identity(a.User), RequestID: op.ID}
	ans := &journal.Answer{}
	var (
		warnings admission.Warnings
		follow   followFunc
	)
	if a.Operation == admissionv1.Create {
		warnings, follow, err = s.bind(ctx, a, meta, ans)
	} else {
		warnings, follow, err = s.unbind(ctx, a, meta, ans)
	}
	s.opts.Log.Info("broker operation", "verb", verb, "binding", client.ObjectKeyFromObject(b).String(),
		"operation", rec.Name, "user", op.User, "allowed", err == nil, "following", follow != nil)
	finish(ctx, s.journal, rec, b, ans, follow != nil, err, s.opts.Log)
	if follow == nil {
		s.locks.Release(key, op)
		return warnings, err
	}
	s.locks.Follow(key, op, func(ctx context.Context, release func()) {
		ctx, cancel := context.WithTimeout(ctx, s.opts.FollowTimeout)
		defer cancel()
		final := follow(ctx, release)
		record(ctx, s.journal, rec, b, final, s.opts.Log)
	})
	return warnings, err
}

func (s *bindingBroker) bind(ctx context.Context, a *Attributes[Binding], meta broker.RequestMeta, ans *journal.Answer) (admission.Warnings, followFunc, error) {
	b, t := a.New, a.Target
	c := t.Entry.Client
	ch := change{
		broker: t.Entry.Broker,
		what:   fmt.Sprintf("bind instance %q for binding %q", t.Instance.Name, b.Name),
		stays:  "nothing was created",
	}
	ids := bindingIDs{instance: t.Instance.Spec.ExternalID, binding: b.Spec.ExternalID, service: t.Plan.Service.ID, plan: t.Plan.Plan.ID}
	resp, err := c.Bind(ctx, meta, broker.BindRequest{
		InstanceID: ids.instance, BindingID: ids.binding, ServiceID: ids.service, PlanID: ids.plan,
		Context:    broker.Context{Platform: broker.Platform, Namespace: b.Namespace, InstanceName: t.Instance.Name, ClusterID: s.opts.ClusterID},
		Parameters: raw(b.Spec.Parameters),
	})
	if err != nil {
		ans.HTTPStatus = brokerStatus(err)
		return nil, nil, ch.refusal(err)
	}
	ans.HTTPStatus = resp.HTTPStatus
	if !resp.Async {
		return nil, nil, s.store(ctx, c, meta, ids, ch, b, resp.Binding.Credentials)
	}
	if !t.Plan.Service.BindingsRetrievable {
		s.compensate(c, meta, ids, b)
		return nil, nil, statusError(502, metav1.StatusReasonServiceUnavailable,
			"broker %q answered the bind of %q asynchronously but does not let lockstep fetch bindings (bindings_retrievable is false), so the credentials cannot be read; lockstep asked the broker to unbind; nothing was created",
			ch.broker, b.Name)
	}
	ans.OperationKey = resp.Operation
	req := broker.BindingLastOperationRequest{InstanceID: ids.instance, BindingID: ids.binding, ServiceID: ids.service, PlanID: ids.plan, Operation: resp.Operation}
	last, err := c.PollBinding(ctx, meta, req, s.opts.Poll)
	if err == nil && last.State == broker.StateSucceeded {
		creds, err := s.fetch(ctx, c, meta, ids)
		if err == nil {
			return nil, nil, s.store(ctx, c, meta, ids, ch, b, creds)
		}
		if !errors.Is(err, broker.ErrStillInProgress) {
			return nil, nil, ch.refusal(err)
		}
	} else if err == nil {
		return nil, nil, ch.failed(last)
	} else if !errors.Is(err, broker.ErrStillInProgress) {
		return nil, nil, ch.refusal(err)
	}

	follow := func(ctx context.Context, _ func()) journal.Answer {
		last, err := c.PollBinding(ctx, meta, req, s.opts.Poll)
		final := finalAnswer(last, err, resp.Operation)
		if final.Phase != v1alpha1.PhaseSucceeded {
			return final
		}
		creds, err := s.fetch(ctx, c, meta, ids)
		if err == nil {
			err = credentials.Write(ctx, s.writer, b, creds)
		}
		if err != nil {
			final.Phase, final.Description = v1alpha1.PhaseFailed, "the bind succeeded but its credentials could not be stored: "+err.Error()
		}
		return final
	}
	return admission.Warnings{fmt.Sprintf("broker %q is still working to %s (%s); Secret %q appears when the broker finishes",
		ch.broker, ch.what, describeStill(err), b.Spec.SecretName)}, follow, nil
}

// fetch reads a finished asynchronous binding's credentials; a broker
// answers 404 while the binding is not ready, so 404 means "poll again"
// until ctx ends.
func (s *bindingBroker) fetch(ctx context.Context, c *broker.Client, meta broker.RequestMeta, ids bindingIDs) (map[string]any, error) {
	interval := max(s.opts.Poll.MinInterval, 10*time.Millisecond)
	for {
		got, err := c.GetBinding(ctx, meta, broker.GetBindingRequest{InstanceID: ids.instance, BindingID: ids.binding, ServiceID: ids.service, PlanID: ids.plan})
		if err == nil {
			return got.Credentials, nil
		}
		if !broker.IsNotFound(err) {
			return nil, err
		}
		t := time.NewTimer(interval)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, &broker.StillInProgressError{Reason: "the broker did not serve the binding's credentials yet", Err: ctx.Err()}
		case <-t.C:
		}
	}
}

// store writes the credentials into the binding's Secret. When that fails
// the broker's binding would be an orphan: lockstep unbinds it and rejects.
func (s *bindingBroker) store(ctx context.Context, c *broker.Client, meta broker.RequestMeta, ids bindingIDs, ch change, b Binding, creds map[string]any) error {
	err := credentials.Write(ctx, s.writer, b, creds)
	if err == nil {
		return nil
	}
	s.compensate(c, meta, ids, b)
	return unavailable("broker %q bound %q but lockstep could not write Secret %q: %v; lockstep asked the broker to unbind again; nothing was created: retry",
		ch.broker, b.Name, b.Spec.SecretName, err)
}

// compensate unbinds a binding that the broker holds but the cluster will
// not (orphan mitigation). Best effort, bounded; the outcome is logged.
func (s *bindingBroker) compensate(c *broker.Client, meta broker.RequestMeta, ids bindingIDs, b Binding) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err := c.Unbind(ctx, meta, broker.UnbindRequest{InstanceID: ids.instance, BindingID: ids.binding, ServiceID: ids.service, PlanID: ids.plan})
	s.opts.Log.Info("orphan mitigation: unbind", "binding", client.ObjectKeyFromObject(b).String(), "ok", err == nil)
}

func (s *bindingBroker) unbind(ctx context.Context, a *Attributes[Binding], meta broker.RequestMeta, ans *journal.Answer) (admission.Warnings, followFunc, error) {
	b, t := a.Old, a.Target
	c := t.Entry.Client
	ch := change{
		broker: t.Entry.Broker,
		what:   fmt.Sprintf("unbind binding %q of instance %q", b.Name, t.Instance.Name),
		stays:  fmt.Sprintf("the binding and its Secret %q stay as they were (no deletion was started)", b.Spec.SecretName),
	}
	ids := bindingIDs{instance: t.Instance.Spec.ExternalID, binding: b.Spec.ExternalID, service: t.Plan.Service.ID, plan: t.Plan.Plan.ID}
	resp, err := c.Unbind(ctx, meta, broker.UnbindRequest{InstanceID: ids.instance, BindingID: ids.binding, ServiceID: ids.service, PlanID: ids.plan})
	if err != nil {
		ans.HTTPStatus = brokerStatus(err)
		return nil, nil, ch.refusal(err)
	}
	ans.HTTPStatus = resp.HTTPStatus
	if !resp.Async {
		s.confirmed.Add(b.UID)
		return nil, nil, nil
	}
	ans.OperationKey = resp.Operation
	req := broker.BindingLastOperationRequest{InstanceID: ids.instance, BindingID: ids.binding, ServiceID: ids.service, PlanID: ids.plan, Operation: resp.Operation}
	opts := s.opts.Poll
	opts.Deleting = true
	last, err := c.PollBinding(ctx, meta, req, opts)
	switch {
	case err == nil && last.State == broker.StateSucceeded:
		s.confirmed.Add(b.UID)
		return nil, nil, nil
	case err == nil:
		return nil, nil, ch.failed(last)
	case !errors.Is(err, broker.ErrStillInProgress):
		return nil, nil, ch.refusal(err)
	}
	follow := func(ctx context.Context, release func()) journal.Answer {
		last, err := c.PollBinding(ctx, meta, req, opts)
		final := finalAnswer(last, err, resp.Operation)
		if final.Phase != v1alpha1.PhaseSucceeded {
			return final
		}
		s.confirmed.Add(b.UID)
		release()
		uid := b.UID
		if err := s.writer.Delete(ctx, b.DeepCopy(), &client.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}}); err != nil && !apierrors.IsNotFound(err) {
			s.opts.Log.Info("could not delete the unbound binding; delete it again", "binding", client.ObjectKeyFromObject(b).String(), "error", err.Error())
		}
		return final
	}
	return nil, follow, statusError(409, metav1.StatusReasonConflict,
		"broker %q is still working to %s (%s); the binding stays until the broker finishes, then lockstep deletes it", ch.broker, ch.what, describeStill(err))
}

type bindingIDs struct{ instance, binding, service, plan string }
