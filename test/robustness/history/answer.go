package history

import (
	"errors"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// Answer is what a client was told, classified by what it claims about
// the broker.
type Answer string

// The classes of answers.
const (
	// Allowed: the API server persisted the change; lockstep claims that
	// the broker carried it out.
	Allowed Answer = "allowed"
	// AllowedInProgress: persisted, with lockstep's warning that the
	// broker is still working on it.
	AllowedInProgress Answer = "allowed, in progress"
	// Refused: lockstep refused, and so claims that the broker holds what
	// it held before (it refused the change, or the broker did).
	Refused Answer = "refused"
	// Unknown: lockstep refused, saying that the outcome at the broker is
	// not known yet and that it follows it to an end.
	Unknown Answer = "outcome unknown"
	// InProgress: lockstep refused a delete because the broker is still
	// carrying it out; the object goes when the broker finishes.
	InProgress Answer = "refused, in progress"
	// Failed: the request failed before or outside lockstep's decision (a
	// conflict of versions, a name taken, an object gone, a namespace
	// being deleted, the API server or the webhook unreachable): no
	// claim about the broker.
	Failed Answer = "failed"
)

// Claims reports whether the answer claims something about the broker.
func (a Answer) Claims() bool { return a == Allowed || a == AllowedInProgress || a == Refused }

// deniedByLockstep is how the API server quotes a refusal of one of
// lockstep's webhooks.
const deniedByLockstep = `.lockstep.dev" denied the request`

// Classify names the class of an answer: err is what the client got (nil
// for success), warnings the warnings with it.
func Classify(err error, warnings []string) Answer {
	if err == nil {
		for _, w := range warnings {
			if strings.Contains(w, "still working") {
				return AllowedInProgress
			}
		}
		return Allowed
	}
	msg := Message(err)
	switch {
	case !strings.Contains(msg, deniedByLockstep):
		return Failed
	case strings.Contains(msg, "outcome is unknown"):
		return Unknown
	case strings.Contains(msg, "still working"):
		return InProgress
	}
	return Refused
}

// Message is what kubectl shows of err.
func Message(err error) string {
	if err == nil {
		return ""
	}
	var status apierrors.APIStatus
	if errors.As(err, &status) {
		return status.Status().Message
	}
	return err.Error()
}
