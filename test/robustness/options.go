package robustness

import (
	"time"

	"github.com/lockstep-dev/lockstep/internal/breaks"
	"github.com/lockstep-dev/lockstep/test/robustness/history"
)

// Options say what a run does.
type Options struct {
	// Seed makes every random choice; the same seed, the same traffic and
	// faults.
	Seed int64
	// Duration is how long clients send traffic and faults are injected.
	Duration time.Duration
	// Clients and Namespaces: how many of each.
	Clients    int
	Namespaces int
	// Profile says which faults are injected, how often, and what is held
	// back.
	Profile Profile
	// Async is the share of the test broker's changes it answers 202.
	Async float64
	// Converge bounds the wait, once the faults stop, for lockstep to
	// finish; what is not finished then is a violation.
	Converge time.Duration
	// Break switches one of lockstep's deliberate breaks on (see
	// internal/breaks); empty for none.
	Break breaks.Break
	// Dir holds the run's logs and files; Results is the results file
	// written at the end.
	Dir     string
	Results string
	// Binary is the lockstep binary, built with the tag lockstep_breaks
	// (see Build); empty builds one into Dir.
	Binary string
	// Log reports progress; nil reports nothing.
	Log func(string)
}

// Profile is a mix of faults.
type Profile struct {
	Name string
	// Faults are the kinds injected.
	Faults []history.FaultKind
	// Spare names, per fault kind, the broker requests it does not hit,
	// and why (a known defect it would only show again).
	Spare map[history.FaultKind]Spare
	// ReplicaEvery, APIServerEvery, BrokerStopEvery and BrokerFaultEvery
	// are the mean time between two faults of each kind of target.
	ReplicaEvery, APIServerEvery, BrokerStopEvery, BrokerFaultEvery time.Duration
	// BrokerFaultLanes is how many windows of request faults are open at
	// a broker at once (at least 1).
	BrokerFaultLanes int
	// Steady faults are on at every broker for the whole run.
	Steady []Steady
	// Async, when set, is the share of the test broker's changes answered
	// 202 instead of Options.Async.
	Async *float64
}

// Steady is a request fault on for a whole run.
type Steady struct {
	Kind history.FaultKind
	// Ops are the broker requests it hits (osbclient.Op).
	Ops []string
}

// Spare is what a fault kind is held back from.
type Spare struct {
	// Ops are the broker requests (osbclient.Op) the fault does not hit.
	Ops []string
	// Why names the defect it would show.
	Why string
}

// injects reports whether the profile injects faults of kind k.
func (p Profile) injects(k history.FaultKind) bool {
	for _, f := range p.Faults {
		if f == k {
			return true
		}
	}
	return false
}
