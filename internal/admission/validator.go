package admission

import (
	"context"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
	admissionv1 "k8s.io/api/admission/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/lockstep-dev/lockstep/internal/breaks"
	"github.com/lockstep-dev/lockstep/internal/metrics"
	"github.com/lockstep-dev/lockstep/internal/tracing"
	"github.com/lockstep-dev/lockstep/internal/typed/render"
)

// Validator is the validating chain for one kind. It implements
// controller-runtime's admission.Validator[T].
type Validator[T client.Object] struct {
	// Kind names the kind in error messages (objectKind: the model of a
	// typed object names its own).
	Kind schema.GroupKind
	// Paths, when set, names the fields of an object's errors as the
	// object has them (the model of a typed object: typedPaths).
	Paths func(obj T, errs field.ErrorList) field.ErrorList
	// SameSpec reports whether an update leaves the spec as it was.
	SameSpec func(old, new T) bool
	// Gate, when set, may decide a request before any check (the
	// object's reconcile policy).
	Gate Gate[T]
	// Checks are the static checks of the request alone, run first on
	// CREATE and spec UPDATEs.
	Checks []Check[T]
	// DeleteChecks are the static checks of the request alone, run first
	// on DELETE.
	DeleteChecks []Check[T]
	// Resolve, when set, finds what the request names, after Checks or
	// DeleteChecks, for every operation; nil resolves nothing (an empty
	// Target).
	Resolve Resolver[T]
	// TargetChecks are the static checks of the request against what
	// Resolve found, run after it on CREATE and spec UPDATEs.
	TargetChecks []TargetCheck[T]
	// Limits are what the cluster would refuse after lockstep (quotas,
	// per-plan limits), run after the checks, dry runs included.
	Limits []Limit[T]
	// Steps are the broker phase, run after the limits unless dry-run.
	Steps []Step[T]
	// Self is lockstep's own user name: its dry runs (the preflight of a
	// change it is carrying out) are allowed at once.
	Self string
	// Budget bounds the time spent on one request, broker calls included;
	// zero means no bound beyond the request's own.
	Budget time.Duration
}

var _ admission.Validator[client.Object] = &Validator[client.Object]{}

// ValidateCreate implements admission.Validator.
func (v *Validator[T]) ValidateCreate(ctx context.Context, obj T) (admission.Warnings, error) {
	var none T
	return v.admit(ctx, attributesFrom(ctx, admissionv1.Create, none, obj))
}

// ValidateUpdate implements admission.Validator.
func (v *Validator[T]) ValidateUpdate(ctx context.Context, oldObj, newObj T) (admission.Warnings, error) {
	return v.admit(ctx, attributesFrom(ctx, admissionv1.Update, oldObj, newObj))
}

// ValidateDelete implements admission.Validator.
func (v *Validator[T]) ValidateDelete(ctx context.Context, obj T) (admission.Warnings, error) {
	var none T
	return v.admit(ctx, attributesFrom(ctx, admissionv1.Delete, obj, none))
}

// admit runs the chain: pass-through classes first, then the static phase
// (the checks of the request alone, the Resolver, the checks against what
// it resolved; all field errors reported together as one 422, in that
// order), then the limits, then, unless dry-run, the broker steps in
// order with the resolved Target. Every decision is counted (metrics).
func (v *Validator[T]) admit(ctx context.Context, a *Attributes[T]) (_ admission.Warnings, err error) {
	reason := metrics.ReasonBroker
	defer func() { v.count(ctx, a.Operation, reason, err) }()
	if passThrough(a, v.SameSpec) {
		reason = metrics.ReasonUnchanged
		return nil, nil
	}
	if v.Budget > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, v.Budget)
		defer cancel()
	}
	if v.Gate != nil {
		done, w, err := v.Gate.Pass(ctx, a)
		if done || err != nil {
			reason = metrics.ReasonDetached
			return w, err
		}
	}
	t, errs, warnings, err := v.traceCheck(ctx, a)
	if err != nil {
		return warnings, err
	}
	if len(errs) > 0 {
		obj := a.Object()
		return warnings, invalid(objectKind(obj, v.Kind), obj.GetName(), v.paths(obj, errs))
	}
	for _, l := range v.Limits {
		release, lerr := l.Limit(ctx, a, t)
		if lerr != nil {
			return warnings, lerr
		}
		if release != nil {
			// err is admit's answer, as returned.
			defer func() { release(err == nil) }()
		}
	}
	if a.DryRun {
		reason = metrics.ReasonDryRun
		return warnings, nil
	}
	for _, s := range v.Steps {
		w, err := s.Admit(ctx, a, t)
		warnings = append(warnings, w...)
		if err != nil && !breaks.Active(breaks.AllowRefused) {
			return warnings, err
		}
	}
	return warnings, nil
}

