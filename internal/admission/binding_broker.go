package admission

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/lockstep-dev/lockstep/api/v1alpha1"
	"github.com/lockstep-dev/lockstep/internal/credentials"
	"github.com/lockstep-dev/lockstep/internal/journal"
	"github.com/lockstep-dev/lockstep/internal/osbapi"
	"github.com/lockstep-dev/lockstep/internal/osbclient"
)

// bindingBroker carries a binding's create and delete out at the broker:
// bind (then the credentials go into the binding's Secret) and unbind.
type bindingBroker struct {
	carry  *carrier
	writer client.Client
	opts   BrokerOptions
}

func (s *bindingBroker) Name() string { return "broker" }

func (s *bindingBroker) Admit(ctx context.Context, a *Attributes[Binding], t *Target) (admission.Warnings, error) {
	b := a.Object()
	if a.Operation == admissionv1.Delete && b.DeletionTimestamp != nil {
		return nil, nil // already being deleted: the broker confirmed before
	}
	verb := v1alpha1.VerbBind
	switch {
	case a.Operation == admissionv1.Delete:
		verb = v1alpha1.VerbUnbind
	case v1alpha1.Adopting(b):
		verb = v1alpha1.VerbAdopt
	}
	return s.carry.carryOut(ctx, journal.Intent{
		ID: uuid.NewString(), Target: b, Kind: v1alpha1.KindServiceBinding, ExternalID: b.Spec.ExternalID, Broker: t.Entry.Broker,
		Verb: verb, User: a.User, SpecHash: journal.SpecHash(b.Spec), ServiceID: t.Plan.Service.ID, PlanID: t.Plan.Plan.ID, InstanceID: t.Instance.Spec.ExternalID,
		ParametersDigest: parametersDigest(t.Params),
	}, func(meta osbclient.RequestMeta, ans *journal.Answer) (admission.Warnings, bool, error) {
		if a.Operation == admissionv1.Create && v1alpha1.Adopting(b) {
			return nil, false, s.adoptBinding(ctx, b, t, meta, ans)
		}
		if a.Operation == admissionv1.Create {
			return s.bind(ctx, a, t, meta, ans)
		}
		return s.unbind(ctx, a, t, meta, ans)
	})
}

func (s *bindingBroker) bind(ctx context.Context, a *Attributes[Binding], t *Target, meta osbclient.RequestMeta, ans *journal.Answer) (admission.Warnings, bool, error) {
	b := a.New
	c := t.Entry.Client
	ch := change{
		broker: t.Entry.Broker,
		what:   fmt.Sprintf("bind instance %q for binding %q", t.Instance.Name, b.Name),
		stays:  "nothing was created",
		ifDone: "if the broker created the binding, lockstep unbinds it",
	}
	ids := bindingIDs{instance: t.Instance.Spec.ExternalID, binding: b.Spec.ExternalID, service: t.Plan.Service.ID, plan: t.Plan.Plan.ID}
	resp, err := c.Bind(ctx, meta, osbclient.BindRequest{
		InstanceID: ids.instance, BindingID: ids.binding, ServiceID: ids.service, PlanID: ids.plan,
		Context:    osbapi.Context{Platform: osbapi.KubernetesPlatform, Namespace: b.Namespace, InstanceName: t.Instance.Name, ClusterID: s.opts.ClusterID},
		Parameters: raw(mergedParams(t.Params, b.Spec.Parameters)),
	})
	if err != nil {
		ans.HTTPStatus, ans.Mitigate = brokerStatus(err), osbclient.NeedsOrphanMitigation(err)
		return nil, false, ch.refusal(err)
	}
	ans.HTTPStatus = resp.HTTPStatus
	if !resp.Async {
		return nil, false, s.store(ctx, c, meta, ids, ch, b, resp.Binding.Credentials)
	}
	ans.OperationKey = resp.Operation
	if !t.Plan.Service.BindingsRetrievable {
		s.compensate(c, meta, ids, b)
		return nil, false, statusError(502, metav1.StatusReasonServiceUnavailable,
			"broker %q answered the bind of %q asynchronously but does not let lockstep fetch bindings (bindings_retrievable is false), so the credentials cannot be read; lockstep asked the broker to unbind; nothing was created",
			ch.broker, b.Name)
	}
	req := osbclient.BindingLastOperationRequest{InstanceID: ids.instance, BindingID: ids.binding, ServiceID: ids.service, PlanID: ids.plan, Operation: resp.Operation}
	last, err := c.PollBinding(ctx, meta, req, s.opts.Poll)
	switch {
	case err == nil && last.State == osbapi.StateSucceeded:
		creds, err := s.fetch(ctx, c, meta, ids)
		if err == nil {
			return nil, false, s.store(ctx, c, meta, ids, ch, b, creds)
		}
		if !errors.Is(err, osbclient.ErrStillInProgress) {
			return nil, true, ch.unknown(err)
		}
	case err == nil:
		return nil, false, ch.failed(last)
	case !errors.Is(err, osbclient.ErrStillInProgress):
		return nil, true, ch.unknown(err)
	}
	return admission.Warnings{fmt.Sprintf("broker %q is still working to %s (%s); Secret %q appears when the broker finishes",
		ch.broker, ch.what, describeStill(err), b.Spec.SecretName)}, true, nil
}

