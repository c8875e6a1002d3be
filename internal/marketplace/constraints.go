package marketplace

import (
	"encoding/json"
	"fmt"
	"strings"
)

// Constraints says, for each top-level property of a schema (raw JSON as
// the broker gave it), the constraints its values must keep beyond their
// type and allowed values (which Parameters lists): bounds of numbers
// (minimum, maximum, exclusive or not, multipleOf), of strings (lengths,
// pattern, format), of arrays (items, their type, uniqueness) and of
// objects (members), in a person's words ("1 to 10", "at least 8
// characters"). A property without any is left out; a schema that is not
// a JSON object says nothing.
func Constraints(schema json.RawMessage) map[string]string {
	var doc struct {
		Properties map[string]json.RawMessage `json:"properties"`
	}
	if err := json.Unmarshal(schema, &doc); err != nil {
		return nil
	}
	out := map[string]string{}
	for name, raw := range doc.Properties {
		var p constrained
		if json.Unmarshal(raw, &p) != nil {
			continue // a boolean schema
		}
		if text := p.text(); text != "" {
			out[name] = text
		}
	}
	return out
}

// constrained is what Constraints reads of a property's schema. Draft-04
// says exclusiveMinimum and exclusiveMaximum as booleans beside minimum
// and maximum, later drafts as numbers of their own.
type constrained struct {
	Minimum          *json.Number    `json:"minimum"`
	Maximum          *json.Number    `json:"maximum"`
	ExclusiveMinimum json.RawMessage `json:"exclusiveMinimum"`
	ExclusiveMaximum json.RawMessage `json:"exclusiveMaximum"`
	MultipleOf       *json.Number    `json:"multipleOf"`
	MinLength        *int            `json:"minLength"`
	MaxLength        *int            `json:"maxLength"`
	Pattern          string          `json:"pattern"`
	Format           string          `json:"format"`
	MinItems         *int            `json:"minItems"`
	MaxItems         *int            `json:"maxItems"`
	UniqueItems      bool            `json:"uniqueItems"`
	Items            json.RawMessage `json:"items"`
	MinProperties    *int            `json:"minProperties"`
	MaxProperties    *int            `json:"maxProperties"`
}

func (p constrained) text() string {
	var parts []string
	if s := bounds(p.Minimum, p.ExclusiveMinimum, p.Maximum, p.ExclusiveMaximum); s != "" {
		parts = append(parts, s)
	}
	if p.MultipleOf != nil {
		parts = append(parts, "a multiple of "+p.MultipleOf.String())
	}
	if s := counted(p.MinLength, p.MaxLength, "character"); s != "" {
		parts = append(parts, s)
	}
	if p.Pattern != "" {
		parts = append(parts, "matches "+p.Pattern)
	}
	if p.Format != "" {
		parts = append(parts, "format "+p.Format)
	}
	if s := counted(p.MinItems, p.MaxItems, "item"); s != "" {
		parts = append(parts, s)
	}
	var items struct {
		Type json.RawMessage `json:"type"`
	}
	if len(p.Items) > 0 && json.Unmarshal(p.Items, &items) == nil {
		if t := typeText(items.Type); t != "" {
			parts = append(parts, "items of type "+t)
		}
	}
	if p.UniqueItems {
		parts = append(parts, "no item twice")
	}
	if s := counted(p.MinProperties, p.MaxProperties, "member"); s != "" {
		parts = append(parts, s)
	}
	return strings.Join(parts, ", ")
}

// bounds says a number's range: ">= 1, <= 10" as "1 to 10", and each
// exclusive bound as "more than" or "less than".
func bounds(min *json.Number, exclMin json.RawMessage, max *json.Number, exclMax json.RawMessage) string {
	low, lowExcl := bound(min, exclMin)
	high, highExcl := bound(max, exclMax)
	switch {
	case low != "" && high != "" && !lowExcl && !highExcl:
		return low + " to " + high
	case low != "" && high != "":
		return fmt.Sprintf("%s, %s", lowText(low, lowExcl), highText(high, highExcl))
	case low != "":
		return lowText(low, lowExcl)
	case high != "":
		return highText(high, highExcl)
	}
	return ""
}

// bound is a bound and whether it is exclusive: a number beside
// exclusive true (draft-04), or the exclusive number itself.
func bound(n *json.Number, excl json.RawMessage) (string, bool) {
	var b bool
	if len(excl) > 0 && json.Unmarshal(excl, &b) == nil {
		if n == nil {
			return "", false
		}
		return n.String(), b
	}
	var e json.Number
	if len(excl) > 0 && json.Unmarshal(excl, &e) == nil {
		return e.String(), true
	}
	if n == nil {
		return "", false
	}
	return n.String(), false
}

func lowText(n string, excl bool) string {
	if excl {
		return "more than " + n
	}
	return "at least " + n
}

func highText(n string, excl bool) string {
	if excl {
		return "less than " + n
	}
	return "at most " + n
}

// counted says how many of unit a value has: "8 to 64 characters", "at
// least 1 item".
func counted(min, max *int, unit string) string {
	plural := func(n int) string {
		if n == 1 {
			return unit
		}
		return unit + "s"
	}
	switch {
	case min != nil && max != nil && *min == *max:
		return fmt.Sprintf("%d %s", *min, plural(*min))
	case min != nil && max != nil:
		return fmt.Sprintf("%d to %d %s", *min, *max, plural(*max))
	case min != nil && *min > 0:
		return fmt.Sprintf("at least %d %s", *min, plural(*min))
	case max != nil:
		return fmt.Sprintf("at most %d %s", *max, plural(*max))
	}
	return ""
}
