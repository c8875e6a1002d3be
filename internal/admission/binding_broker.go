package admission

import (
	"context"
	"fmt"

	admissionv1 "k8s.io/api/admission/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/lockstep-dev/lockstep/api/v1alpha1"
	"github.com/lockstep-dev/lockstep/internal/brokercall"
	"github.com/lockstep-dev/lockstep/internal/credentials"
)

// bindingBroker carries a binding's create and delete out at the broker,
// through the one protocol of a broker call (see carry.go): bind (then the
// credentials go into the binding's Secret; a bind whose credentials
// cannot be stored or read is undone by the operations reconciler, as
// orphan mitigation), adopt, and unbind.
type bindingBroker struct {
	carry  *carrier
	writer client.Client
}

func (s *bindingBroker) Name() string { return "broker" }

func (s *bindingBroker) Admit(ctx context.Context, a *Attributes[Binding], t *Target) (admission.Warnings, error) {
	b := a.Object()
	if a.Operation == admissionv1.Delete && b.DeletionTimestamp != nil {
		return nil, nil // already being deleted: the broker confirmed before
	}
	req := brokercall.ForBinding(v1alpha1.VerbBind, b, t.Instance, t.Entry, t.Plan, brokercall.Requester(a.User))
	req.ParametersDigest = parametersDigest(t.Params)
	var ch wording
	switch {
	case a.Operation == admissionv1.Delete:
		req.Verb = v1alpha1.VerbUnbind
		ch = wording{
			broker: t.Entry.Broker, kind: "binding",
			what:   fmt.Sprintf("unbind binding %q of instance %q", b.Name, t.Instance.Name),
			stays:  fmt.Sprintf("the binding and its Secret %q stay as they were (no deletion was started)", b.Spec.SecretName),
			unsure: fmt.Sprintf("the binding and its Secret %q are not deleted for now", b.Spec.SecretName),
			ifDone: "if the broker unbound it, lockstep deletes the binding",
			wayOut: wayOut(v1alpha1.KindServiceBinding, b.Namespace, b.Name),
		}
	case v1alpha1.Adopting(b):
		req.Verb = v1alpha1.VerbAdopt
		ch = wording{broker: t.Entry.Broker, kind: "binding", what: fmt.Sprintf("read binding %q to adopt it", b.Spec.ExternalID), stays: "nothing was created"}
		if err := adoptableBinding(b, t); err != nil {
			return nil, err
		}
		req.Adopt = func(ctx context.Context, held brokercall.Held) error {
			return s.adoptedBinding(ctx, b, t, req.Offering, held)
		}
	default:
		ch = wording{
			broker: t.Entry.Broker, kind: "binding",
			what:     fmt.Sprintf("bind instance %q for binding %q", t.Instance.Name, b.Name),
			stays:    "nothing was created",
			unsure:   "the binding is not created",
			ifDone:   "if the broker created the binding, lockstep unbinds it",
			whenDone: fmt.Sprintf("Secret %q appears when the broker finishes", b.Spec.SecretName),
		}
		req.Parameters = raw(mergedParams(t.Params, b.Spec.Parameters))
		req.Store = func(ctx context.Context, creds map[string]any) error {
			return credentials.Write(ctx, s.writer, b, req.Offering, creds)
		}
	}
	return s.carry.carryOut(ctx, req, ch)
}