// fetch reads a finished asynchronous binding's credentials; a broker
// answers 404 while the binding is not ready, so 404 means "poll again"
// until ctx ends.
func (s *bindingBroker) fetch(ctx context.Context, c *osbclient.Client, meta osbclient.RequestMeta, ids bindingIDs) (map[string]any, error) {
	interval := max(s.opts.Poll.MinInterval, 10*time.Millisecond)
	for {
		got, err := c.GetBinding(ctx, meta, osbclient.GetBindingRequest{InstanceID: ids.instance, BindingID: ids.binding, ServiceID: ids.service, PlanID: ids.plan})
		if err == nil {
			return got.Credentials, nil
		}
		if !osbclient.IsNotFound(err) {
			return nil, err
		}
		t := time.NewTimer(interval)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, &osbclient.StillInProgressError{Reason: "the broker did not serve the binding's credentials yet", Err: ctx.Err()}
		case <-t.C:
		}
	}
}

// store writes the credentials into the binding's Secret. When that fails
// the broker's binding would be an orphan: lockstep unbinds it and rejects.
func (s *bindingBroker) store(ctx context.Context, c *osbclient.Client, meta osbclient.RequestMeta, ids bindingIDs, ch change, b Binding, creds map[string]any) error {
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
func (s *bindingBroker) compensate(c *osbclient.Client, meta osbclient.RequestMeta, ids bindingIDs, b Binding) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err := c.Unbind(ctx, meta, osbclient.UnbindRequest{InstanceID: ids.instance, BindingID: ids.binding, ServiceID: ids.service, PlanID: ids.plan})
	s.opts.Log.Info("orphan mitigation: unbind", "binding", client.ObjectKeyFromObject(b).String(), "ok", err == nil)
}

func (s *bindingBroker) unbind(ctx context.Context, a *Attributes[Binding], t *Target, meta osbclient.RequestMeta, ans *journal.Answer) (admission.Warnings, bool, error) {
	b := a.Old
	c := t.Entry.Client
	ch := change{
		broker: t.Entry.Broker,
		what:   fmt.Sprintf("unbind binding %q of instance %q", b.Name, t.Instance.Name),
		stays:  fmt.Sprintf("the binding and its Secret %q stay as they were (no deletion was started)", b.Spec.SecretName),
		ifDone: "if the broker unbound it, lockstep deletes the binding",
		wayOut: wayOut(v1alpha1.KindServiceBinding, b.Namespace, b.Name),
	}
	ids := bindingIDs{instance: t.Instance.Spec.ExternalID, binding: b.Spec.ExternalID, service: t.Plan.Service.ID, plan: t.Plan.Plan.ID}
	resp, err := c.Unbind(ctx, meta, osbclient.UnbindRequest{InstanceID: ids.instance, BindingID: ids.binding, ServiceID: ids.service, PlanID: ids.plan})
	if err != nil {
		ans.HTTPStatus = brokerStatus(err)
		return nil, false, ch.refusal(err)
	}
	ans.HTTPStatus = resp.HTTPStatus
	if !resp.Async {
		return nil, false, nil
	}
	ans.OperationKey = resp.Operation
	req := osbclient.BindingLastOperationRequest{InstanceID: ids.instance, BindingID: ids.binding, ServiceID: ids.service, PlanID: ids.plan, Operation: resp.Operation}
	opts := s.opts.Poll
	opts.Deleting = true
	last, err := c.PollBinding(ctx, meta, req, opts)
	switch {
	case err == nil && last.State == osbapi.StateSucceeded:
		return nil, false, nil
	case err == nil:
		return nil, false, ch.failed(last)
	case !errors.Is(err, osbclient.ErrStillInProgress):
		return nil, true, ch.unknown(err)
	}
	return nil, true, statusError(409, metav1.StatusReasonConflict,
		"broker %q is still working to %s (%s); the binding stays until the broker finishes, then lockstep deletes it", ch.broker, ch.what, describeStill(err))
}

type bindingIDs struct{ instance, binding, service, plan string }
