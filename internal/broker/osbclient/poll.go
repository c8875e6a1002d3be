package osbclient

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.opentelemetry.io/otel/codes"
	"k8s.io/utils/clock"

	"github.com/lockstep-dev/lockstep/internal/breaks"
	"github.com/lockstep-dev/lockstep/internal/broker/osbapi"
	"github.com/lockstep-dev/lockstep/internal/tracing"
)

// ErrStillInProgress is matched (errors.Is) by a *StillInProgressError: the
// operation had not ended when polling stopped.
var ErrStillInProgress = errors.New("broker operation still in progress")

// StillInProgressError says that polling stopped (deadline, cancellation,
// MaxPolls) while the broker still reported the operation in progress.
type StillInProgressError struct {
	// Polls is the number of last_operation requests made.
	Polls int
	// Last is the last "in progress" answer; nil when no poll got one.
	Last *LastOperation
	// Reason says why polling stopped.
	Reason string
	// Err is the cause: a context error, or nil after MaxPolls.
	Err error
}

// Description is the broker's last description of the operation, if any.
func (e *StillInProgressError) Description() string {
	if e.Last == nil {
		return ""
	}
	return e.Last.Description
}

// Error says that the operation is still in progress, with the broker's
// last words and why polling stopped.
func (e *StillInProgressError) Error() string {
	msg := fmt.Sprintf("the broker operation is still in progress after %d poll(s)", e.Polls)
	if d := e.Description(); d != "" {
		msg += fmt.Sprintf(" (broker: %q)", truncate(d, maxDescriptionInError))
	}
	return msg + "; stopped waiting: " + e.Reason
}

// Is matches ErrStillInProgress.
func (e *StillInProgressError) Is(target error) bool { return target == ErrStillInProgress }

// Unwrap returns the cause.
func (e *StillInProgressError) Unwrap() error { return e.Err }

// PollOptions tunes PollInstance and PollBinding. The zero value polls after
// 1s, doubling the wait up to 30s, until the context ends.
type PollOptions struct {
	// MinInterval is the first wait and the lower bound of every wait.
	// Default 1s.
	MinInterval time.Duration
	// MaxInterval caps the doubling wait between polls. A longer
	// Retry-After from the broker is still honoured. Default 30s.
	MaxInterval time.Duration
	// MaxPolls stops polling after that many requests; 0 means no limit
	// other than the context.
	MaxPolls int
	// MaxTransientErrors is how many retryable errors in a row (transport,
	// 5xx) polling survives; the next one is returned. Default 3; negative
	// means none.
	MaxTransientErrors int
	// Deleting says that the operation is a deprovision or unbind, so that
	// 410 Gone means it succeeded. Otherwise 410 Gone means it failed.
	Deleting bool
	// Clock times the waits between polls and is read against the
	// context's deadline. Default: the real clock.
	Clock clock.Clock
}

func (o PollOptions) withDefaults() PollOptions {
	if o.MinInterval <= 0 {
		o.MinInterval = time.Second
	}
	if o.MaxInterval <= 0 {
		o.MaxInterval = 30 * time.Second
	}
	if o.MaxInterval < o.MinInterval {
		o.MaxInterval = o.MinInterval
	}
	switch {
	case o.MaxTransientErrors == 0:
		o.MaxTransientErrors = 3
	case o.MaxTransientErrors < 0:
		o.MaxTransientErrors = 0
	}
	if o.Clock == nil {
		o.Clock = clock.RealClock{}
	}
	return o
}

// sleep waits d on o's clock or until ctx ends, and leaves no timer behind.
func (o PollOptions) sleep(ctx context.Context, d time.Duration) error {
	t := o.Clock.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C():
		return nil
	}
}

