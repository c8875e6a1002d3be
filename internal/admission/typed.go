package admission

import (
	"context"
	"encoding/json"
	"net/http"

	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/lockstep-dev/lockstep/api/v1alpha1"
	"github.com/lockstep-dev/lockstep/internal/typed/object"
)

// Objects of typed kinds (group services.lockstep.dev, one kind per
// activated service) go through the instance chain unchanged: the
// handlers below find the request's kind (TypedKinds), map its objects to
// their models (object.ToInstance, typed_kinds.go), and run the same
// Defaulter and Validator as ServiceInstances, with every step: field
// policies, schema checks, the dry-run stop, the broker call with its lock
// and journal, delete rollback, adoption, access rules, parametersFrom.
// The models carry the typed kind, so messages and the journal's records
// name it, and field errors name the typed object's fields (typedPaths).
// What the defaulter changes is written back with object.FromInstance and
// answered as a JSON patch of the typed object.

// TypedDefaulterWebhook serves the instance defaulter for objects of
// typed kinds, and prechecks them with v (precheck.go). d must be the
// instance defaulter that InstanceDefaulterWebhook serves (it decodes the
// persisted model).
func TypedDefaulterWebhook(kinds *TypedKinds, d *Defaulter[Instance], v *Validator[Instance]) *admission.Webhook {
	return withLogger(&admission.Webhook{Handler: &typedDefaulter{kinds: kinds, defaulter: d, validator: v}})
}

// TypedValidatorWebhook serves the instance validator for objects of
// typed kinds.
func TypedValidatorWebhook(kinds *TypedKinds, v *Validator[Instance]) *admission.Webhook {
	return withLogger(&admission.Webhook{Handler: &validatingHandler[Instance]{
		validator: v, new: func() Instance { return &v1alpha1.ServiceInstance{} },
		parts: func(si Instance) (*metav1.ObjectMeta, any) { return &si.ObjectMeta, &si.Spec },
		model: kinds.model,
	}})
}

// model maps a validating request's objects to their models. An object of
// a kind lockstep did not render may be deleted (there is nothing at a
// broker to deprovision), not created or changed; an object of a kind
// being deactivated is not created (refuseRetiring).
func (k *TypedKinds) model(ctx context.Context, req admission.Request) (admission.Request, *admission.Response) {
	kind, ok, err := k.kindOf(ctx, req)
	if err != nil {
		return req, new(refusal(err, nil))
	}
	if !ok {
		if req.Operation == admissionv1.Delete {
			return req, new(admission.Allowed(""))
		}
		return req, new(refusal(notLockstep(req), nil))
	}
	if req.Operation == admissionv1.Create {
		if err := k.refuseRetiring(ctx, kind); err != nil {
			return req, new(refusal(err, nil))
		}
	}
	t, err := mapObjects(req, kind)
	if err != nil {
		return req, new(refusal(err, nil))
	}
	modelReq, err := t.modelRequest(req, false)
	if err != nil {
		return req, new(admission.Errored(http.StatusInternalServerError, err))
	}
	return modelReq, nil
}

// typedDefaulter is the mutating handler of typed kinds: the instance
// Defaulter on the model, answered as a patch of the typed object, and
// the validator's precheck of the model (precheck.go), answered as a
// refusal with every error. An UPDATE of an object lockstep defaulted
// (old and new labelled), which the API server sends because it changes
// the spec, is prechecked only.
type typedDefaulter struct {
	kinds     *TypedKinds
	defaulter *Defaulter[Instance]
	validator *Validator[Instance]
}

var _ admission.Handler = &typedDefaulter{}

// Handle implements admission.Handler.
func (h *typedDefaulter) Handle(ctx context.Context, req admission.Request) admission.Response {
	if req.Operation != admissionv1.Create && req.Operation != admissionv1.Update {
		return admission.Allowed("")
	}
	// An object being deleted is never changed (its finalizers are being
	// removed), and nothing is read to decide that.
	if deleting(req.Object.Raw) || deleting(req.OldObject.Raw) {
		return admission.Allowed("")
	}
	kind, ok, err := h.kinds.kindOf(ctx, req)
	if err != nil {
		return refusal(err, nil)
	}
	if !ok {
		return admission.Allowed("") // the validating webhook says why it is refused
	}
	if req.Operation == admissionv1.Create {
		// As the validating webhook refuses it, from the cache: an answer
		// that comes first for a kind being deactivated.
		if err := refuseRetiring(ctx, h.kinds.Reader, kind); err != nil {
			return refusal(err, nil)
		}
	}
	t, err := mapObjects(req, kind)
	if err != nil {
		return refusal(err, nil)
	}
	modelReq, err := t.modelRequest(req, true)
	if err != nil {
		return admission.Errored(http.StatusInternalServerError, err)
	}
	ctx = admission.NewContextWithRequest(ctx, modelReq)
	defaults := req.Operation == admissionv1.Create || !labelled(t.new) || !labelled(t.old)
	if defaults {
		if err := h.defaulter.Default(ctx, t.newModel); err != nil {
			return refusal(err, nil)
		}
	}
	if answer := h.kinds.precheck(ctx, h.validator, req, t, kind); answer != nil {
		return *answer
	}
	if !defaults {
		return admission.Allowed("")
	}
	if err := object.FromInstance(t.newModel, t.new); err != nil {
		return admission.Errored(http.StatusInternalServerError, err)
	}
	patched, err := t.new.MarshalJSON()
	if err != nil {
		return admission.Errored(http.StatusInternalServerError, err)
	}
	return admission.PatchResponseFromRaw(req.Object.Raw, patched)
}

// deleting reports whether a raw object has a deletionTimestamp.
func deleting(raw []byte) bool {
	if len(raw) == 0 {
		return false
	}
	var o struct {
		Metadata struct {
			DeletionTimestamp *metav1.Time `json:"deletionTimestamp"`
		} `json:"metadata"`
	}
	return json.Unmarshal(raw, &o) == nil && o.Metadata.DeletionTimestamp != nil
}
