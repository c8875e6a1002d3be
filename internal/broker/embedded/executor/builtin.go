package executor

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/lockstep-dev/lockstep/internal/broker/embedded/bundle"
)

// Builtin carries out the built-in programs in the broker process.
type Builtin struct{}

// Run implements Executor.
func (Builtin) Run(ctx context.Context, inv Invocation) (Result, error) {
	if err := ctx.Err(); err != nil {
		return Result{}, &ActionError{Action: inv.Action, ExitCode: -1, Err: err}
	}
	switch inv.Program {
	case bundle.Noop:
		return Result{}, nil
	case bundle.Echo:
		if inv.Action != bundle.Bind {
			return Result{}, nil
		}
		params := inv.Input.Parameters
		if len(params) == 0 {
			params = json.RawMessage(`{}`)
		}
		creds, err := json.Marshal(map[string]any{
			"instance_id": inv.Input.InstanceID,
			"binding_id":  inv.Input.BindingID,
			"parameters":  params,
		})
		if err != nil {
			return Result{}, &ActionError{Action: inv.Action, Err: err}
		}
		return Result{Output: Output{Credentials: creds}}, nil
	default:
		return Result{}, &ActionError{Action: inv.Action, Err: fmt.Errorf("unknown built-in program %q", inv.Program)}
	}
}

// Mux runs built-in programs itself and everything else with Process.
type Mux struct {
	Process *Process
}

// Run implements Executor.
func (m Mux) Run(ctx context.Context, inv Invocation) (Result, error) {
	if bundle.IsBuiltin(inv.Program) {
		return Builtin{}.Run(ctx, inv)
	}
	return m.Process.Run(ctx, inv)
}
