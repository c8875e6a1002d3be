package osbclient_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/utils/clock"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/lockstep-dev/lockstep/internal/broker/fakebroker"
	"github.com/lockstep-dev/lockstep/internal/broker/osbapi"
	"github.com/lockstep-dev/lockstep/internal/broker/osbclient"
)

// steppingClock is a fake clock that records every wait between polls and
// moves its time forward by it at once, so that the timer has fired by the
// time the poll waits on it.
type steppingClock struct {
	*clocktesting.FakeClock
	mu    sync.Mutex
	waits []time.Duration
}

func newSteppingClock() *steppingClock {
	return &steppingClock{FakeClock: clocktesting.NewFakeClock(time.Now())}
}

func (c *steppingClock) NewTimer(d time.Duration) clock.Timer {
	c.mu.Lock()
	c.waits = append(c.waits, d)
	c.mu.Unlock()
	t := c.FakeClock.NewTimer(d)
	c.Step(d)
	return t
}

func (c *steppingClock) Waits() []time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]time.Duration(nil), c.waits...)
}

// cancellingClock cancels the poll's context when the poll starts to wait,
// and never fires: the caller gives up during the first wait.
type cancellingClock struct {
	*clocktesting.FakeClock
	cancel context.CancelFunc
}

func (c *cancellingClock) NewTimer(d time.Duration) clock.Timer {
	c.cancel()
	return c.FakeClock.NewTimer(d)
}

