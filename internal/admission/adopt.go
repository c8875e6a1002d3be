package admission

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/lockstep-dev/lockstep/api/v1alpha1"
	"github.com/lockstep-dev/lockstep/internal/brokercall"
	"github.com/lockstep-dev/lockstep/internal/credentials"
	"github.com/lockstep-dev/lockstep/internal/jsonnum"
	"github.com/lockstep-dev/lockstep/internal/parametersfrom"
)

// Adoption: a create annotated lockstep.dev/adopt=true names, in
// spec.externalID, an instance or binding that already exists at the
// broker (made by another platform, or before lockstep was installed).
// lockstep fetches it instead of creating one, and lets the object be
// persisted only if the broker holds exactly what the spec says; otherwise
// the refusal shows the broker's values, so that the user can write the
// true spec. Nothing changes at the broker either way.

// adoptableInstance refuses an adoption the broker cannot serve: it does
// not let lockstep read instances of the service.
func adoptableInstance(si Instance, t *Target) error {
	if t.Plan.Service.InstancesRetrievable {
		return nil
	}
	return statusError(http.StatusUnprocessableEntity, metav1.StatusReasonInvalid,
		"instance %q cannot adopt %q: broker %q does not let lockstep read instances of service %q (instances_retrievable is false); nothing was created; "+
			"to create a new instance instead, remove the annotation %s", si.Name, si.Spec.ExternalID, t.Entry.Broker, si.Spec.ServiceName, v1alpha1.AnnotationAdopt)
}

// adoptedInstance compares the instance the broker holds with the spec.
func adoptedInstance(si Instance, t *Target, held brokercall.Held) error {
	if held.Missing {
		return statusError(http.StatusNotFound, metav1.StatusReasonNotFound,
			"instance %q cannot adopt %q: broker %q holds no instance with this id; nothing was created; "+
				"check spec.externalID, or remove the annotation %s to create a new instance", si.Name, si.Spec.ExternalID, t.Entry.Broker, v1alpha1.AnnotationAdopt)
	}
	got := held.Instance
	var differs []string
	if got.PlanID != "" && got.PlanID != t.Plan.Plan.ID {
		differs = append(differs, fmt.Sprintf("plan %q (the spec says %q)", t.Entry.PlanName(got.PlanID), si.Spec.PlanName))
	}
	if want := raw(mergedParams(t.Params, si.Spec.Parameters)); got.Parameters != nil && !sameJSON(got.Parameters, want) {
		differs = append(differs, parametersDiffer(got.Parameters, want, t.Params))
	}
	if len(differs) > 0 {
		return conflict("instance %q cannot adopt %q: broker %q holds it with %s; nothing was created; write the broker's values into the spec to adopt it as it is",
			si.Name, si.Spec.ExternalID, t.Entry.Broker, joinAnd(differs))
	}
	return nil
}

// adoptableBinding refuses an adoption the broker cannot serve: it does
// not let lockstep read bindings of the service.
func adoptableBinding(b Binding, t *Target) error {
	if t.Plan.Service.BindingsRetrievable {
		return nil
	}
	return statusError(http.StatusUnprocessableEntity, metav1.StatusReasonInvalid,
		"binding %q cannot adopt %q: broker %q does not let lockstep read bindings of service %q (bindings_retrievable is false); nothing was created; "+
			"to create a new binding instead, remove the annotation %s", b.Name, b.Spec.ExternalID, t.Entry.Broker, t.Plan.Service.Name, v1alpha1.AnnotationAdopt)
}

// adoptedBinding compares the binding the broker holds with the spec, and
// stores its credentials in the binding's Secret, as a bind does.
func (s *bindingBroker) adoptedBinding(ctx context.Context, b Binding, t *Target, o credentials.Offering, held brokercall.Held) error {
	if held.Missing {
		return statusError(http.StatusNotFound, metav1.StatusReasonNotFound,
			"binding %q cannot adopt %q: broker %q holds no binding with this id for instance %q; nothing was created; "+
				"check spec.externalID, or remove the annotation %s to create a new binding", b.Name, b.Spec.ExternalID, t.Entry.Broker, t.Instance.Name, v1alpha1.AnnotationAdopt)
	}
	got := held.Binding
	if want := raw(mergedParams(t.Params, b.Spec.Parameters)); got.Parameters != nil && !sameJSON(got.Parameters, want) {
		return conflict("binding %q cannot adopt %q: broker %q holds it with %s; nothing was created; "+
			"write the broker's values into the spec to adopt it as it is", b.Name, b.Spec.ExternalID, t.Entry.Broker, parametersDiffer(got.Parameters, want, t.Params))
	}
	if err := credentials.Write(ctx, s.writer, b, o, got.Credentials); err != nil {
		return unavailable("binding %q adopted %q, but lockstep could not write Secret %q: %v; nothing was created (the broker keeps the binding): retry",
			b.Name, b.Spec.ExternalID, b.Spec.SecretName, err)
	}
	return nil
}

// parametersDiffer says that the broker holds other parameters than the
// spec: with both values, or, when some parameters come from Secrets,
// with neither (the broker's would show what it holds for them).
func parametersDiffer(held, want json.RawMessage, params *parametersfrom.Resolved) string {
	if params != nil && params.FromSecrets() {
		return "other parameters than the spec and its Secrets (spec.parametersFrom) say (the values are not shown, as some come from Secrets)"
	}
	return fmt.Sprintf("parameters %s (the spec says %s)", compact(held), compact(want))
}

// sameJSON reports whether two JSON documents mean the same (numbers by
// value); a missing document equals an empty object.
func sameJSON(a, b json.RawMessage) bool {
	x, okA := decodeJSON(a)
	y, okB := decodeJSON(b)
	return okA && okB && jsonnum.ValuesEqual(x, y)
}

func decodeJSON(raw json.RawMessage) (any, bool) {
	if len(bytes.TrimSpace(raw)) == 0 || string(raw) == "null" {
		return map[string]any{}, true
	}
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	var v any
	return v, d.Decode(&v) == nil
}

// compact prints JSON on one line, {} for none.
func compact(raw json.RawMessage) string {
	if len(bytes.TrimSpace(raw)) == 0 || string(raw) == "null" {
		return "{}"
	}
	var buf bytes.Buffer
	if json.Compact(&buf, raw) != nil {
		return string(raw)
	}
	return buf.String()
}

// joinAnd joins parts with commas and a final "and".
func joinAnd(parts []string) string {
	switch len(parts) {
	case 0:
		return ""
	case 1:
		return parts[0]
	}
	out := parts[0]
	for _, p := range parts[1 : len(parts)-1] {
		out += ", " + p
	}
	return out + " and " + parts[len(parts)-1]
}
