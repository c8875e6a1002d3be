package executor

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/lockstep-dev/lockstep/internal/broker/embedded/bundle"
	"github.com/lockstep-dev/lockstep/internal/broker/embedded/store"
)

// Executor runs one bundle action.
type Executor interface {
	// Run carries out inv. The Result is meaningful even when err is not
	// nil (state written before a failure). A failure of the action itself
	// is an *ActionError; when ctx ends first, the action is stopped and
	// the *ActionError wraps ctx.Err().
	Run(ctx context.Context, inv Invocation) (Result, error)
}

// Invocation is one action to run.
type Invocation struct {
	Bundle *bundle.Bundle
	Action bundle.Action
	// Program is the resolved program of the action (see bundle.Bundle).
	Program string
	Input   Input
	// State is the instance's saved bundle state (nil for a first
	// provision).
	State map[string]string
	// Retry marks a provision that runs again after it failed: it gets the
	// state the failed attempt saved.
	Retry bool
	// Started, when set, is called once the action runs, with a function
	// that reads what it wrote to its output file so far: a provision that
	// writes its dashboard URL first has it in the broker's first answer,
	// however long it runs.
	Started func(sofar func() Output)
}

// Input is the document an action reads: the job's request (the request
// as the broker accepted it, store.JobRequest) with what identifies the
// run.
type Input struct {
	Action     bundle.Action `json:"action"`
	Operation  string        `json:"operation"`
	InstanceID string        `json:"instance_id"`
	BindingID  string        `json:"binding_id,omitempty"`
	store.JobRequest
	// Identity is the platform user who asked (from the originating
	// identity).
	Identity  *store.Identity `json:"originating_identity,omitempty"`
	RequestID string          `json:"request_id,omitempty"`
	// State is the instance's saved bundle state, as in the environment
	// (state_<key>), but complete: values too long for the environment
	// are here too.
	State map[string]string `json:"state,omitempty"`
}

// Output is what an action returns.
type Output struct {
	Credentials  json.RawMessage `json:"credentials,omitempty"`
	DashboardURL string          `json:"dashboard_url,omitempty"`
	Description  string          `json:"description,omitempty"`
	// InstanceUsable, set by a failed update or deprovision, says whether
	// the instance is still usable (OSB instance_usable; default true).
	InstanceUsable *bool `json:"instance_usable,omitempty"`
	// UpdateRepeatable, set by a failed update, says whether sending the
	// same update again can succeed (OSB update_repeatable; default true
	// for a failure, false for a refusal).
	UpdateRepeatable *bool `json:"update_repeatable,omitempty"`
}

// RefuseExitCode is the exit status with which an action refuses its
// input (EX_DATAERR of sysexits.h): the request is answered 4xx with the
// action's description, and the action must have changed nothing.
const RefuseExitCode = 65

// Result is the outcome of a run.
type Result struct {
	Output Output
	// StateUpdates are merged into the saved state; an empty value removes
	// the key.
	StateUpdates map[string]string
}

// ActionError is a failed action.
type ActionError struct {
	Action bundle.Action
	// Description is the action's own account of the failure.
	Description string
	// ExitCode is the exit status, -1 when the process was killed.
	ExitCode int
	// Err is the cause: an exit error, a protocol error, or the context's
	// error when the action was stopped.
	Err error
	// Refused is set when the action exited with RefuseExitCode: it judged
	// the request unacceptable and changed nothing.
	Refused bool
}

func (e *ActionError) Error() string {
	if e.Description != "" {
		return fmt.Sprintf("%s failed: %s", e.Action, e.Description)
	}
	return fmt.Sprintf("%s failed: %v", e.Action, e.Err)
}

func (e *ActionError) Unwrap() error { return e.Err }

// Stopped reports whether the action was stopped because its context ended
// (timeout or shutdown).
func (e *ActionError) Stopped() bool {
	return errors.Is(e.Err, context.DeadlineExceeded) || errors.Is(e.Err, context.Canceled)
}
