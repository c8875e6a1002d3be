package loadgen

import (
	"context"
	"fmt"
	"time"
)

// Arm is one side of a comparison: lockstep, or its baseline.
type Arm struct {
	Name string
	Work
}

// Plan is how Alternate spreads a load over rounds.
type Plan struct {
	// Load is the whole load of each arm: Requests and MaxDuration are
	// split evenly over the rounds.
	Load Load
	// Rounds is the number of alternations (at least 1).
	Rounds int
	// Warmup is the number of requests each arm sends, unmeasured, before
	// the first round (connections, caches).
	Warmup int
}

// Alternate measures every arm under the same load in interleaved rounds:
// round r runs the arms one after the other, starting with arm r mod n, so
// that no arm always goes first. Each arm's request indexes are unique over
// the warmup and all rounds. It returns one merged Result per arm, in the
// order of arms.
func Alternate(ctx context.Context, arms []Arm, p Plan) ([]Result, error) {
	if len(arms) == 0 {
		return nil, fmt.Errorf("alternate: no arms")
	}
	if p.Rounds < 1 {
		return nil, fmt.Errorf("alternate: rounds %d: must be at least 1", p.Rounds)
	}
	if err := p.Load.Validate(); err != nil {
		return nil, err
	}
	next := make([]int, len(arms)) // next request index of each arm
	budget := p.Load.MaxDuration / time.Duration(p.Rounds)
	if p.Warmup > 0 {
		for i, a := range arms {
			warm := Load{Concurrency: p.Load.Concurrency, Requests: p.Warmup, MaxDuration: budget}
			if _, err := Run(ctx, warm, next[i], a.Work); err != nil {
				return nil, fmt.Errorf("warming up %s: %w", a.Name, err)
			}
			next[i] += p.Warmup
		}
	}
	results := make([]Result, len(arms))
	perRound := p.Load.Requests / p.Rounds
	for r := range p.Rounds {
		n := perRound
		if r == p.Rounds-1 {
			n = p.Load.Requests - perRound*(p.Rounds-1)
		}
		for k := range arms {
			i := (r + k) % len(arms)
			load := Load{Concurrency: p.Load.Concurrency, Requests: n, MaxDuration: budget}
			res, err := Run(ctx, load, next[i], arms[i].Work)
			if err != nil {
				return nil, fmt.Errorf("%s, round %d: %w", arms[i].Name, r+1, err)
			}
			next[i] += n
			results[i].Merge(res)
		}
	}
	return results, nil
}
