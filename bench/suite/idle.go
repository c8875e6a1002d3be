package suite

import (
	"context"
	"fmt"
	"time"
)

// idle is what lockstep does with no operation to carry out, per second:
// its leader election renewing its Lease, its timers, the benchmark's own
// scrapes. The cost of an operation is what lockstep does beyond it.
type idle struct {
	cpu  time.Duration // CPU per second
	api  apiRequests   // requests per second, by method
	over time.Duration // how long it was measured
}

// measureIdle reads lockstep's CPU and requests over d with nothing sent
// to it; nil when they cannot be read (the figures are then those in all).
func (s *Suite) measureIdle(ctx context.Context, d time.Duration) *idle {
	before := s.scrape(ctx)
	cpu0, err := s.Env.Lockstep.CPU()
	start := time.Now()
	if before == nil || err != nil {
		return nil
	}
	select {
	case <-ctx.Done():
		return nil
	case <-time.After(d):
	}
	cpu1, err := s.Env.Lockstep.CPU()
	over := time.Since(start)
	after := s.scrape(ctx)
	if after == nil || err != nil {
		return nil
	}
	c := costBetween(before, after)
	rate := &idle{cpu: time.Duration(float64(cpu1-cpu0) / over.Seconds()), api: apiRequests{}, over: over}
	for m, n := range c.api {
		rate.api[m] = n / over.Seconds()
	}
	return rate
}

// beyond is what an operation cost beyond idling: the requests and CPU of
// a step that took elapsed, less what lockstep does in that time with
// nothing to do. A nil idle takes nothing away.
func (i *idle) beyond(api apiRequests, cpu, elapsed time.Duration) (apiRequests, time.Duration) {
	if i == nil {
		return api, cpu
	}
	net := apiRequests{}
	for m, n := range api {
		if left := n - i.api[m]*elapsed.Seconds(); left > 0 {
			net[m] = left
		}
	}
	return net, max(cpu-time.Duration(float64(i.cpu)*elapsed.Seconds()), 0)
}

// String says what idling cost, for the report.
func (i *idle) String() string {
	if i == nil {
		return "not measured"
	}
	return fmt.Sprintf("%s of CPU a second, requests a second: %s (measured over %s)", dur(i.cpu), i.api.per(1, 2, "in all"), i.over.Round(100*time.Millisecond))
}
