package resync

import (
	"encoding/json"
	"fmt"

	"github.com/lockstep-dev/lockstep/internal/parametersfrom"
)

// compareDigest compares the broker's parameters with what lockstep sent
// when some came from Secrets: lockstep kept only their digest, so the
// broker's parameters are digested the same way. When they differ, the
// members of spec.parameters are compared as usual, so that a drift there
// names its fields; the broker's other members (from Secrets, or added by
// the broker) are never shown.
//
// A digest under a key that is gone (removed from lockstep's keys before
// resync wrote the digest again) cannot tell: then the members of
// spec.parameters alone are compared.
func compareDigest(d Drift, applied, held State) (Drift, error) {
	verdict, err := parametersfrom.Verify(applied.ParametersDigest, held.Parameters)
	if err != nil {
		return Drift{}, fmt.Errorf("reading the broker's parameters: %w", err)
	}
	if verdict == parametersfrom.Same {
		return d, nil
	}
	ours := decode(object(applied.Parameters))
	theirs := decode(object(held.Parameters))
	visible := map[string]any{}
	for k := range ours {
		if v, ok := theirs[k]; ok {
			visible[k] = v
		}
	}
	raw, err := json.Marshal(visible)
	if err != nil {
		return Drift{}, fmt.Errorf("encoding the broker's parameters: %w", err)
	}
	plain, err := Compare(State{Parameters: applied.Parameters}, State{Parameters: raw})
	if err != nil {
		return Drift{}, err
	}
	d.Fields, d.values, d.Patch = plain.Fields, plain.values, plain.Patch
	d.FromSecrets = verdict == parametersfrom.Different
	return d, nil
}
