package suite

import (
	"context"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/lockstep-dev/lockstep/bench/env"
	"github.com/lockstep-dev/lockstep/bench/loadgen"
	"github.com/lockstep-dev/lockstep/bench/report"
	"github.com/lockstep-dev/lockstep/internal/broker/fakebroker"
)

// Suite runs the benchmarks.
type Suite struct {
	// Env is the control plane with lockstep and the baseline; nil when
	// only the benchmarks that need none run (Micro, Embedded).
	Env *env.Env
	// Root is the repository root.
	Root string
	// Sizes set how much work each benchmark does.
	Sizes Sizes
	// Progress receives one line per step; nil discards them.
	Progress io.Writer
	// GoFlags are extra flags for `go test` when running Go benchmarks
	// (the harness test passes -race when it runs under it).
	GoFlags []string
	// Strict fails a benchmark at the first unexpected answer or run cut
	// short by its time bound, instead of reporting it in the tables.
	Strict bool

	mu   sync.Mutex
	acme *fakebroker.Broker // the shared instant broker, registered once
}

// Benchmark is one benchmark of the suite.
type Benchmark struct {
	// Name is how -only selects it.
	Name string
	// NeedsEnv is true when it needs the control plane.
	NeedsEnv bool
	// Run measures and reports.
	Run func(s *Suite, ctx context.Context) (report.Section, error)
}

// Benchmarks are the suite's benchmarks in the order they run: the ones
// that add many objects to the API server last but one, the embedded
// broker (its own process state) last.
func Benchmarks() []Benchmark {
	return []Benchmark{
		{Name: "micro", Run: (*Suite).Micro},
		{Name: "admission", NeedsEnv: true, Run: (*Suite).Admission},
		{Name: "e2e", NeedsEnv: true, Run: (*Suite).EndToEnd},
		{Name: "typed", NeedsEnv: true, Run: (*Suite).Typed},
		{Name: "broker", NeedsEnv: true, Run: (*Suite).BrokerPath},
		{Name: "tracing", NeedsEnv: true, Run: (*Suite).Tracing},
		{Name: "journal", NeedsEnv: true, Run: (*Suite).Journal},
		{Name: "burst", NeedsEnv: true, Run: (*Suite).Burst},
		{Name: "scale", NeedsEnv: true, Run: (*Suite).Scale},
		{Name: "embedded", Run: (*Suite).Embedded},
	}
}

// Close releases what the suite started (the shared test broker).
func (s *Suite) Close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.acme != nil {
		s.acme.Close()
		s.acme = nil
	}
}

// Logf reports progress.
func (s *Suite) Logf(format string, args ...any) {
	if s.Progress != nil {
		fmt.Fprintf(s.Progress, "%s bench: %s\n", time.Now().Format("15:04:05"), fmt.Sprintf(format, args...))
	}
}

// acmeBroker is the instant test broker registered as ServiceBroker
// "acme", started and registered on first use.
func (s *Suite) acmeBroker(ctx context.Context) (*fakebroker.Broker, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.acme != nil {
		return s.acme, nil
	}
	b, err := fakebroker.Start()
	if err != nil {
		return nil, fmt.Errorf("starting the test broker: %w", err)
	}
	if _, err := s.Env.RegisterBroker(ctx, acme, b.URL(), s.Sizes.StepTimeout); err != nil {
		b.Close()
		return nil, err
	}
	s.acme = b
	return b, nil
}

// acme is the ServiceBroker backed by the shared instant test broker.
const acme = "acme"

// verify fails under Strict when runs had unexpected answers or were cut
// short.
func (s *Suite) verify(what string, results ...loadgen.Result) error {
	if s.Strict && !clean(results...) {
		return fmt.Errorf("%s: %s", what, problems(results...))
	}
	return nil
}
