package schema

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// PlanSchemas are one plan's parameter schemas, compiled once (when the
// catalog is loaded, never per request). A nil *PlanSchemas has no schemas.
// PlanSchemas never change after Compile and are safe for concurrent use.
type PlanSchemas struct {
	create, update, bind *compiled

	createOnly []path // sorted by display
	display    []string
	strip      *stripNode // createOnly as a tree, for UpdateParameters
}

// compiled is one compiled schema.
type compiled struct {
	which  which
	schema *jsonschema.Schema
	// patterns, when the schema has "format": "regex", compiles the
	// patterns parameters hold, one check at a time.
	patterns *patternEngine
}

// which names one of a plan's three schemas.
type which int

const (
	createParams which = iota
	updateParams
	bindParams
)

// String is how messages name the schema.
func (w which) String() string {
	return [...]string{"create", "update", "bind"}[w]
}

// catalogField is where the schema sits in the OSB catalog.
func (w which) catalogField() string {
	return [...]string{
		"service_instance.create.parameters",
		"service_instance.update.parameters",
		"service_binding.create.parameters",
	}[w]
}

// Compile compiles a plan's create, update and bind parameter schemas, as
// raw JSON from the broker's catalog. A nil or empty raw schema, or JSON
// null, means the plan has no such schema. A schema that does not compile is
// an error that names the schema and says why; nothing is fetched from the
// network or the file system.
func Compile(create, update, bind json.RawMessage) (*PlanSchemas, error) {
	s := &PlanSchemas{}
	var errs []error
	for _, in := range []struct {
		w   which
		raw json.RawMessage
		out **compiled
	}{{createParams, create, &s.create}, {updateParams, update, &s.update}, {bindParams, bind, &s.bind}} {
		c, err := compileOne(in.w, in.raw)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		*in.out = c
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	if s.create != nil && s.update != nil {
		s.createOnly = deriveCreateOnly(s.create.schema, s.update.schema)
		for _, p := range s.createOnly {
			s.display = append(s.display, p.String())
		}
		s.strip = newStripTree(s.createOnly)
	}
	return s, nil
}

// CreateOnly returns the plan's create-only parameters (in the create
// schema, not in the update schema) as sorted paths below spec.parameters,
// such as "region" or "storage.class"; a name that holds '.', '[' or ']'
// is written in brackets ("labels[app.kubernetes.io/name]").
func (s *PlanSchemas) CreateOnly() []string {
	if s == nil {
		return nil
	}
	return append([]string(nil), s.display...)
}

// draftFallback is the draft a schema without "$schema" is read as when it
// is not a valid draft-04 schema.
var draftFallback = jsonschema.Draft7

// compileOne compiles one schema; nil when raw holds none.
func compileOne(w which, raw json.RawMessage) (c *compiled, err error) {
	trimmed := bytes.TrimSpace(raw)
	if len(trimmed) == 0 || string(trimmed) == "null" {
		return nil, nil
	}
	defer func() {
		if r := recover(); r != nil {
			c, err = nil, compileErrorf(w, nil, "could not be compiled (the JSON Schema library failed: %v); check the schema", r)
		}
	}()
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(trimmed))
	if err != nil {
		return nil, compileErrorf(w, err, "is not valid JSON: %v", err)
	}
	obj, _ := doc.(map[string]any)
	if draftURL, named := obj["$schema"]; named {
		c, err := compileDoc(w, doc, jsonschema.Draft4) // the default draft is not used
		if err != nil {
			return nil, describeDraftError(w, err, draftURL)
		}
		return c, nil
	}
	c, err = compileDoc(w, doc, jsonschema.Draft4)
	if err == nil {
		return c, nil
	}
	var invalid *jsonschema.SchemaValidationError
	if !errors.As(err, &invalid) {
		return nil, describeCompileError(w, err, "draft-04")
	}
	c, err7 := compileDoc(w, doc, draftFallback)
	if err7 == nil {
		return c, nil
	}
	reason4, reason7 := compileReason(err), compileReason(err7)
	if reason4 == reason7 {
		return nil, compileErrorf(w, errors.Join(err, err7),
			`is not a valid JSON Schema: without "$schema" it is read as draft-04 (the OSB default) and then as draft-07, and both fail: %s`, reason4)
	}
	return nil, compileErrorf(w, errors.Join(err, err7),
		`is not a valid JSON Schema: without "$schema" it is read as draft-04 (the OSB default) and then as draft-07, and both fail: draft-04: %s; draft-07: %s`,
		reason4, reason7)
}

