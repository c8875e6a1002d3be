package osbclient

import (
	"encoding/json"
	"strings"
)

// errorBody is what a broker's error answer says, read from the shapes
// brokers use in practice:
//
//   - OSB: {"error": "ConcurrencyError", "description": "..."}
//   - a message in "error" itself: {"error": "Missing organization_guid"}
//   - a "message" field: {"message": "..."}
//   - an "errors" array of strings or of objects with "description",
//     "message", "detail" or "title" (express-validator, JSON:API):
//     {"errors": [{"msg": "..."}]}
type errorBody struct {
	code        string
	description string

	instanceUsable   *bool
	updateRepeatable *bool
}

// parseErrorBody reads body; ok is false when it is not a JSON object.
func parseErrorBody(body []byte) (e errorBody, ok bool) {
	var raw struct {
		Error            json.RawMessage   `json:"error"`
		Description      string            `json:"description"`
		Message          string            `json:"message"`
		Errors           []json.RawMessage `json:"errors"`
		InstanceUsable   *bool             `json:"instance_usable"`
		UpdateRepeatable *bool             `json:"update_repeatable"`
	}
	if err := json.Unmarshal(body, &raw); err != nil {
		return errorBody{}, false
	}
	e = errorBody{
		description:      raw.Description,
		instanceUsable:   raw.InstanceUsable,
		updateRepeatable: raw.UpdateRepeatable,
	}
	var said []string
	if errText := stringOrMessage(raw.Error); errText != "" {
		if isErrorCode(errText) {
			e.code = errText
		} else {
			said = append(said, errText)
		}
	}
	if raw.Message != "" {
		said = append(said, raw.Message)
	}
	for _, item := range raw.Errors {
		if text := stringOrMessage(item); text != "" {
			said = append(said, text)
		}
	}
	if e.description == "" {
		e.description = strings.Join(said, "; ")
	}
	return e, true
}

// isErrorCode reports whether s reads as an OSB error code (one word such
// as "ConcurrencyError") rather than a sentence for a person.
func isErrorCode(s string) bool {
	if len(s) > 64 {
		return false
	}
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '-' || r == '.') {
			return false
		}
	}
	return true
}

// stringOrMessage reads a JSON string, or the first text field of an
// object (description, message, msg, detail, title); anything else is "".
func stringOrMessage(raw json.RawMessage) string {
	if len(raw) == 0 {
		return ""
	}
	var s string
	if err := json.Unmarshal(raw, &s); err == nil {
		return strings.TrimSpace(s)
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(raw, &obj); err != nil {
		return ""
	}
	for _, key := range []string{"description", "message", "msg", "detail", "title"} {
		if err := json.Unmarshal(obj[key], &s); err == nil && strings.TrimSpace(s) != "" {
			return strings.TrimSpace(s)
		}
	}
	return ""
}