func TestPollInstance(t *testing.T) {
	const ms = time.Millisecond
	tests := []struct {
		name     string
		async    fakebroker.Async
		script   []fakebroker.Respond // last_operation answers before the async machinery
		opts     osbclient.PollOptions
		deadline time.Duration // from the fake clock's start; 0: none
		want     osbapi.State
		wantDesc string
		wantGone bool
		wantErr  func(t *testing.T, err error)
		// expected waits and number of polls
		waits []time.Duration
		polls int
		// the broker holds the instance at the end
		instance bool
	}{
		{
			name:  "Retry-After is honoured",
			async: fakebroker.Async{InProgressPolls: 2, RetryAfter: "3"},
			want:  osbapi.StateSucceeded, waits: []time.Duration{3 * time.Second, 3 * time.Second}, polls: 3, instance: true,
		},
		{
			name:  "without Retry-After the wait doubles up to MaxInterval",
			async: fakebroker.Async{InProgressPolls: 4},
			want:  osbapi.StateSucceeded, waits: []time.Duration{10 * ms, 20 * ms, 40 * ms, 40 * ms}, polls: 5, instance: true,
		},
		{
			name:  "Retry-After below MinInterval is raised to it",
			async: fakebroker.Async{InProgressPolls: 1, RetryAfter: "1"},
			opts:  osbclient.PollOptions{MinInterval: 2 * time.Second},
			want:  osbapi.StateSucceeded, waits: []time.Duration{2 * time.Second}, polls: 2, instance: true,
		},
		{
			name:  "failed is a final answer, not an error",
			async: fakebroker.Async{InProgressPolls: 1, Fail: true, Description: "disk full"},
			want:  osbapi.StateFailed, wantDesc: "disk full", waits: []time.Duration{10 * ms}, polls: 2,
		},
		{
			name:  "410 Gone after a non-delete operation is a failure",
			async: fakebroker.Async{Gone: true},
			want:  osbapi.StateFailed, wantDesc: "the broker no longer knows the resource (410 Gone)", wantGone: true, polls: 1,
			instance: true,
		},
		{
			name:  "transient errors are survived",
			async: fakebroker.Async{},
			script: []fakebroker.Respond{
				{Status: 500}, {Status: 503},
			},
			want: osbapi.StateSucceeded, waits: []time.Duration{10 * ms, 20 * ms}, polls: 3, instance: true,
		},
		{
			name:   "too many transient errors in a row end polling",
			async:  fakebroker.Async{},
			script: []fakebroker.Respond{{Status: 500}, {Status: 500}},
			opts:   osbclient.PollOptions{MaxTransientErrors: 1},
			wantErr: func(t *testing.T, err error) {
				assert.True(t, osbclient.Retryable(err))
				h, ok := osbclient.AsHTTPError(err)
				require.True(t, ok)
				assert.Equal(t, 500, h.StatusCode)
			},
			waits: []time.Duration{10 * ms}, polls: 2,
		},
		{
			name:   "a refusal ends polling at once",
			async:  fakebroker.Async{},
			script: []fakebroker.Respond{{Status: 400, Description: "bad operation"}},
			wantErr: func(t *testing.T, err error) {
				assert.True(t, osbclient.IsBadRequest(err))
			},
			polls: 1,
		},
		{
			name:     "deadline: still in progress with the last description",
			async:    fakebroker.Async{InProgressPolls: 100, RetryAfter: "3", ProgressDescription: "copying data"},
			deadline: 10 * time.Second,
			wantErr: func(t *testing.T, err error) {
				require.ErrorIs(t, err, osbclient.ErrStillInProgress)
				require.ErrorIs(t, err, context.DeadlineExceeded)
				var sip *osbclient.StillInProgressError
				require.True(t, errors.As(err, &sip))
				assert.Equal(t, 4, sip.Polls)
				assert.Equal(t, "copying data", sip.Description())
				assert.Equal(t, `the broker operation is still in progress after 4 poll(s) (broker: "copying data"); `+
					`stopped waiting: the next poll (in 3s) would come after the deadline (1s left)`, err.Error())
			},
			waits: []time.Duration{3 * time.Second, 3 * time.Second, 3 * time.Second}, polls: 4,
		},
		{
			name:  "MaxPolls",
			async: fakebroker.Async{InProgressPolls: 100},
			opts:  osbclient.PollOptions{MaxPolls: 2},
			wantErr: func(t *testing.T, err error) {
				require.ErrorIs(t, err, osbclient.ErrStillInProgress)
				assert.Contains(t, err.Error(), "reached the limit of 2 poll(s)")
			},
			waits: []time.Duration{10 * ms}, polls: 2,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := fakebroker.New(t)
			async := tt.async
			b.Script(fakebroker.OpProvision, fakebroker.Respond{Async: &async})
			b.Script(fakebroker.OpInstanceLastOperation, tt.script...)
			c := newClient(t, b)
			resp, err := c.Provision(testCtx(t), meta, provisionReq("i1"))
			require.NoError(t, err)
			require.True(t, resp.Async)

			clock := newSteppingClock()
			opts := tt.opts
			if opts.MinInterval == 0 {
				opts.MinInterval = 10 * ms
			}
			if opts.MaxInterval == 0 {
				opts.MaxInterval = 40 * ms
			}
			opts.Clock = clock
			ctx := testCtx(t)
			if tt.deadline != 0 {
				var cancel context.CancelFunc
				ctx, cancel = context.WithDeadline(ctx, clock.Now().Add(tt.deadline))
				defer cancel()
			}
			got, err := c.PollInstance(ctx, meta, osbclient.InstanceLastOperationRequest{
				InstanceID: "i1", ServiceID: fakebroker.ServiceDBID, PlanID: fakebroker.PlanSmallID, Operation: resp.Operation,
			}, opts)
			if tt.wantErr != nil {
				require.Error(t, err)
				tt.wantErr(t, err)
			} else {
				require.NoError(t, err)
				assert.Equal(t, tt.want, got.State)
				assert.Equal(t, tt.wantDesc, got.Description)
				assert.Equal(t, tt.wantGone, got.Gone)
			}
			assert.Equal(t, tt.waits, clock.Waits(), "waits between polls")
			calls := b.Calls(fakebroker.OpInstanceLastOperation)
			assert.Len(t, calls, tt.polls, "polls")
			for _, call := range calls {
				assert.Equal(t, resp.Operation, call.Query.Get("operation"))
			}
			_, held := b.Instance("i1")
			assert.Equal(t, tt.instance, held)
		})
	}
}

func TestPollDeprovisionGoneIsSuccess(t *testing.T) {
	b := fakebroker.New(t)
	b.PutInstance(existing("i1"))
	b.Script(fakebroker.OpDeprovision, fakebroker.Respond{Async: &fakebroker.Async{InProgressPolls: 1, Gone: true}})
	c := newClient(t, b)
	resp, err := c.Deprovision(testCtx(t), meta, deprovisionReq("i1"))
	require.NoError(t, err)

	clock := newSteppingClock()
	got, err := c.PollInstance(testCtx(t), meta, osbclient.InstanceLastOperationRequest{InstanceID: "i1", Operation: resp.Operation},
		osbclient.PollOptions{Deleting: true, MinInterval: time.Millisecond, Clock: clock})
	require.NoError(t, err)
	assert.Equal(t, osbapi.StateSucceeded, got.State)
	assert.True(t, got.Gone)
	assert.Equal(t, 410, got.HTTPStatus)
	assert.Empty(t, b.InstanceIDs(), "the broker deleted the instance")
}

