package marketplace

import (
	"bytes"
	"encoding/json"
	"sort"
	"strings"

	"github.com/lockstep-dev/lockstep/api/v1alpha1"
)

// Parameters lists the top-level properties of a plan's create schema
// (raw JSON as the broker gave it), sorted by name, for `kubectl describe
// serviceplan`: type, description (or title), whether required, allowed
// values (enum or const) and default as JSON, and whether it is
// create-only: createOnly are the plan's create-only paths below
// spec.parameters ("region", "storage.class"); a property is create-only
// when it or a part of it is. A schema that is not a JSON object, or has no
// "properties", lists nothing.
func Parameters(createSchema json.RawMessage, createOnly []string) []v1alpha1.PlanParameter {
	var doc struct {
		Properties map[string]json.RawMessage `json:"properties"`
		Required   []string                   `json:"required"`
	}
	if err := json.Unmarshal(createSchema, &doc); err != nil || len(doc.Properties) == 0 {
		return nil
	}
	required := map[string]bool{}
	for _, r := range doc.Required {
		required[r] = true
	}
	out := make([]v1alpha1.PlanParameter, 0, len(doc.Properties))
	for name, raw := range doc.Properties {
		p := v1alpha1.PlanParameter{Name: name, Required: required[name], CreateOnly: isCreateOnly(name, createOnly)}
		var prop struct {
			Type        json.RawMessage   `json:"type"`
			Description string            `json:"description"`
			Title       string            `json:"title"`
			Enum        []json.RawMessage `json:"enum"`
			Const       json.RawMessage   `json:"const"`
			Default     json.RawMessage   `json:"default"`
		}
		if json.Unmarshal(raw, &prop) == nil { // a boolean schema says nothing more
			p.Type = typeText(prop.Type)
			p.Description = prop.Description
			if p.Description == "" {
				p.Description = prop.Title
			}
			for _, v := range prop.Enum {
				p.Values = append(p.Values, compact(v))
			}
			if len(prop.Const) > 0 && len(prop.Enum) == 0 {
				p.Values = []string{compact(prop.Const)}
			}
			if len(prop.Default) > 0 {
				p.Default = compact(prop.Default)
			}
		}
		out = append(out, p)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// isCreateOnly reports whether the top-level parameter name, or a part of
// it, is among the create-only paths.
func isCreateOnly(name string, createOnly []string) bool {
	for _, p := range createOnly {
		if p == name || strings.HasPrefix(p, name+".") || strings.HasPrefix(p, name+"[") ||
			strings.HasPrefix(p, "["+name+"]") {
			return true
		}
	}
	return false
}

// typeText is a schema's "type": a name, or several joined by "|".
func typeText(raw json.RawMessage) string {
	var one string
	if json.Unmarshal(raw, &one) == nil {
		return one
	}
	var many []string
	if json.Unmarshal(raw, &many) == nil {
		return strings.Join(many, "|")
	}
	return ""
}

// compact is a JSON value without insignificant white space.
func compact(raw json.RawMessage) string {
	var b bytes.Buffer
	if err := json.Compact(&b, raw); err != nil {
		return string(raw)
	}
	return b.String()
}
