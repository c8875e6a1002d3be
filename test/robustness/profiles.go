package robustness

import (
	"time"

	"github.com/lockstep-dev/lockstep/test/robustness/history"
)

// FullProfile injects every kind of fault at every request it can hit,
// often enough for a ten-minute run to inject each kind at least a
// hundred times.
func FullProfile() Profile {
	return Profile{
		Name: "full", Faults: AllFaults,
		ReplicaEvery: 3 * time.Second, APIServerEvery: 3 * time.Second,
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
