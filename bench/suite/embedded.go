package suite

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"time"

	"github.com/lockstep-dev/lockstep/bench/loadgen"
	"github.com/lockstep-dev/lockstep/bench/report"
	"github.com/lockstep-dev/lockstep/internal/broker/embedded"
	"github.com/lockstep-dev/lockstep/internal/broker/embedded/registry"
	"github.com/lockstep-dev/lockstep/internal/broker/embedded/store/bboltstore"
)

// The no-op bundle: no actions, so every action is builtin:noop.
const (
	noopService   = "noop"
	noopPlan      = "default"
	noopServiceID = "svc-noop"
	noopPlanID    = "plan-noop"
	noopManifest  = `{"name":%q,"id":%q,"description":"does nothing","bindable":true,
  "plans":[{"id":%q,"name":"` + noopPlan + `","description":"default"}]}`
)

// embeddedBroker is an embedded broker on its own bbolt file, served over
// HTTP on loopback.
type embeddedBroker struct {
	broker *embedded.Broker
	srv    *httptest.Server
	http   *http.Client
}

// startEmbedded opens a broker on dir/broker.db with the local registry
// registryDir, synced once.
func startEmbedded(ctx context.Context, dir, registryDir string) (*embeddedBroker, error) {
	st, err := bboltstore.Open(filepath.Join(dir, "broker.db"), bboltstore.Options{})
	if err != nil {
		return nil, err
	}
	br, err := embedded.New(embedded.Config{
		Store: st, CloseStore: true, WorkDir: filepath.Join(dir, "work"),
		Registries: []registry.Registry{registry.NewLocal("bench", registryDir, 0)},
		SyncPeriod: -1, SweepPeriod: -1, HeartbeatInterval: -1, BootstrapTimeout: -1,
	})
	if err != nil {
		_ = st.Close()
		return nil, fmt.Errorf("opening the embedded broker: %w", err)
	}
	br.Sync(ctx)
	srv := httptest.NewServer(br)
	return &embeddedBroker{broker: br, srv: srv, http: srv.Client()}, nil
}

func (e *embeddedBroker) close() error {
	e.srv.Close()
	return e.broker.Close()
}

// put sends an OSB PUT and expects 201.
func (e *embeddedBroker) put(ctx context.Context, path, body string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPut, e.srv.URL+path, bytes.NewReader([]byte(body)))
	if err != nil {
		return err
	}
	req.Header.Set("X-Broker-API-Version", "2.17")
	req.Header.Set("Content-Type", "application/json")
	resp, err := e.http.Do(req)
	if err != nil {
		return err
	}
	raw, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusCreated {
		return fmt.Errorf("PUT %s answered %d, expected 201: %s", path, resp.StatusCode, raw)
	}
	return nil
}

func (e *embeddedBroker) provision(ctx context.Context, id string) error {
	return e.put(ctx, "/v2/service_instances/"+id,
		fmt.Sprintf(`{"service_id":%q,"plan_id":%q,"organization_guid":"bench-org","space_guid":"bench-space","parameters":{"n":1}}`, noopServiceID, noopPlanID))
}

func (e *embeddedBroker) bind(ctx context.Context, instance, id string) error {
	return e.put(ctx, "/v2/service_instances/"+instance+"/service_bindings/"+id,
		fmt.Sprintf(`{"service_id":%q,"plan_id":%q,"parameters":{"n":1}}`, noopServiceID, noopPlanID))
}

// writeBundles writes n no-op bundles (service ids svc-noop, svc-noop-1, ...)
// into dir.
func writeBundles(dir string, n int) error {
	for i := range n {
		name, id := noopService, noopServiceID
		if i > 0 {
			name, id = fmt.Sprintf("%s-%d", noopService, i), fmt.Sprintf("%s-%d", noopServiceID, i)
		}
		plan := noopPlanID
		if i > 0 {
			plan = fmt.Sprintf("%s-%d", noopPlanID, i)
		}
		if err := os.MkdirAll(filepath.Join(dir, name), 0o755); err != nil {
			return err
		}
		manifest := fmt.Sprintf(noopManifest, name, id, plan)
		if err := os.WriteFile(filepath.Join(dir, name, "bundle.json"), []byte(manifest), 0o644); err != nil {
			return err
		}
	}
	return nil
}

