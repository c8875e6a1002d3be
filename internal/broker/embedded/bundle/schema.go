package bundle

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// SchemaKind names one of a plan's schemas.
type SchemaKind string

// The schemas of a plan.
const (
	CreateSchema SchemaKind = "create"
	UpdateSchema SchemaKind = "update"
	BindSchema   SchemaKind = "bind"
)

// refuseLoader refuses every external reference: OSB schemas must not have
// any, and the broker must never fetch a URL because a bundle says so.
type refuseLoader struct{}

func (refuseLoader) Load(url string) (any, error) {
	return nil, fmt.Errorf("external schema reference %q is not allowed (OSB schemas must be self-contained)", url)
}

func compileSchema(planID string, kind SchemaKind, raw json.RawMessage) (*jsonschema.Schema, error) {
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return nil, fmt.Errorf("decode: %w", err)
	}
	c := jsonschema.NewCompiler()
	c.UseLoader(refuseLoader{})
	url := fmt.Sprintf("urn:lockstep:plan:%s:%s", planID, kind)
	if err := c.AddResource(url, doc); err != nil {
		return nil, err
	}
	return c.Compile(url)
}

// ParametersError lists every way parameters violate a schema.
type ParametersError struct {
	Kind       SchemaKind
	Plan       string
	Violations []string
}

func (e *ParametersError) Error() string {
	return fmt.Sprintf("parameters do not match the %s schema of plan %q: %s",
		e.Kind, e.Plan, strings.Join(e.Violations, "; "))
}

// validate checks params (nil means an empty object) against sch.
func validate(sch *jsonschema.Schema, planName string, kind SchemaKind, params json.RawMessage) error {
	if len(params) == 0 || string(params) == "null" {
		params = json.RawMessage(`{}`)
	}
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(params))
	if err != nil {
		return &ParametersError{Kind: kind, Plan: planName, Violations: []string{"not valid JSON: " + err.Error()}}
	}
	if _, ok := inst.(map[string]any); !ok {
		return &ParametersError{Kind: kind, Plan: planName, Violations: []string{"parameters must be a JSON object"}}
	}
	if sch == nil {
		return nil
	}
	err = sch.Validate(inst)
	if err == nil {
		return nil
	}
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		return fmt.Errorf("validate parameters against the %s schema of plan %q: %w", kind, planName, err)
	}
	var violations []string
	collectLeaves(ve, &violations)
	sort.Strings(violations)
	return &ParametersError{Kind: kind, Plan: planName, Violations: violations}
}

func collectLeaves(e *jsonschema.ValidationError, out *[]string) {
	if len(e.Causes) == 0 {
		*out = append(*out, e.Error())
		return
	}
	for _, c := range e.Causes {
		collectLeaves(c, out)
	}
}

// topLevelProperties returns the names under "properties" of a schema.
func topLevelProperties(raw json.RawMessage) map[string]bool {
	var s struct {
		Properties map[string]json.RawMessage `json:"properties"`
	}
	out := map[string]bool{}
	if len(raw) == 0 || json.Unmarshal(raw, &s) != nil {
		return out
	}
	for k := range s.Properties {
		out[k] = true
	}
	return out
}
