package robustness

import (
	"time"

	"github.com/lockstep-dev/lockstep/test/robustness/history"
)

// FullProfile injects every kind of fault at every request it can hit:
// a replica killed every three seconds on average, a broker stopped every
// four, a window of request faults at each broker every second after the
// last; kube-apiserver is killed every thirty seconds, as its restart
// takes seconds (ten on a busy two-core machine) during which nothing
// else can happen.
func FullProfile() Profile {
	return Profile{
		Name: "full", Faults: AllFaults,
		ReplicaEvery: 3 * time.Second, APIServerEvery: 30 * time.Second,
		BrokerStopEvery: 4 * time.Second, BrokerFaultEvery: time.Second,
	}
}

// ShortProfile is FullProfile without what shows the known findings (see
// knownFindings), for the short run of make test: every kind of fault is
// injected, each held back from the requests named.
func ShortProfile() Profile {
	p := FullProfile()
	p.Name = "short"
	p.Spare = map[history.FaultKind]Spare{}
	return p
}

// QuietProfile injects no fault: the traffic alone, as a baseline.
func QuietProfile() Profile { return Profile{Name: "quiet"} }
