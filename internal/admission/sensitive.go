package admission

import (
	"context"
	"encoding/json"
	"maps"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/lockstep-dev/lockstep/api/v1alpha1"
	"github.com/lockstep-dev/lockstep/internal/typed/render"
)

// sensitiveParameters refuses, on an object of a typed kind, a parameter
// in spec.parameters that the plan's schema marks sensitive (writeOnly,
// or format password: render.Sensitive): the spec is read by everyone who
// may read the object, and a typed kind's schema shows which parameters
// those are, so they come from Secrets (spec.parametersFrom). A
// ServiceInstance is not refused: its parameters were always free JSON,
// and refusing them now would break what its users already apply
// (docs/guide/typed-kinds.md).
type sensitiveParameters struct{}

func (c *sensitiveParameters) Name() string { return "sensitive-parameters" }

const sensitiveDetail = "the plan's schema marks this parameter sensitive (writeOnly or format password): the spec shows it to everyone who may read the object; " +
	"put it in a Secret and name the Secret's key in spec.parametersFrom instead; nothing was changed"

func (c *sensitiveParameters) Check(_ context.Context, a *Attributes[Instance], t *Target) (field.ErrorList, admission.Warnings, error) {
	si := a.New
	if !v1alpha1.Typed(si) || !t.found() || t.Plan.Schemas == nil || si.Spec.Parameters == nil || len(si.Spec.Parameters.Raw) == 0 {
		return nil, nil, nil
	}
	var params any
	if err := json.Unmarshal(si.Spec.Parameters.Raw, &params); err != nil {
		return nil, nil, nil // the schema check reports what is wrong with them
	}
	var errs field.ErrorList
	for _, p := range render.Sensitive(t.Plan.Schemas) {
		findSensitive(params, pathSegments(p), field.NewPath("spec", "parameters"), &errs)
	}
	return errs, nil, nil
}

// pathSegments splits a path of render.Sensitive ("admin.password",
// "users[*].password", "*") into member names, "[*]" and "*".
func pathSegments(p string) []string {
	var segs []string
	for _, name := range strings.Split(p, ".") {
		var items int
		for strings.HasSuffix(name, "[*]") {
			name, items = strings.TrimSuffix(name, "[*]"), items+1
		}
		if name != "" {
			segs = append(segs, name)
		}
		for range items {
			segs = append(segs, "[*]")
		}
	}
	return segs
}

// findSensitive adds an error for every value of v at the path segs.
func findSensitive(v any, segs []string, at *field.Path, errs *field.ErrorList) {
	if len(segs) == 0 {
		*errs = append(*errs, field.Forbidden(at, sensitiveDetail))
		return
	}
	seg, rest := segs[0], segs[1:]
	switch x := v.(type) {
	case []any:
		if seg == "[*]" {
			for i, e := range x {
				findSensitive(e, rest, at.Index(i), errs)
			}
		}
	case map[string]any:
		if seg == "*" {
			for _, name := range slices.Sorted(maps.Keys(x)) {
				findSensitive(x[name], rest, at.Child(name), errs)
			}
		} else if e, ok := x[seg]; ok {
			findSensitive(e, rest, at.Child(seg), errs)
		}
	}
}
