package instance

import (
	"bytes"
	"encoding/json"

	"k8s.io/apimachinery/pkg/runtime"

	"github.com/lockstep-dev/lockstep/internal/controller/resync"
	"github.com/lockstep-dev/lockstep/internal/jsonnum"
	"github.com/lockstep-dev/lockstep/internal/validate/schema"
)

// createOnlyDrift sorts out parameters that differ only in create-only
// ones (in the plan's create schema, not in its update schema). An update
// never carries those, so a broker that replaces an instance's parameters
// with an update's no longer reports them: a create-only parameter the
// broker does not report is no drift. One it reports with another value
// is drift, but re-applying the spec cannot correct it, and would only be
// repeated at every resync: correctable is false then. Any other drift is
// returned as it is, correctable.
func createOnlyDrift(s *schema.PlanSchemas, applied, held resync.State, d resync.Drift) (_ resync.Drift, correctable bool) {
	if len(d.Fields) == 0 || applied.ParametersDigest != "" {
		return d, true
	}
	a, errA := s.UpdateParameters(ext(applied.Parameters))
	h, errH := s.UpdateParameters(ext(held.Parameters))
	if errA != nil || errH != nil {
		return d, true
	}
	rest, err := resync.Compare(resync.State{Parameters: a}, resync.State{Parameters: h})
	if err != nil || len(rest.Fields) > 0 {
		return d, true // an update can change what differs
	}
	appliedOnly, errA := s.CreateOnlyValues(ext(applied.Parameters))
	heldOnly, errH := s.CreateOnlyValues(ext(held.Parameters))
	if errA != nil || errH != nil {
		return d, true
	}
	ours, theirs := decodeNumbers(appliedOnly), decodeNumbers(heldOnly)
	for path, v := range theirs {
		if mine, ok := ours[path]; !ok || !jsonnum.ValuesEqual(mine, v) {
			return d, false // the broker holds another value
		}
	}
	return resync.Drift{Plan: d.Plan}, true // the broker only does not report some
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