// Precheck runs the chain of a CREATE or an UPDATE up to the broker phase,
// as a dry run does, and returns every field error (named as the object
// has its fields), with the warnings; an error refuses the request with
// its own status (the gate's, a read that failed). It changes nothing and
// counts no decision: a mutating webhook asks it, before the API server
// checks the object against its schema, so that the schema's errors and
// lockstep's come back in one answer (the API server stops at its own).
// The validating webhook checks the request again, in full.
func (v *Validator[T]) Precheck(ctx context.Context, a *Attributes[T]) (field.ErrorList, admission.Warnings, error) {
	if a.Operation == admissionv1.Delete || passThrough(a, v.SameSpec) {
		return nil, nil, nil
	}
	if v.Budget > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, v.Budget)
		defer cancel()
	}
	if v.Gate != nil {
		// On CREATE and UPDATE the gate only refuses; it writes nothing.
		if done, w, err := v.Gate.Pass(ctx, a); done || err != nil {
			return nil, w, err
		}
	}
	_, errs, warnings, err := v.check(ctx, a)
	if err != nil || len(errs) == 0 {
		return nil, warnings, err
	}
	return v.paths(a.Object(), errs), warnings, nil
}

// paths names errs as obj has its fields (Paths), when set.
func (v *Validator[T]) paths(obj T, errs field.ErrorList) field.ErrorList {
	if v.Paths == nil {
		return errs
	}
	return v.Paths(obj, errs)
}

// check runs the static phase and returns the resolved Target with every
// field error and warning. The first error stops it.
func (v *Validator[T]) check(ctx context.Context, a *Attributes[T]) (*Target, field.ErrorList, admission.Warnings, error) {
	checks := v.Checks
	if a.Operation == admissionv1.Delete {
		checks = v.DeleteChecks
	}
	var (
		errs     field.ErrorList
		warnings admission.Warnings
	)
	for _, c := range checks {
		e, w, err := c.Check(ctx, a)
		warnings = append(warnings, w...)
		if err != nil {
			return nil, nil, warnings, err
		}
		errs = append(errs, e...)
	}
	t := &Target{}
	if v.Resolve != nil {
		resolved, e, w, err := v.Resolve.Resolve(ctx, a)
		warnings = append(warnings, w...)
		if err != nil {
			return nil, nil, warnings, err
		}
		t, errs = resolved, append(errs, e...)
	}
	if a.Operation == admissionv1.Delete {
		return t, errs, warnings, nil
	}
	for _, c := range v.TargetChecks {
		e, w, err := c.Check(ctx, a, t)
		warnings = append(warnings, w...)
		if err != nil {
			return nil, nil, warnings, err
		}
		errs = append(errs, e...)
	}
	return t, errs, warnings, nil
}

// traceCheck runs the static phase in a lockstep.checks span.
func (v *Validator[T]) traceCheck(ctx context.Context, a *Attributes[T]) (*Target, field.ErrorList, admission.Warnings, error) {
	ctx, span := tracing.Start(ctx, tracing.SpanChecks)
	defer span.End()
	t, errs, warnings, err := v.check(ctx, a)
	if span.IsRecording() {
		span.SetAttributes(tracing.AttrFieldErrors.Int(len(errs)))
		if err != nil || len(errs) > 0 {
			span.SetStatus(codes.Error, "refused")
		}
	}
	return t, errs, warnings, err
}

// count records a decision: denied with the rejection's reason, or
// allowed for reason (unchanged, dry run, or carried out at the broker),
// under the kind of the request in ctx when it is a typed kind (one of
// the kinds lockstep renders, as many as the activated services), else
// the chain's kind.
func (v *Validator[T]) count(ctx context.Context, op admissionv1.Operation, reason string, err error) {
	result := metrics.Allowed
	if err != nil {
		result, reason = metrics.Denied, metrics.ReasonOf(err)
	}
	kind := v.Kind.Kind
	if req, rerr := admission.RequestFromContext(ctx); rerr == nil && req.Kind.Group == render.Group && req.Kind.Kind != "" {
		kind = req.Kind.Kind
	}
	metrics.AdmissionDecision(kind, string(op), result, reason)
	if span := tracing.Current(ctx); span.IsRecording() {
		decided(ctx, span, kind, op, result, reason)
	}
}

// decided says on the admission's span what was asked and how it was
// decided (never why in words: a message may quote parameter values).
func decided(ctx context.Context, span trace.Span, kind string, op admissionv1.Operation, result, reason string) {
	attrs := []attribute.KeyValue{tracing.AttrKind.String(kind), tracing.AttrOperation.String(string(op)),
		tracing.AttrResult.String(result), tracing.AttrReason.String(reason)}
	if req, err := admission.RequestFromContext(ctx); err == nil {
		attrs = append(attrs, tracing.AttrNamespace.String(req.Namespace), tracing.AttrName.String(req.Name),
			tracing.AttrDryRun.Bool(req.DryRun != nil && *req.DryRun))
	}
	span.SetAttributes(attrs...)
}

// objectKind names obj's kind in messages and records: the kind its
// TypeMeta carries when that is of another group than the chain's kind
// (the model of an object of a typed kind), else the chain's kind.
func objectKind(obj client.Object, chain schema.GroupKind) schema.GroupKind {
	if gk := obj.GetObjectKind().GroupVersionKind().GroupKind(); gk.Kind != "" && gk.Group != chain.Group {
		return gk
	}
	return chain
}