// Embedded measures the embedded broker (internal/broker/embedded): synchronous
// provisions and binds per second with the no-op bundle on the bbolt
// store, empty and holding many instances, and spec reconciliation of many
// specs; it also runs internal/broker/embedded's own Go benchmarks.
func (s *Suite) Embedded(ctx context.Context) (report.Section, error) {
	sz := s.Sizes
	sec := report.Section{Title: "5. Embedded broker", Text: []string{
		fmt.Sprintf("Two embedded brokers (`internal/broker/embedded`, in this process) each on its own bbolt file, serving the OSB API over HTTP on "+
			"loopback, with one no-op bundle (no actions: every action is `builtin:noop`). One starts empty; the other first receives %d "+
			"provisions, so that it always holds that many more instances. Then both get %d synchronous provisions (201) and %d binds (201, each to an instance of its own, since a broker "+
			"runs one operation per instance at a time), at concurrency 1 and 8, alternating in rotating rounds.", sz.EmbeddedStored, sz.EmbeddedOps, sz.EmbeddedOps),
	}}
	dir, err := os.MkdirTemp("", "lockstep-bench-embedded-")
	if err != nil {
		return sec, err
	}
	defer func() { _ = os.RemoveAll(dir) }()
	registryDir := filepath.Join(dir, "registry")
	if err := writeBundles(registryDir, 1); err != nil {
		return sec, err
	}
	empty, err := startEmbedded(ctx, filepath.Join(dir, "empty"), registryDir)
	if err != nil {
		return sec, err
	}
	defer func() { _ = empty.close() }()
	full, err := startEmbedded(ctx, filepath.Join(dir, "full"), registryDir)
	if err != nil {
		return sec, err
	}
	defer func() { _ = full.close() }()

	s.Logf("embedded: storing %d instances", sz.EmbeddedStored)
	stored, err := loadgen.Run(ctx, loadgen.Load{Concurrency: 8, Requests: sz.EmbeddedStored, MaxDuration: sz.StepTimeout}, 0,
		loadgen.Work{Do: func(ctx context.Context, i int) error { return full.provision(ctx, fmt.Sprintf("stored-%d", i)) }})
	if err != nil {
		return sec, err
	}
	if !clean(stored) {
		return sec, fmt.Errorf("storing %d instances in the embedded broker: %s", sz.EmbeddedStored, problems(stored))
	}

	table := report.Table{Header: []string{"operation", "concurrency", "fresh store p50", "p99", "throughput",
		fmt.Sprintf("%d more stored p50", sz.EmbeddedStored), "p99", "throughput", "throughput ratio", "unexpected answers"}}
	// A broker runs one operation per instance at a time (others get 422
	// ConcurrencyError), so every bind is to an instance of its own,
	// provisioned beforehand.
	bindTargets := func(level int) error {
		for _, b := range []*embeddedBroker{empty, full} {
			res, err := loadgen.Run(ctx, loadgen.Load{Concurrency: 8, Requests: sz.Warmup + sz.EmbeddedOps, MaxDuration: sz.StepTimeout}, 0,
				loadgen.Work{Do: func(ctx context.Context, i int) error { return b.provision(ctx, fmt.Sprintf("bt-c%d-%d", level, i)) }})
			if err != nil {
				return err
			}
			if !clean(res) {
				return fmt.Errorf("provisioning the instances to bind: %s", problems(res))
			}
		}
		return nil
	}
	ops := []struct {
		name    string
		prepare func(level int) error
		do      func(b *embeddedBroker, level int) loadgen.Do
	}{
		{name: "provision", do: func(b *embeddedBroker, level int) loadgen.Do {
			return func(ctx context.Context, i int) error { return b.provision(ctx, fmt.Sprintf("p-c%d-%d", level, i)) }
		}},
		{name: "bind", prepare: bindTargets, do: func(b *embeddedBroker, level int) loadgen.Do {
			return func(ctx context.Context, i int) error {
				return b.bind(ctx, fmt.Sprintf("bt-c%d-%d", level, i), fmt.Sprintf("b-c%d-%d", level, i))
			}
		}},
	}
	for _, op := range ops {
		for _, level := range []int{1, 8} {
			if op.prepare != nil {
				if err := op.prepare(level); err != nil {
					return sec, fmt.Errorf("embedded broker, %s: %w", op.name, err)
				}
			}
			s.Logf("embedded: %s at concurrency %d", op.name, level)
			res, err := loadgen.Alternate(ctx, []loadgen.Arm{
				{Name: "fresh store", Work: loadgen.Work{Do: op.do(empty, level)}},
				{Name: "more stored", Work: loadgen.Work{Do: op.do(full, level)}},
			}, loadgen.Plan{Load: loadgen.Load{Concurrency: level, Requests: sz.EmbeddedOps, MaxDuration: sz.StepTimeout},
				Rounds: sz.Rounds, Warmup: sz.Warmup})
			if err != nil {
				return sec, fmt.Errorf("embedded broker, %s: %w", op.name, err)
			}
			if err := s.verify("embedded broker, "+op.name, res...); err != nil {
				return sec, err
			}
			e, f := loadgen.Summarize(res[0]), loadgen.Summarize(res[1])
			table.Rows = append(table.Rows, []string{op.name, fmt.Sprint(level), dur(e.P50), dur(e.P99), rate(e.Throughput),
				dur(f.P50), dur(f.P99), rate(f.Throughput), fmt.Sprintf("%.2f", f.Throughput/max(e.Throughput, 1e-9)), problems(res...)})
		}
	}
	sec.Tables = append(sec.Tables, report.Table{
		Caption: fmt.Sprintf("Storing %d instances first (concurrency 8): %s.", sz.EmbeddedStored, rate(stored.Throughput())),
	}, table)

	specs, err := s.specReconciliation(ctx, dir)
	if err != nil {
		return sec, err
	}
	sec.Tables = append(sec.Tables, specs)

	s.Logf("embedded: go test -bench internal/broker/embedded")
	results, err := s.goBench(ctx, []string{"./internal/broker/embedded"}, "BenchmarkProvisionNoop|BenchmarkBindNoop")
	if err != nil {
		return sec, err
	}
	gb := report.Table{Caption: "`internal/broker/embedded`'s own Go benchmarks (one request at a time over HTTP, no-op bundle, bbolt):",
		Header: []string{"benchmark", "per second", "ns/op", "B/op", "allocs/op"}}
	for _, r := range results {
		per := metric(r, "provisions/s")
		if per == "-" {
			per = metric(r, "binds/s")
		}
		gb.Rows = append(gb.Rows, []string{r.Name, per, metric(r, "ns/op"), metric(r, "B/op"), metric(r, "allocs/op")})
	}
	sec.Tables = append(sec.Tables, gb)
	sec.Notes = append(sec.Notes, "The embedded broker's figures have no baseline to alternate with; the two stores are each other's "+
		"reference, measured in the same run. The fresh store fills up as the benchmark provisions into it, the other always holds "+
		"the stored instances more; the throughput ratio is the second's over the first's.")
	return sec, nil
}

