package robustness

import (
	"time"

	"github.com/lockstep-dev/lockstep/internal/breaks"
)

// FullProfile injects every kind of fault at every request it can hit:
// a replica killed every 0.9 seconds on average, the leader and a
// follower in turn; one of the five kube-apiservers killed and started
// again every three and a half seconds (never the last one ready); a
// broker stopped every four seconds; at each broker, two windows of
// request faults open at once, each a quarter of a second after the
// last of its lane.
func FullProfile() Profile {
	return Profile{
		Name: "full", Faults: AllFaults,
		ReplicaEvery: 900 * time.Millisecond, APIServerEvery: 3500 * time.Millisecond,
		BrokerStopEvery: 4 * time.Second, BrokerFaultEvery: 250 * time.Millisecond, BrokerFaultLanes: 2,
	}
}

// ShortProfile is FullProfile for the short run of make test: the same
// faults, with kube-apiserver killed every thirty seconds only (its
// restarts would leave a 75-second run little time for anything else);
// nothing is held back (see findings: the defects the suite found are
// fixed).
func ShortProfile() Profile {
	p := FullProfile()
	p.Name = "short"
	p.APIServerEvery = 30 * time.Second
	return p
}

// QuietProfile injects no fault: the traffic alone, as a baseline.
func QuietProfile() Profile { return Profile{Name: "quiet"} }

// BreakProfile is the short run's for a deliberate break of lockstep's:
// the one fault that exercises the broken promise, on for the whole run.
func BreakProfile(b breaks.Break) Profile {
	changes := []string{"provision", "update", "deprovision", "bind", "unbind"}
	polls := []string{"instance_last_operation", "binding_last_operation"}
	switch b {
	case breaks.AllowRefused:
		// Every change the broker is asked for fails (503), so admission
		// refuses it, and the break allows it all the same.
		return Profile{Name: "break " + string(b), Steady: []Steady{{Kind: Broker5xx, Ops: changes}}}
	case breaks.PollErrorFails:
		// Every change of the test broker is asynchronous, every poll
		// fails (503): the outcome is unknown, and the break calls it a
		// failure while the broker finishes.
		all := 1.0
		return Profile{Name: "break " + string(b), Steady: []Steady{{Kind: Broker5xx, Ops: polls}}, Async: &all}
	}
	// Credentials are written for every bind; no fault is needed.
	return Profile{Name: "break " + string(b)}
}