// PollInstance polls an instance's last_operation until the operation
// succeeds or fails, and returns that final answer (check State: a failed
// operation is not an error). It honours Retry-After, never starts a wait
// that would end after ctx's deadline, and returns a *StillInProgressError
// (errors.Is ErrStillInProgress) when it stops before the end.
func (c *Client) PollInstance(ctx context.Context, meta RequestMeta, req InstanceLastOperationRequest, opts PollOptions) (*LastOperation, error) {
	return poll(ctx, opts, func(ctx context.Context) (*LastOperation, error) {
		return c.InstanceLastOperation(ctx, meta, req)
	})
}

// PollBinding is PollInstance for a binding's last_operation.
func (c *Client) PollBinding(ctx context.Context, meta RequestMeta, req BindingLastOperationRequest, opts PollOptions) (*LastOperation, error) {
	return poll(ctx, opts, func(ctx context.Context) (*LastOperation, error) {
		return c.BindingLastOperation(ctx, meta, req)
	})
}

// poll polls in an osb.poll span, which counts the polls and keeps the
// last state the broker gave.
func poll(ctx context.Context, opts PollOptions, fetch func(context.Context) (*LastOperation, error)) (*LastOperation, error) {
	ctx, span := tracing.Start(ctx, tracing.SpanPoll)
	defer span.End()
	if !span.IsRecording() {
		return polls(ctx, opts, fetch)
	}
	n := 0
	var state osbapi.State
	op, err := polls(ctx, opts, func(ctx context.Context) (*LastOperation, error) {
		n++
		op, err := fetch(ctx)
		if err == nil {
			state = op.State
		}
		return op, err
	})
	span.SetAttributes(tracing.AttrPolls.Int(n), tracing.AttrState.String(string(state)))
	if err != nil && !errors.Is(err, ErrStillInProgress) {
		span.SetStatus(codes.Error, "polling failed")
	}
	return op, err
}

func polls(ctx context.Context, opts PollOptions, fetch func(context.Context) (*LastOperation, error)) (*LastOperation, error) {
	o := opts.withDefaults()
	interval := o.MinInterval
	transient := 0
	var last *LastOperation
	stillInProgress := func(polls int, reason string, err error) error {
		return &StillInProgressError{Polls: polls, Last: last, Reason: reason, Err: err}
	}
	for polls := 1; ; polls++ {
		op, err := fetch(ctx)
		wait := interval
		switch {
		case err != nil:
			if ctx.Err() != nil {
				return nil, stillInProgress(polls, "the context ended during a poll", ctx.Err())
			}
			if breaks.Active(breaks.PollErrorFails) {
				return &LastOperation{State: osbapi.StateFailed, Description: err.Error()}, nil
			}
			if !Retryable(err) || transient >= o.MaxTransientErrors || (o.MaxPolls > 0 && polls >= o.MaxPolls) {
				return nil, err
			}
			transient++
		case op.Gone:
			final := *op
			final.State = osbapi.StateSucceeded
			if !o.Deleting {
				final.State = osbapi.StateFailed
				final.Description = "the broker no longer knows the resource (410 Gone)"
			}
			return &final, nil
		case op.State.Final():
			return op, nil
		default:
			transient = 0
			last = op
			if op.RetryAfter > 0 {
				wait = max(op.RetryAfter, o.MinInterval)
			}
		}
		if o.MaxPolls > 0 && polls >= o.MaxPolls {
			return nil, stillInProgress(polls, fmt.Sprintf("reached the limit of %d poll(s)", o.MaxPolls), nil)
		}
		if deadline, ok := ctx.Deadline(); ok {
			if left := deadline.Sub(o.Clock.Now()); wait > left {
				return nil, stillInProgress(polls,
					fmt.Sprintf("the next poll (in %s) would come after the deadline (%s left)", wait, max(left, 0).Round(time.Millisecond)),
					context.DeadlineExceeded)
			}
		}
		if err := o.sleep(ctx, wait); err != nil {
			return nil, stillInProgress(polls, "the context ended while waiting to poll", err)
		}
		interval = min(interval*2, o.MaxInterval)
	}
}
