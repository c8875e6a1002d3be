package resync

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	jsonpatch "github.com/evanphx/json-patch/v5"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/lockstep-dev/lockstep/internal/jsonnum"
)

// Reasons of the InSync condition that resync writes.
const (
	ReasonInSync            = "InSync"
	ReasonPlanDrift         = "PlanDrift"
	ReasonParametersDrift   = "ParametersDrift"
	ReasonGoneAtBroker      = "GoneAtBroker"
	ReasonBrokerUnreachable = "BrokerUnreachable"
	ReasonNotRetrievable    = "NotRetrievable"
)

// State is one side of a comparison: a plan and parameters. An empty
// PlanID, or nil Parameters on the broker's side, means the broker did not
// say, and that part is not compared.
type State struct {
	PlanID     string
	Parameters json.RawMessage
	// ParametersDigest, on the applied side, is set when some parameters
	// came from Secrets: Parameters then holds spec.parameters only, and
	// the broker's parameters are compared with the digest. A difference
	// names the fields of spec.parameters that differ, and never shows
	// the values of the others.
	ParametersDigest string
}

// Drift is what differs between what lockstep applied and what the broker
// holds.
type Drift struct {
	// Plan is set when the plans differ: the broker's plan id.
	Plan string
	// Fields are the top-level parameters that differ, sorted.
	Fields []string
	// values are each differing field's value at the broker and here, as
	// shown to a person.
	values map[string][2]string
	// Patch is the JSON merge patch that turns the applied parameters into
	// the broker's.
	Patch json.RawMessage
	// FromSecrets is set when the parameters differ by digest only: the
	// parameters from Secrets, or parameters the broker added.
	FromSecrets bool
}

// None reports whether nothing differs.
func (d Drift) None() bool { return d.Plan == "" && len(d.Fields) == 0 && !d.FromSecrets }

// Compare computes what differs between applied and held. Parameters are
// compared by their JSON meaning: key order and number spelling do not
// matter.
func Compare(applied, held State) (Drift, error) {
	var d Drift
	if held.PlanID != "" && held.PlanID != applied.PlanID {
		d.Plan = held.PlanID
	}
	if held.Parameters == nil {
		return d, nil
	}
	if applied.ParametersDigest != "" {
		return compareDigest(d, applied, held)
	}
	from, to := object(applied.Parameters), object(held.Parameters)
	patch, err := jsonpatch.CreateMergePatch(from, to)
	if err != nil {
		return Drift{}, fmt.Errorf("comparing the parameters lockstep applied with the broker's: %w", err)
	}
	var changed map[string]json.RawMessage
	if err := json.Unmarshal(patch, &changed); err != nil {
		return Drift{}, fmt.Errorf("reading the parameters' difference: %w", err)
	}
	// The merge patch compares numbers by their spelling; a member whose
	// values mean the same (1 and 1.0) is no drift.
	ours, theirs := decode(from), decode(to)
	for k := range changed {
		a, inOurs := ours[k]
		b, inTheirs := theirs[k]
		if inOurs && inTheirs && jsonnum.ValuesEqual(a, b) {
			delete(changed, k)
			continue
		}
		d.Fields = append(d.Fields, k)
	}
	if len(d.Fields) == 0 {
		return d, nil
	}
	sort.Strings(d.Fields)
	var heldRaw, appliedRaw map[string]json.RawMessage
	_ = json.Unmarshal(to, &heldRaw)
	_ = json.Unmarshal(from, &appliedRaw)
	d.values = map[string][2]string{}
	for _, f := range d.Fields {
		d.values[f] = [2]string{shown(heldRaw[f]), shown(appliedRaw[f])}
	}
	if d.Patch, err = json.Marshal(changed); err != nil {
		return Drift{}, fmt.Errorf("encoding the parameters' difference: %w", err)
	}
	return d, nil
}

// decode reads a JSON object with its numbers kept as written.
func decode(raw []byte) map[string]any {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var m map[string]any
	_ = dec.Decode(&m) // CreateMergePatch already refused what is not an object
	return m
}

// object returns raw, or {} when it is empty or null.
func object(raw json.RawMessage) []byte {
	s := strings.TrimSpace(string(raw))
	if s == "" || s == "null" {
		return []byte("{}")
	}
	return raw
}

// Message says what differs for a person: the plans by name, and each
// differing parameter with the broker's value and the applied one.
func (d Drift) Message(broker string, planName func(id string) string, appliedPlan string) string {
	var parts []string
	if d.Plan != "" {
		parts = append(parts, fmt.Sprintf("plan is %q at the broker, %q here", planName(d.Plan), appliedPlan))
	}
	if d.FromSecrets && len(d.Fields) == 0 {
		parts = append(parts, "parameters differ from what lockstep sent (compared by digest, as some came from Secrets: spec.parametersFrom; the values are not shown)")
	}
	if len(d.Fields) > 0 {
		var fields []string
		for _, f := range d.Fields {
			v := d.values[f]
			fields = append(fields, fmt.Sprintf("%s (broker: %s, here: %s)", f, v[0], v[1]))
		}
		parts = append(parts, "parameters differ: "+strings.Join(fields, ", "))
	}
	return fmt.Sprintf("broker %q holds something else than lockstep applied: %s", broker, strings.Join(parts, "; "))
}

// shown is a value for a message: its JSON, cut short; "unset" for a value
// one side does not have (a merge patch's null).
func shown(raw json.RawMessage) string {
	s := strings.TrimSpace(string(raw))
	if s == "" || s == "null" {
		return "unset"
	}
	const max = 80
	if len(s) > max {
		s = s[:max] + "…"
	}
	return s
}

// Reason is the InSync reason for d: plan drift first, as it is the larger
// change.
func (d Drift) Reason() string {
	if d.Plan != "" {
		return ReasonPlanDrift
	}
	return ReasonParametersDrift
}

// Parameters returns an object's parameters for a State: nil when it has
// none.
func Parameters(p *runtime.RawExtension) json.RawMessage {
	if p == nil || len(p.Raw) == 0 {
		return nil
	}
	return p.Raw
}
