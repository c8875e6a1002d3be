package suite

import "time"

// Sizes set how much work each benchmark does.
type Sizes struct {
	// Concurrency levels of the admission benchmark.
	Concurrency []int
	// AdmissionRequests per arm, scenario and level for the paths without
	// a broker call; AdmissionBrokerRequests for the spec update.
	AdmissionRequests, AdmissionBrokerRequests int
	// AdmissionRounds, when set, grows AdmissionRequests at the higher
	// concurrency levels until they too split into that many alternating
	// rounds (each worker still sending requestsPerWorkerRound a round).
	AdmissionRounds int
	// Rounds are the alternations of each comparison; Warmup the
	// unmeasured requests per arm first.
	Rounds, Warmup int
	// EndToEnd is the number of objects (and of each kind of change) per
	// arm of the end-to-end benchmark.
	EndToEnd int
	// BrokerPath is the number of instances provisioned, updated and
	// deprovisioned per arm and broker latency.
	BrokerPath int
	// BrokerLatencies are the test broker's fixed latencies.
	BrokerLatencies []time.Duration
	// Tracing is the number of instances provisioned, updated and
	// deprovisioned per arm of the tracing benchmark: its target (1.02x)
	// is finer than the broker path's, and the median of a few hundred
	// requests on a shared machine moves by more than that.
	Tracing int
	// ScaleInstances are the instances stored for the scale benchmark;
	// Resync the resync settings of its resync pass over them.
	ScaleInstances int
	Resync         ResyncSettings
	// ChurnCycles are the create/delete cycles of the journal benchmark,
	// ChurnRetention the operation retention lockstep runs with there, and
	// ChurnTimeout the bound of its cycles.
	ChurnCycles                  int
	ChurnRetention, ChurnTimeout time.Duration
	// CatalogPlans are the catalog sizes compared (small, large).
	CatalogPlans [2]int
	// CatalogRequests per arm and kind of request.
	CatalogRequests int
	// EmbeddedOps are the provisions and binds measured per arm;
	// EmbeddedStored the instances stored first; EmbeddedSpecs the specs
	// reconciled.
	EmbeddedOps, EmbeddedStored, EmbeddedSpecs int
	// BurstInstances are the ServiceInstances of the burst benchmark, each
	// with a ServiceBinding, sent at once by BurstClients; BurstTimeout
	// bounds each of its bursts, from the first request until every object
	// is Ready (or gone).
	BurstInstances, BurstClients int
	BurstTimeout                 time.Duration
	// TypedOfferings are the services of the typed-kinds benchmark's
	// broker, all activated at once; TypedActivations the activations of
	// one of them timed; APIResourcesRuns the runs of kubectl
	// api-resources timed with none and with all of them activated;
	// TypedRefusals the create-only changes refused per arm.
	TypedOfferings, TypedActivations, APIResourcesRuns, TypedRefusals int
	// Benchtime and BenchCount are go test's -benchtime and -count for the
	// Go benchmarks.
	Benchtime  string
	BenchCount int
	// IdleWindow is how long the broker path watches lockstep idle, to
	// tell an operation's cost from what lockstep does with nothing to do.
	IdleWindow time.Duration
	// StepTimeout bounds each load loop and each wait.
	StepTimeout time.Duration
}

// Full are the sizes of `make bench`, chosen to finish in about a quarter
// of an hour on 2 cores.
func Full() Sizes {
	return Sizes{
		Concurrency:       []int{1, 8, 64},
		AdmissionRequests: 6000, AdmissionBrokerRequests: 600, AdmissionRounds: maxAdmissionRounds,
		Rounds: 6, Warmup: 100,
		EndToEnd:        500,
		BrokerPath:      100,
		BrokerLatencies: []time.Duration{0, 50 * time.Millisecond},
		Tracing:         1000,
		ScaleInstances:  10000,
		ChurnCycles:     10000, ChurnRetention: time.Minute, ChurnTimeout: 20 * time.Minute,
		// Due at 1000/s against a limit of 500/s: a pass takes 20 s.
		Resync:          ResyncSettings{Interval: 10 * time.Second, QPS: 500, Concurrency: 8},
		CatalogPlans:    [2]int{10, 1000},
		CatalogRequests: 3000,
		EmbeddedOps:     2000, EmbeddedStored: 10000, EmbeddedSpecs: 10000,
		BurstInstances: 2000, BurstClients: 16, BurstTimeout: 15 * time.Minute,
		TypedOfferings: 50, TypedActivations: 7, APIResourcesRuns: 15, TypedRefusals: 2000,
		Benchtime: "1s", BenchCount: 3,
		StepTimeout: 5 * time.Minute, IdleWindow: 20 * time.Second,
	}
}

// Tiny are the sizes of the harness test: every benchmark kind once, as
// small as it can be while still doing each step.
func Tiny() Sizes {
	return Sizes{
		Concurrency:       []int{1, 8},
		AdmissionRequests: 20, AdmissionBrokerRequests: 10,
		Rounds: 2, Warmup: 2,
		EndToEnd:        4,
		BrokerPath:      3,
		BrokerLatencies: []time.Duration{0, 10 * time.Millisecond},
		Tracing:         3,
		ScaleInstances:  10,
		ChurnCycles:     10, ChurnRetention: 2 * time.Second, ChurnTimeout: time.Minute,
		Resync:          ResyncSettings{Interval: time.Second, QPS: 5, Concurrency: 2},
		CatalogPlans:    [2]int{2, 20},
		CatalogRequests: 20,
		EmbeddedOps:     10, EmbeddedStored: 10, EmbeddedSpecs: 10,
		BurstInstances: 3, BurstClients: 4, BurstTimeout: 2 * time.Minute,
		TypedOfferings: 3, TypedActivations: 2, APIResourcesRuns: 2, TypedRefusals: 8,
		Benchtime: "1x", BenchCount: 1,
		StepTimeout: time.Minute, IdleWindow: time.Second,
	}
}