func TestPollCancelledWhileWaiting(t *testing.T) {
	b := fakebroker.New(t)
	b.Script(fakebroker.OpProvision, fakebroker.Respond{Async: &fakebroker.Async{InProgressPolls: 10, ProgressDescription: "working"}})
	c := newClient(t, b)
	resp, err := c.Provision(testCtx(t), meta, provisionReq("i1"))
	require.NoError(t, err)

	ctx, cancel := context.WithCancel(testCtx(t))
	defer cancel()
	clk := &cancellingClock{FakeClock: clocktesting.NewFakeClock(time.Now()), cancel: cancel}
	_, err = c.PollInstance(ctx, meta, osbclient.InstanceLastOperationRequest{InstanceID: "i1", Operation: resp.Operation},
		osbclient.PollOptions{Clock: clk})
	require.ErrorIs(t, err, osbclient.ErrStillInProgress)
	require.ErrorIs(t, err, context.Canceled)
	var sip *osbclient.StillInProgressError
	require.True(t, errors.As(err, &sip))
	assert.Equal(t, "working", sip.Description())
	assert.Equal(t, 1, b.Count(fakebroker.OpInstanceLastOperation))
}

// The default clock makes real timers; these tests only check that it
// ends (on time or on cancellation) and leaves nothing behind (goleak).
func TestPollWithRealTimer(t *testing.T) {
	b := fakebroker.New(t)
	b.Script(fakebroker.OpProvision, fakebroker.Respond{Async: &fakebroker.Async{InProgressPolls: 2}})
	c := newClient(t, b)
	resp, err := c.Provision(testCtx(t), meta, provisionReq("i1"))
	require.NoError(t, err)
	got, err := c.PollInstance(testCtx(t), meta, osbclient.InstanceLastOperationRequest{InstanceID: "i1", Operation: resp.Operation},
		osbclient.PollOptions{MinInterval: time.Millisecond, MaxInterval: 2 * time.Millisecond})
	require.NoError(t, err)
	assert.Equal(t, osbapi.StateSucceeded, got.State)
	assert.Equal(t, 3, b.Count(fakebroker.OpInstanceLastOperation))
}

func TestPollWithRealTimerCancelled(t *testing.T) {
	b := fakebroker.New(t)
	b.Script(fakebroker.OpProvision, fakebroker.Respond{Async: &fakebroker.Async{InProgressPolls: 10}})
	c := newClient(t, b)
	resp, err := c.Provision(testCtx(t), meta, provisionReq("i1"))
	require.NoError(t, err)

	// No deadline: only the cancellation can end the hour-long wait.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan struct{})
	go func() {
		defer close(done)
		_, _ = b.WaitForCalls(ctx, fakebroker.OpInstanceLastOperation, 1)
		cancel()
	}()
	_, err = c.PollInstance(ctx, meta, osbclient.InstanceLastOperationRequest{InstanceID: "i1", Operation: resp.Operation},
		osbclient.PollOptions{MinInterval: time.Hour})
	<-done
	require.ErrorIs(t, err, osbclient.ErrStillInProgress)
	assert.Contains(t, err.Error(), "the context ended")
}

func TestPollBinding(t *testing.T) {
	b := fakebroker.New(t)
	b.PutInstance(existing("i1"))
	b.Script(fakebroker.OpBind, fakebroker.Respond{Async: &fakebroker.Async{InProgressPolls: 2, RetryAfter: "2"}})
	c := newClient(t, b)
	resp, err := c.Bind(testCtx(t), meta, bindReq("i1", "b1"))
	require.NoError(t, err)

	_, err = c.GetBinding(testCtx(t), meta, osbclient.GetBindingRequest{InstanceID: "i1", BindingID: "b1"})
	require.True(t, osbclient.IsNotFound(err), "404 while the bind is in progress: %v", err)

	clock := newSteppingClock()
	got, err := c.PollBinding(testCtx(t), meta,
		osbclient.BindingLastOperationRequest{InstanceID: "i1", BindingID: "b1", Operation: resp.Operation},
		osbclient.PollOptions{Clock: clock})
	require.NoError(t, err)
	assert.Equal(t, osbapi.StateSucceeded, got.State)
	assert.Equal(t, []time.Duration{2 * time.Second, 2 * time.Second}, clock.Waits())

	bnd, err := c.GetBinding(testCtx(t), meta, osbclient.GetBindingRequest{InstanceID: "i1", BindingID: "b1"})
	require.NoError(t, err)
	held, _ := b.Binding("i1", "b1")
	assert.Equal(t, held.Credentials, bnd.Credentials)
}
