package lifecycle

import (
	"fmt"

	"github.com/lockstep-dev/lockstep/internal/broker/osbapi"
)

// Kind classifies an error; the server maps it to an HTTP status.
type Kind int

// Error kinds.
const (
	BadRequest    Kind = iota // 400
	NotFound                  // 404
	Conflict                  // 409
	Gone                      // 410
	Unprocessable             // 422
	Internal                  // 500
)

// This broker's own error codes, beside those of osbapi.
const (
	// CodeActionFailed is this broker's code for a bundle action that
	// failed while the request waited for it.
	CodeActionFailed = "ActionFailed"
	// CodeActionRefused is this broker's code for a bundle action that
	// refused the request (it judged the input unacceptable and changed
	// nothing).
	CodeActionRefused = "ActionRefused"
	// CodeInternalError is this broker's code for a failure of the broker
	// itself (its store, a spec it lost).
	CodeInternalError = "InternalError"
)

// Error is an OSB error answer.
type Error struct {
	Kind Kind
	// Code is the OSB error code, empty when none applies.
	Code string
	// Description is for a person: what was refused, why, what to do.
	Description string
}

func (e *Error) Error() string {
	if e.Code != "" {
		return e.Code + ": " + e.Description
	}
	return e.Description
}

func errorf(kind Kind, code, format string, args ...any) *Error {
	return &Error{Kind: kind, Code: code, Description: fmt.Sprintf(format, args...)}
}

func badRequest(format string, args ...any) *Error { return errorf(BadRequest, "", format, args...) }

func asyncRequired(format string, args ...any) *Error {
	return errorf(Unprocessable, osbapi.ErrorCodeAsyncRequired, format, args...)
}

func concurrency(format string, args ...any) *Error {
	return errorf(Unprocessable, osbapi.ErrorCodeConcurrency, format, args...)
}

func internal(format string, args ...any) *Error {
	return errorf(Internal, CodeInternalError, format, args...)
}
