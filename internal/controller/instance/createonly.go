package instance

import (
	"bytes"
	"encoding/json"

	"k8s.io/apimachinery/pkg/runtime"

	"github.com/lockstep-dev/lockstep/internal/controller/resync"
	"github.com/lockstep-dev/lockstep/internal/jsonnum"
	"github.com/lockstep-dev/lockstep/internal/validate/schema"
)

// createOnlyDrift sorts out the create-only parameters (in the plan's
// create schema, not in its update schema) of a drift in parameters. An
// update never carries them, so a broker that replaces an instance's
// parameters with an update's no longer reports them: a create-only
// parameter the broker does not report is no drift, and the drift is
// compared again as if the broker reported it as it was given. One the
// broker reports with another value is drift that re-applying the spec
// cannot correct (it would only be repeated at every resync):
// correctable is false then.
func createOnlyDrift(s *schema.PlanSchemas, applied, held resync.State, d resync.Drift) (_ resync.Drift, correctable bool) {
	if len(d.Fields) == 0 && !d.FromSecrets {
		return d, true
	}
	filled, err := s.FillCreateOnly(ext(held.Parameters), ext(applied.Parameters))
	if err != nil || filled == nil {
		return d, true
	}
	again, err := resync.Compare(applied, resync.State{PlanID: held.PlanID, Parameters: filled})
	if err != nil {
		return d, true
	}
	ours, errA := s.CreateOnlyValues(ext(applied.Parameters))
	theirs, errH := s.CreateOnlyValues(ext(held.Parameters))
	if errA != nil || errH != nil {
		return again, true
	}
	mine := decodeNumbers(ours)
	for path, v := range decodeNumbers(theirs) {
		if w, ok := mine[path]; ok && !jsonnum.ValuesEqual(w, v) {
			return again, false // the broker holds another value
		}
	}
	return again, true
}

func ext(raw json.RawMessage) *runtime.RawExtension {
	if raw == nil {
		return nil
	}
	return &runtime.RawExtension{Raw: raw}
}

// decodeNumbers reads a JSON object with its numbers kept as written.
func decodeNumbers(raw json.RawMessage) map[string]any {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var m map[string]any
	_ = dec.Decode(&m)
	return m
}
