package admission

import (
	"bytes"
	"context"
	"encoding/json"
	"reflect"
	"slices"

	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/lockstep-dev/lockstep/api/v1alpha1"
	"github.com/lockstep-dev/lockstep/internal/typed/object"
	"github.com/lockstep-dev/lockstep/internal/validate/schema"
)

// Every error at once. The API server checks an object against its CRD's
// schema (and CEL rules) after the mutating webhooks and before the
// validating ones, and stops at its own errors: a typed object with a
// value its CRD refuses (an enum) and one only lockstep refuses (a plan's
// bound the union of plans does not hold) would be refused twice, one
// error after the other, and the first answer would carry the API
// server's line "some validation rules were not checked". So lockstep's
// mutating webhook asks the validating chain's static checks first
// (Validator.Precheck, which covers what the CRD checks: the CRD is
// never stricter than the plans' schemas), and refuses with every error
// in one list; what it allows, the API server and the validating webhook
// check as ever.
//
// Typed objects are prechecked on every CREATE and every UPDATE that
// changes the spec (the webhook configuration sends those). A
// ServiceInstance's CRD checks little beyond types (its parameters are
// free JSON), so its requests are prechecked only when spec.parameters is
// not a JSON object, which is the type error the API server would answer
// first (the webhook configuration sends those UPDATEs only).

// precheck prechecks the models t of a request about typed kind kind
// (the new one defaulted where the request is defaulted), adding what the
// API server's check of the object against the kind's CRD schema finds
// at other fields (where the plan is unknown, lockstep does not check the
// parameters; a parameter the CRD requires in spec.parameters that the
// object takes from a Secret); nil when there is nothing to refuse.
func (k *TypedKinds) precheck(ctx context.Context, v *Validator[Instance], req admission.Request, t *typedObjects, kind object.Kind) *admission.Response {
	if v == nil {
		return nil
	}
	a := &Attributes[Instance]{Operation: req.Operation, DryRun: req.DryRun != nil && *req.DryRun, User: req.UserInfo, Old: t.oldModel, New: asStored(t.newModel, t.oldModel)}
	errs, warnings, err := v.Precheck(ctx, a)
	if err != nil {
		return new(refusal(err, warnings))
	}
	errs = appendShape(errs, t.newModel)
	schemaErrs, err := k.schemaErrors(ctx, kind, t)
	if err != nil {
		return new(refusal(err, warnings))
	}
	errs = appendOtherFields(errs, schemaErrs...)
	if len(errs) == 0 {
		return nil
	}
	return new(refusal(invalid(kind.GVK.GroupKind(), t.new.GetName(), errs), warnings))
}

// appendOtherFields appends to errs those of more (the API server's
// words) at a field errs has no error at yet (lockstep's words for it,
// which name the plan's own rule, are kept).
func appendOtherFields(errs field.ErrorList, more ...*field.Error) field.ErrorList {
	for _, e := range more {
		if !slices.ContainsFunc(errs, func(x *field.Error) bool { return x.Field == e.Field }) {
			errs = append(errs, e)
		}
	}
	return errs
}

// asStored is a copy of si, the new object of a request as a mutating
// webhook gets it, with the status the API server stores with it (and the
// validating webhooks see): the status it had (old), or none on a create.
// The status is written through its subresource only, and the main
// resource's request keeps whatever a client sent there until the API
// server puts the stored status back, after the mutating webhooks.
func asStored(si, old *v1alpha1.ServiceInstance) *v1alpha1.ServiceInstance {
	if si == nil {
		return nil
	}
	c := si.DeepCopy()
	c.Status = v1alpha1.ServiceInstanceStatus{}
	if old != nil {
		old.Status.DeepCopyInto(&c.Status)
	}
	return c
}

// appendShape appends to errs the error of si's spec.parameters when they
// are not a JSON object and errs does not say so already: the schema
// check says so only where the plan is known, and the API server says so
// in any case.
func appendShape(errs field.ErrorList, si *v1alpha1.ServiceInstance) field.ErrorList {
	if si == nil {
		return errs
	}
	if e := schema.ShapeError(si.Spec.Parameters, field.NewPath("spec", "parameters")); e != nil {
		return appendOtherFields(errs, e)
	}
	return errs
}

// instancePrecheck is the mutating handler of ServiceInstances (Handler)
// with a precheck ahead of it for a request whose spec.parameters is not a
// JSON object: the request is refused with every error the validating
// chain finds, on the instance as the defaulter would make it, instead of
// with the API server's type error alone.
type instancePrecheck struct {
	admission.Handler
	defaulter *Defaulter[Instance]
	validator *Validator[Instance]
}

// Handle implements admission.Handler.
func (h *instancePrecheck) Handle(ctx context.Context, req admission.Request) admission.Response {
	if h.validator == nil || (req.Operation != admissionv1.Create && req.Operation != admissionv1.Update) ||
		deleting(req.Object.Raw) || deleting(req.OldObject.Raw) || !parametersNotObject(req.Object.Raw) {
		return h.Handler.Handle(ctx, req)
	}
	si := &v1alpha1.ServiceInstance{}
	if err := json.Unmarshal(req.Object.Raw, si); err != nil {
		return h.Handler.Handle(ctx, req) // a field of another type: fieldTypes answers
	}
	var old *v1alpha1.ServiceInstance
	if len(req.OldObject.Raw) > 0 {
		old = &v1alpha1.ServiceInstance{}
		if err := json.Unmarshal(req.OldObject.Raw, old); err != nil {
			return h.Handler.Handle(ctx, req)
		}
	}
	ctx = admission.NewContextWithRequest(ctx, req)
	if req.Operation == admissionv1.Create || !labelled(si) || !labelled(old) {
		if err := h.defaulter.Default(ctx, si); err != nil {
			return refusal(err, nil)
		}
	}
	a := &Attributes[Instance]{Operation: req.Operation, DryRun: req.DryRun != nil && *req.DryRun, User: req.UserInfo, Old: old, New: asStored(si, old)}
	errs, warnings, err := h.validator.Precheck(ctx, a)
	errs = appendShape(errs, si)
	switch {
	case err != nil:
		return refusal(err, warnings)
	case len(errs) > 0:
		return refusal(invalid(instanceKind, si.Name, errs), warnings)
	}
	return h.Handler.Handle(ctx, req)
}

// parametersNotObject reports whether raw, an object, has a
// spec.parameters that is neither a JSON object nor null.
func parametersNotObject(raw []byte) bool {
	spec, ok := memberValue(raw, "spec")
	if !ok {
		return false
	}
	params, ok := memberValue(spec, "parameters")
	if !ok {
		return false
	}
	params = bytes.TrimSpace(params)
	return len(params) > 0 && params[0] != '{' && !bytes.Equal(params, []byte("null"))
}

// memberValue is the raw value of the member name of the JSON object in
// raw (the last one of that name); false when there is none, or raw is
// not an object.
func memberValue(raw []byte, name string) ([]byte, bool) {
	var value []byte
	found := false
	err := members(raw, func(m member) bool {
		if !m.Escaped && string(m.Name) == name {
			value, found = m.Value, true
		}
		return true
	})
	return value, found && err == nil
}

// labelled reports whether obj carries v1alpha1.DefaultedLabel: lockstep
// defaulted it, and is not asked about its later updates to default it
// again.
func labelled(obj metav1.Object) bool {
	return obj != nil && !reflect.ValueOf(obj).IsNil() && obj.GetLabels()[v1alpha1.DefaultedLabel] == "true"
}
