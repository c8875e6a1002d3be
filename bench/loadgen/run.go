package loadgen

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"
)

// Load bounds one run of a load loop.
type Load struct {
	// Concurrency is the number of workers sending at once (at least 1).
	Concurrency int
	// Requests is the number of requests to send, across all workers.
	Requests int
	// MaxDuration stops the run even if not every request was sent.
	MaxDuration time.Duration
}

// Validate reports a load that cannot run.
func (l Load) Validate() error {
	switch {
	case l.Concurrency < 1:
		return fmt.Errorf("load: concurrency %d: must be at least 1", l.Concurrency)
	case l.Requests < 0:
		return fmt.Errorf("load: requests %d: must not be negative", l.Requests)
	case l.MaxDuration <= 0:
		return fmt.Errorf("load: max duration %s: must be more than 0 (every load loop is bounded in time)", l.MaxDuration)
	}
	return nil
}

// Do sends request number i and checks its answer. It returns an error when
// the answer is not the one expected (a rejection can be the expected
// answer). i is unique within a run.
type Do func(ctx context.Context, i int) error

// Work is what a worker does for request i: Do is timed; After, when set,
// runs right after a successful Do, untimed: bookkeeping that the system
// under test needs but that is not part of the measured request (the API
// server persisting an object its webhook allowed, say). An error from
// After counts as an unexpected answer.
type Work struct {
	Do    Do
	After Do
}

// Result is what a run measured.
type Result struct {
	// Latencies are those of the requests that got the expected answer, in
	// no particular order.
	Latencies []time.Duration
	// Errors counts requests whose answer was not the expected one.
	Errors int
	// FirstError is the first of them, for the report.
	FirstError error
	// Elapsed is the wall time of the run.
	Elapsed time.Duration
	// TimedOut is true when MaxDuration stopped the run early.
	TimedOut bool
}

// Completed is the number of requests that got the expected answer.
func (r Result) Completed() int { return len(r.Latencies) }

// Throughput is completed requests per second of wall time.
func (r Result) Throughput() float64 {
	if r.Elapsed <= 0 {
		return 0
	}
	return float64(len(r.Latencies)) / r.Elapsed.Seconds()
}

// Merge adds the measurements of o to r (for rounds of one arm).
func (r *Result) Merge(o Result) {
	r.Latencies = append(r.Latencies, o.Latencies...)
	r.Errors += o.Errors
	if r.FirstError == nil {
		r.FirstError = o.FirstError
	}
	r.Elapsed += o.Elapsed
	r.TimedOut = r.TimedOut || o.TimedOut
}

// Run sends load.Requests requests with load.Concurrency workers, doing w
// with indexes first, first+1, ...; it stops early at MaxDuration or when
// ctx ends. A request cut short by the stop is neither a latency nor an
// error.
func Run(parent context.Context, load Load, first int, w Work) (Result, error) {
	if err := load.Validate(); err != nil {
		return Result{}, err
	}
	ctx, cancel := context.WithTimeout(parent, load.MaxDuration)
	defer cancel()

	var (
		next      atomic.Int64
		mu        sync.Mutex
		res       Result
		wg        sync.WaitGroup
		perWorker = make([][]time.Duration, load.Concurrency)
	)
	start := time.Now()
	for worker := range load.Concurrency {
		wg.Go(func() {
			for {
				n := int(next.Add(1)) - 1
				if n >= load.Requests || ctx.Err() != nil {
					return
				}
				t0 := time.Now()
				err := w.Do(ctx, first+n)
				d := time.Since(t0)
				if err == nil && w.After != nil {
					err = w.After(ctx, first+n)
				}
				switch {
				case err == nil:
					perWorker[worker] = append(perWorker[worker], d)
				case ctx.Err() != nil:
					return // cut short by the bound: not the system's fault
				default:
					mu.Lock()
					res.Errors++
					if res.FirstError == nil {
						res.FirstError = fmt.Errorf("request %d: %w", first+n, err)
					}
					mu.Unlock()
				}
			}
		})
	}
	wg.Wait()
	res.Elapsed = time.Since(start)
	for _, l := range perWorker {
		res.Latencies = append(res.Latencies, l...)
	}
	if err := parent.Err(); err != nil {
		return res, fmt.Errorf("load stopped: %w", err)
	}
	res.TimedOut = len(res.Latencies)+res.Errors < load.Requests
	return res, nil
}