// compileDoc compiles a decoded schema with a fresh compiler that resolves
// nothing outside the schema.
func compileDoc(w which, doc any, draft *jsonschema.Draft) (*compiled, error) {
	c := jsonschema.NewCompiler()
	c.DefaultDraft(draft)
	c.UseLoader(noRemoteLoader{})
	c.RegisterFormat(passwordFormat)
	var patterns patternEngine
	c.UseRegexpEngine(patterns.compile)
	loc := "lockstep:///" + w.catalogField() + ".json"
	if err := c.AddResource(loc, doc); err != nil {
		return nil, err
	}
	sch, err := c.Compile(loc)
	if err != nil {
		return nil, err
	}
	patterns.compiled.Store(true) // what it compiles from now on, parameters hold
	out := &compiled{which: w, schema: sch}
	if usesRegexFormat(doc) {
		out.patterns = &patterns
	}
	return out, nil
}

// passwordFormat is "format": "password", which OpenAPI defines and JSON
// Schema does not: it constrains nothing, but the compiled schema keeps it,
// so that readers can tell the parameters that hold secrets.
var passwordFormat = &jsonschema.Format{Name: "password", Validate: func(any) error { return nil }}

// ErrRemoteRef is why noRemoteLoader loads nothing; a compile error of a
// schema with a remote or file "$ref" wraps it.
var ErrRemoteRef = errors.New("lockstep resolves $ref only within the schema itself and never fetches remote or file references")

// noRemoteLoader refuses every URL: a schema's "$ref" may only point into
// the schema itself (the draft metaschemas are built into the library and
// never reach a loader).
type noRemoteLoader struct{}

func (noRemoteLoader) Load(string) (any, error) { return nil, ErrRemoteRef }

// compileError is a schema that does not compile: its message is written
// for a person, and it unwraps to the library's error.
type compileError struct {
	msg string
	err error
}

func (e *compileError) Error() string { return e.msg }
func (e *compileError) Unwrap() error { return e.err }

func compileErrorf(w which, err error, format string, args ...any) error {
	return &compileError{
		msg: fmt.Sprintf("the plan's %s schema (%s) ", w, w.catalogField()) + fmt.Sprintf(format, args...),
		err: err,
	}
}

// describeCompileError turns a library compile error into a message that
// says what is wrong with the schema and what to do.
func describeCompileError(w which, err error, draft string) error {
	var invalid *jsonschema.SchemaValidationError
	var load *jsonschema.LoadURLError
	switch {
	case errors.As(err, &invalid):
		return compileErrorf(w, err, "is not a valid JSON Schema (read as %s): %s", draft, compileReason(err))
	case errors.As(err, &load) && errors.Is(load.Err, ErrRemoteRef):
		return compileErrorf(w, errors.Join(err, ErrRemoteRef), "refers to %q, outside the schema: %v; the broker must inline what it refers to", load.URL, ErrRemoteRef)
	}
	return compileErrorf(w, err, "does not compile: %s", compileReason(err))
}

// describeDraftError describes the compile error of a schema that names
// its draft: a draft the library does not know is a load of its URL.
func describeDraftError(w which, err error, draftURL any) error {
	var load *jsonschema.LoadURLError
	if u, ok := draftURL.(string); ok && errors.As(err, &load) && strings.TrimSuffix(load.URL, "#") == strings.TrimSuffix(u, "#") {
		return compileErrorf(w, err, `names a JSON Schema draft lockstep does not understand in "$schema" (%q); use draft-04, -06, -07, 2019-09 or 2020-12`, u)
	}
	return describeCompileError(w, err, `the draft its "$schema" names`)
}

// compileReason is the one-line reason of a compile error: for a schema
// that fails its metaschema, every violation with its JSON pointer.
func compileReason(err error) string {
	var invalid *jsonschema.SchemaValidationError
	if errors.As(err, &invalid) {
		var verr *jsonschema.ValidationError
		if errors.As(invalid.Err, &verr) {
			var reasons []string
			for _, l := range leaves(verr) {
				reasons = append(reasons, "at "+pointer(l.InstanceLocation)+": "+describe(l))
			}
			if len(reasons) > 0 {
				return strings.Join(reasons, "; ")
			}
		}
		return invalid.Err.Error()
	}
	var notFound *jsonschema.JSONPointerNotFoundError
	if errors.As(err, &notFound) {
		_, frag, _ := strings.Cut(notFound.URL, "#")
		return fmt.Sprintf("a $ref points to %q, which is not in the schema", "#"+frag)
	}
	return err.Error()
}
