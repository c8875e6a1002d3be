package marketplace

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/lockstep-dev/lockstep/api/v1alpha1"
	"github.com/lockstep-dev/lockstep/internal/broker/osbapi"
	"github.com/lockstep-dev/lockstep/internal/validate/schema"
)

// MaxSchemaBytes is the largest schema a ServicePlan keeps: a larger one is
// left out of the object (which etcd would refuse past about 1.5 MiB) and
// reported by the SchemasUsable condition.
const MaxSchemaBytes = 64 << 10

// The reasons of a SchemasUsable condition.
const (
	ReasonUsable            = "Usable"
	ReasonNoSchemas         = "NoSchemas"
	ReasonNotAnObjectSchema = "NotAnObjectSchema"
	ReasonTooLarge          = "TooLarge"
	ReasonRemoteReference   = "RemoteReference"
	ReasonInvalidSchema     = "InvalidSchema"
)

// Problem is one thing that keeps lockstep from using a plan's schema.
type Problem struct {
	// Reason is the condition reason: NotAnObjectSchema, TooLarge,
	// RemoteReference or InvalidSchema.
	Reason string
	// Message says which schema, what is wrong and what it means.
	Message string
}

// Problems returns what is wrong with a plan's schemas, given the error
// schema.Compile gave for them (nil when they compiled): a schema that is
// not a JSON object schema (parameters are always an object), one larger
// than MaxSchemaBytes, and a schema that does not compile (a remote
// "$ref" is told apart). None means the schemas are usable.
func Problems(sp osbapi.ServicePlan, compileErr error) []Problem {
	var out []Problem
	for _, s := range []struct {
		name string
		raw  json.RawMessage
	}{{"create", sp.CreateSchema()}, {"update", sp.UpdateSchema()}, {"bind", sp.BindSchema()}} {
		raw := bytes.TrimSpace(s.raw)
		if len(raw) == 0 || string(raw) == "null" {
			continue
		}
		if len(raw) > MaxSchemaBytes {
			out = append(out, Problem{ReasonTooLarge, fmt.Sprintf(
				"the %s schema is %d KiB, more than the %d KiB a ServicePlan keeps: it is left out of spec.schemas; admission still checks parameters against it",
				s.name, (len(raw)+1023)/1024, MaxSchemaBytes>>10)})
		}
		if why := notAnObjectSchema(raw); why != "" {
			out = append(out, Problem{ReasonNotAnObjectSchema, fmt.Sprintf(
				"the %s schema %s, but parameters are always a JSON object: no parameters can satisfy it", s.name, why)})
		}
	}
	if compileErr != nil {
		reason := ReasonInvalidSchema
		if errors.Is(compileErr, schema.ErrRemoteRef) {
			reason = ReasonRemoteReference
		}
		out = append(out, Problem{reason, compileErr.Error() + "; lockstep refuses provisions, updates and binds on this plan until the broker fixes the schema"})
	}
	return out
}

// notAnObjectSchema says why raw cannot describe a JSON object, or "".
func notAnObjectSchema(raw json.RawMessage) string {
	var doc any
	if err := json.Unmarshal(raw, &doc); err != nil {
		return "" // not JSON at all: the compile error says so
	}
	obj, ok := doc.(map[string]any)
	if !ok {
		if b, isBool := doc.(bool); isBool && b {
			return "" // true allows everything
		}
		return fmt.Sprintf("is %s, not a JSON Schema object", compact(raw))
	}
	switch t := obj["type"].(type) {
	case string:
		if t != "object" {
			return fmt.Sprintf("says \"type\": %q", t)
		}
	case []any:
		for _, v := range t {
			if v == "object" {
				return ""
			}
		}
		names := make([]string, 0, len(t))
		for _, v := range t {
			names = append(names, fmt.Sprint(v))
		}
		return fmt.Sprintf("says \"type\": [%s], without \"object\"", strings.Join(names, ", "))
	}
	return ""
}

// SchemasCondition is the SchemasUsable condition of plan sp with these
// problems: True when there are none (saying which schemas parameters are
// checked against, or that the broker publishes none), else False with
// the first problem's reason and every message.
func SchemasCondition(sp osbapi.ServicePlan, problems []Problem) metav1.Condition {
	if len(problems) == 0 {
		var published []string
		for _, s := range []struct {
			name string
			raw  json.RawMessage
		}{{"create", sp.CreateSchema()}, {"update", sp.UpdateSchema()}, {"bind", sp.BindSchema()}} {
			if raw := bytes.TrimSpace(s.raw); len(raw) > 0 && string(raw) != "null" {
				published = append(published, s.name)
			}
		}
		if len(published) == 0 {
			return metav1.Condition{Type: v1alpha1.ConditionSchemasUsable, Status: metav1.ConditionTrue, Reason: ReasonNoSchemas,
				Message: "the broker publishes no parameter schemas for this plan: lockstep checks only the parameters' size, and the broker checks the rest"}
		}
		return metav1.Condition{Type: v1alpha1.ConditionSchemasUsable, Status: metav1.ConditionTrue, Reason: ReasonUsable,
			Message: fmt.Sprintf("lockstep checks parameters against the broker's %s schema(s)", strings.Join(published, ", "))}
	}
	msgs := make([]string, 0, len(problems))
	for _, p := range problems {
		msgs = append(msgs, p.Message)
	}
	return metav1.Condition{Type: v1alpha1.ConditionSchemasUsable, Status: metav1.ConditionFalse,
		Reason: problems[0].Reason, Message: strings.Join(msgs, "; ")}
}