// specReconciliation times syncs of a registry holding many specs: the
// first (every spec added), an unchanged one, one after every spec left
// the registry (every spec marked), and the sweep that deletes them.
func (s *Suite) specReconciliation(ctx context.Context, dir string) (report.Table, error) {
	n := s.Sizes.EmbeddedSpecs
	t := report.Table{Caption: fmt.Sprintf("**Spec reconciliation of %d specs** (local registry, one bundle directory per spec, bbolt):", n),
		Header: []string{"step", "time", "specs/s", "result"}}
	registryDir := filepath.Join(dir, "many")
	if err := writeBundles(registryDir, n); err != nil {
		return t, err
	}
	b, err := startEmbedded(ctx, filepath.Join(dir, "specs"), filepath.Join(dir, "absent-at-first"))
	if err != nil {
		return t, err
	}
	defer func() { _ = b.close() }()
	// startEmbedded synced an absent directory (a failed fetch); now point
	// the broker at the real registry by moving it into place.
	if err := os.Rename(registryDir, filepath.Join(dir, "absent-at-first")); err != nil {
		return t, err
	}
	sync := func(what func(added, marked []string) int) func() (int, error) {
		return func() (int, error) {
			rep := b.broker.Sync(ctx)
			if len(rep.Registries) != 1 {
				return 0, fmt.Errorf("the sync reported %d registries, expected 1", len(rep.Registries))
			}
			r := rep.Registries[0]
			if r.Err != nil {
				return 0, r.Err
			}
			return what(r.Added, r.Marked), nil
		}
	}
	added := func(a, _ []string) int { return len(a) }
	marked := func(_, m []string) int { return len(m) }
	emptyRegistry := func() error {
		live := filepath.Join(dir, "absent-at-first")
		if err := os.RemoveAll(live); err != nil {
			return err
		}
		return os.MkdirAll(live, 0o755)
	}
	steps := []struct {
		name    string
		prepare func() error // untimed
		run     func() (int, error)
	}{
		{name: "first sync (specs added)", run: sync(added)},
		{name: "unchanged sync (specs added)", run: sync(added)},
		{name: "sync after every spec left the registry (specs marked)", prepare: emptyRegistry, run: sync(marked)},
		{name: "sweep (unused marked specs deleted)", run: func() (int, error) {
			ids, err := b.broker.Sweep(ctx)
			return len(ids), err
		}},
	}
	for _, st := range steps {
		s.Logf("embedded: spec reconciliation, %s", st.name)
		if st.prepare != nil {
			if err := st.prepare(); err != nil {
				return t, fmt.Errorf("spec reconciliation, %s: %w", st.name, err)
			}
		}
		start := time.Now()
		count, err := st.run()
		took := time.Since(start)
		if err != nil {
			return t, fmt.Errorf("spec reconciliation, %s: %w", st.name, err)
		}
		t.Rows = append(t.Rows, []string{st.name, dur(took), rate(float64(n) / took.Seconds()), fmt.Sprint(count)})
	}
	return t, nil
}
