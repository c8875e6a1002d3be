package plugin

import (
	"errors"
	"fmt"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// FormatError is how kubectl prints an error: an API server's refusal
// with its reason ("Error from server (ServiceUnavailable): admission
// webhook ... denied the request: ..."), an invalid object with every
// field's problem on its own line, anything else after "error: ".
func FormatError(err error) string {
	var status *apierrors.StatusError
	if !errors.As(err, &status) {
		return "error: " + err.Error()
	}
	st := status.Status()
	if st.Reason == "Invalid" {
		s := "The request is invalid"
		if st.Details == nil {
			if st.Message != "" {
				s += ": " + st.Message
			}
			return s
		}
		if st.Details.Kind != "" || st.Details.Name != "" {
			s = fmt.Sprintf("The %s %q is invalid", st.Details.Kind, st.Details.Name)
		}
		var lines []string
		seen := map[string]bool{}
		for _, c := range st.Details.Causes {
			line := fmt.Sprintf("%s: %s", c.Field, c.Message)
			if !seen[line] {
				seen[line] = true
				lines = append(lines, line)
			}
		}
		switch len(lines) {
		case 0:
			return s
		case 1:
			return s + ": " + lines[0]
		default:
			return s + ": \n* " + strings.Join(lines, "\n* ")
		}
	}
	if st.Reason != "" {
		return fmt.Sprintf("Error from server (%s): %s", st.Reason, st.Message)
	}
	return "Error from server: " + st.Message
}
