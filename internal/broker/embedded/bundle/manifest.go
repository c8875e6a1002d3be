package bundle

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"time"
)

// ManifestFile is the name of the manifest in a bundle directory.
const ManifestFile = "bundle.json"

// maxSchemaBytes is the OSB limit on one schema.
const maxSchemaBytes = 64 << 10

// draft4 is the JSON Schema version assumed when a schema names none (the
// one OSB requires platforms to support).
const draft4 = "http://json-schema.org/draft-04/schema#"

// Manifest describes one service offering.
type Manifest struct {
	Name        string          `json:"name"`
	ID          string          `json:"id"`
	Description string          `json:"description"`
	Bindable    bool            `json:"bindable"`
	Tags        []string        `json:"tags,omitempty"`
	Metadata    json.RawMessage `json:"metadata,omitempty"`
	// Asynchronous bundles have actions that may take long: every request
	// needs accepts_incomplete=true. Plans may override it.
	Asynchronous bool `json:"asynchronous,omitempty"`
	// Timeout bounds every action of the bundle; zero means the broker's
	// default.
	Timeout Duration `json:"timeout,omitempty"`
	// Limits bound each action's processes (memory, CPU time, how many);
	// what is left out is the broker's maximum.
	Limits *Limits `json:"limits,omitempty"`
	// Actions maps an action name to the program that carries it out: a
	// path relative to the bundle directory, or builtin:noop, builtin:echo.
	// An action not listed is actions/<name> when that file exists, and a
	// no-op otherwise.
	Actions map[Action]string `json:"actions,omitempty"`
	Plans   []Plan            `json:"plans"`
}

// Plan is one service plan.
type Plan struct {
	ID          string `json:"id"`
	Name        string `json:"name"`
	Description string `json:"description"`
	// Updateable allows changing an instance of this plan to another plan
	// (OSB plan_updateable). Parameters can always be updated.
	Updateable   bool            `json:"updateable,omitempty"`
	Free         *bool           `json:"free,omitempty"`
	Bindable     *bool           `json:"bindable,omitempty"`
	Asynchronous *bool           `json:"asynchronous,omitempty"`
	Metadata     json.RawMessage `json:"metadata,omitempty"`
	Schemas      Schemas         `json:"schemas,omitzero"`
}

// Schemas are the JSON Schemas of a plan's parameters. A property in
// Create but not in Update is create-only.
type Schemas struct {
	Create json.RawMessage `json:"create,omitempty"`
	Update json.RawMessage `json:"update,omitempty"`
	Bind   json.RawMessage `json:"bind,omitempty"`
}

// Duration is a time.Duration written as a Go duration string ("30s").
type Duration time.Duration

// MarshalJSON implements json.Marshaler.
func (d Duration) MarshalJSON() ([]byte, error) {
	return json.Marshal(time.Duration(d).String())
}

// UnmarshalJSON implements json.Unmarshaler.
func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("a duration is a string such as \"30s\" or \"5m\": %w", err)
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return err
	}
	*d = Duration(v)
	return nil
}

// ParseManifest decodes and checks a manifest. Unknown fields are errors,
// so that a misspelt field does not silently do nothing.
func ParseManifest(raw []byte) (*Manifest, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	var m Manifest
	if err := dec.Decode(&m); err != nil {
		return nil, fmt.Errorf("decode manifest: %w", err)
	}
	if err := m.normalize(); err != nil {
		return nil, err
	}
	if err := m.Validate(); err != nil {
		return nil, err
	}
	return &m, nil
}

// cliFriendly is what OSB recommends for names.
var cliFriendly = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*$`)

// Validate reports every problem of the manifest at once.
func (m *Manifest) Validate() error {
	var errs []error
	need := func(field, v string) {
		if v == "" {
			errs = append(errs, fmt.Errorf("%s is required", field))
		}
	}
	need("name", m.Name)
	need("id", m.ID)
	need("description", m.Description)
	if m.Name != "" && !cliFriendly.MatchString(m.Name) {
		errs = append(errs, fmt.Errorf("name %q must use only letters, digits, '.', '_' and '-'", m.Name))
	}
	if m.Timeout < 0 {
		errs = append(errs, fmt.Errorf("timeout %s must not be negative", time.Duration(m.Timeout)))
	}
	errs = append(errs, m.Limits.validate()...)
	for a, prog := range m.Actions {
		if !a.Known() {
			errs = append(errs, fmt.Errorf("actions: unknown action %q (known: %v)", a, Actions))
		}
		if prog == "" {
			errs = append(errs, fmt.Errorf("actions.%s: empty program", a))
		}
	}
	if len(m.Plans) == 0 {
		errs = append(errs, errors.New("plans: at least one plan is required"))
	}
	ids, names := map[string]bool{}, map[string]bool{}
	for i, p := range m.Plans {
		at := fmt.Sprintf("plans[%d]", i)
		need(at+".id", p.ID)
		need(at+".name", p.Name)
		need(at+".description", p.Description)
		if ids[p.ID] && p.ID != "" {
			errs = append(errs, fmt.Errorf("%s.id %q is used by two plans", at, p.ID))
		}
		if names[p.Name] && p.Name != "" {
			errs = append(errs, fmt.Errorf("%s.name %q is used by two plans", at, p.Name))
		}
		ids[p.ID], names[p.Name] = true, true
		for kind, s := range p.Schemas.all() {
			if len(s) > maxSchemaBytes {
				errs = append(errs, fmt.Errorf("%s.schemas.%s is %d bytes; OSB allows at most %d", at, kind, len(s), maxSchemaBytes))
			}
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("invalid manifest %q: %w", m.Name, errors.Join(errs...))
	}
	return nil
}

// normalize gives every schema a $schema (OSB requires one).
func (m *Manifest) normalize() error {
	for i := range m.Plans {
		s := &m.Plans[i].Schemas
		for _, field := range []*json.RawMessage{&s.Create, &s.Update, &s.Bind} {
			if len(*field) == 0 || string(*field) == "null" {
				*field = nil
				continue
			}
			var obj map[string]any
			if err := json.Unmarshal(*field, &obj); err != nil {
				return fmt.Errorf("plan %q: a schema must be a JSON object: %w", m.Plans[i].Name, err)
			}
			if _, ok := obj["$schema"]; ok {
				continue
			}
			obj["$schema"] = draft4
			raw, err := json.Marshal(obj)
			if err != nil {
				return fmt.Errorf("plan %q: re-encode schema: %w", m.Plans[i].Name, err)
			}
			*field = raw
		}
	}
	return nil
}

func (s Schemas) all() map[SchemaKind]json.RawMessage {
	out := map[SchemaKind]json.RawMessage{}
	if s.Create != nil {
		out[CreateSchema] = s.Create
	}
	if s.Update != nil {
		out[UpdateSchema] = s.Update
	}
	if s.Bind != nil {
		out[BindSchema] = s.Bind
	}
	return out
}
