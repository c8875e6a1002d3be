package suite

import (
	"context"
	"fmt"
	"net/http"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/lockstep-dev/lockstep/api/v1alpha1"
	"github.com/lockstep-dev/lockstep/bench/env"
	"github.com/lockstep-dev/lockstep/bench/loadgen"
	"github.com/lockstep-dev/lockstep/bench/report"
	"github.com/lockstep-dev/lockstep/internal/admission"
	"github.com/lockstep-dev/lockstep/internal/broker/fakebroker"
)

// instanceController is the name of lockstep's reconciler of
// ServiceInstances, as its metrics label it.
const instanceController = "serviceinstance"

// memoryTarget is the most RSS lockstep may use with the scale benchmark's
// instances.
const memoryTarget = 256 << 20

// Scale measures admission latency with a small and a large catalog, then
// lockstep's memory and start-up reconcile time with many instances in the
// API server, and what a resync pass over them costs.
func (s *Suite) Scale(ctx context.Context) (report.Section, error) {
	sec := report.Section{Title: "4. Scale"}
	if err := s.catalogSize(ctx, &sec); err != nil {
		return sec, err
	}
	if err := s.manyInstances(ctx, &sec); err != nil {
		return sec, err
	}
	return sec, nil
}

// catalogSize compares admission latency with two catalog sizes.
func (s *Suite) catalogSize(ctx context.Context, sec *report.Section) error {
	small, large := s.Sizes.CatalogPlans[0], s.Sizes.CatalogPlans[1]
	n := s.Sizes.CatalogRequests
	sec.Text = append(sec.Text, fmt.Sprintf("**Catalog size.** Two test brokers serve generated catalogs of %d and %d plans, every plan "+
		"with the typical create and update parameter schemas (enum, pattern, array, nested object, a create-only region), registered as "+
		"ServiceBrokers. Requests name the last plan of the last service. Two kinds of request that use the catalog without calling the broker: "+
		"a dry-run CREATE with typical parameters (every static check, the parameters validated against the plan's create schema) and a "+
		"create-only violation (422). %d requests per arm and kind, one at a time, the two catalogs alternating in rotating rounds.", small, large, n))

	var brokers []*fakebroker.Broker
	defer func() {
		for _, b := range brokers {
			b.Close()
		}
		// The large catalog stays out of the memory measurement below.
		for _, plans := range s.Sizes.CatalogPlans {
			sb := &v1alpha1.ServiceBroker{ObjectMeta: metav1.ObjectMeta{Name: catalogBroker(plans)}}
			if err := s.Env.Client.Delete(context.Background(), sb); client.IgnoreNotFound(err) != nil {
				s.Logf("scale: deleting ServiceBroker %s: %v", sb.Name, err)
			}
		}
	}()
	loads := report.Table{Caption: "Catalog load (fetch, schema compilation, ServiceBroker Ready):", Header: []string{"plans", "time to Ready"}}
	for i, plans := range s.Sizes.CatalogPlans {
		b, err := fakebroker.Start(fakebroker.WithCatalog(generatedCatalog(plans, plansPerService)))
		if err != nil {
			return fmt.Errorf("starting a test broker with %d plans: %w", plans, err)
		}
		brokers = append(brokers, b)
		registered := time.Now()
		took, err := s.Env.RegisterBroker(ctx, catalogBroker(plans), b.URL(), s.Sizes.StepTimeout)
		if err != nil {
			return err
		}
		loads.Rows = append(loads.Rows, []string{fmt.Sprint(plans), dur(took)})
		if i == len(s.Sizes.CatalogPlans)-1 {
			// Measured before admission, which then runs with the
			// marketplace written and idle.
			if err := s.marketplaceSync(ctx, sec, catalogBroker(plans), plans, registered); err != nil {
				return err
			}
		}
	}

	rc, err := loadgen.NewReviewClient(s.Env.CA, 35*time.Second)
	if err != nil {
		return err
	}
	defer rc.Close()
	url := s.Env.LockstepURL(admission.ValidateInstancePath)
	kinds := []struct {
		name string
		body func(brokerName string) ([]byte, error)
		want loadgen.Expect
	}{
		{name: "dry-run create", want: loadgen.Expect{Allowed: true}, body: func(brokerName string) ([]byte, error) {
			si := instance("bench-catalog", "orders-db", brokerName, targetService, targetPlan, typicalParameters)
			si.Status, si.ResourceVersion = v1alpha1.ServiceInstanceStatus{}, ""
			return review(admissionv1.Create, nil, si, true)
		}},
		{name: "create-only violation", want: loadgen.Expect{Code: http.StatusUnprocessableEntity}, body: func(brokerName string) ([]byte, error) {
			old := instance("bench-catalog", "orders-db", brokerName, targetService, targetPlan, typicalParameters)
			changed := old.DeepCopy()
			changed.Spec.ExternalID = "4f9c0a6e-0000-4000-8000-000000000001"
			return review(admissionv1.Update, old, changed, false)
		}},
	}
	table := report.Table{Header: []string{"request", fmt.Sprintf("%d plans p50", small), fmt.Sprintf("%d plans p99", small),
		fmt.Sprintf("%d plans p50", large), fmt.Sprintf("%d plans p99", large), "p50 ratio (large/small)", "p99 ratio", "broker calls", "unexpected answers"}}
	for _, k := range kinds {
		arms := make([]loadgen.Arm, 2)
		for i, plans := range s.Sizes.CatalogPlans {
			body, err := k.body(catalogBroker(plans))
			if err != nil {
				return err
			}
			arms[i] = loadgen.Arm{Name: fmt.Sprintf("%d plans", plans), Work: loadgen.Work{Do: rc.Reviews(url, func(int) []byte { return body }, k.want)}}
		}
		s.Logf("scale: catalog sizes, %s", k.name)
		before := callsOf(brokers)
		res, err := loadgen.Alternate(ctx, arms, loadgen.Plan{
			Load: loadgen.Load{Concurrency: 1, Requests: n, MaxDuration: s.Sizes.StepTimeout}, Rounds: s.Sizes.Rounds, Warmup: s.Sizes.Warmup,
		})
		if err != nil {
			return fmt.Errorf("catalog size, %s: %w", k.name, err)
		}
		if err := s.verify("catalog size, "+k.name, res...); err != nil {
			return err
		}
		calls := callsOf(brokers) - before
		a, b := loadgen.Summarize(res[0]), loadgen.Summarize(res[1])
		table.Rows = append(table.Rows, []string{k.name, dur(a.P50), dur(a.P99), dur(b.P50), dur(b.P99),
			ratio(b.P50, a.P50), ratio(b.P99, a.P99), fmt.Sprint(calls), problems(res...)})
		r := loadgen.Ratio(b.P50, a.P50)
		sec.Targets = append(sec.Targets, report.Check(fmt.Sprintf("%s: %d vs %d plans", k.name, large, small),
			"no measurable effect (p50 ratio <= 1.10)", fmt.Sprintf("%s p50, %s p99", loadgen.FormatRatio(r), ratio(b.P99, a.P99)),
			r <= 1.10 && calls == 0 && clean(res...)))
	}
	sec.Tables = append(sec.Tables, loads, table)
	return nil
}

func catalogBroker(plans int) string { return fmt.Sprintf("catalog-%d", plans) }

// callsOf counts the catalog fetches aside: every request the brokers got.
func callsOf(brokers []*fakebroker.Broker) int {
	n := 0
	for _, b := range brokers {
		n += b.Count(fakebroker.OpProvision, fakebroker.OpUpdate, fakebroker.OpDeprovision, fakebroker.OpBind, fakebroker.OpUnbind)
	}
	return n
}

// manyInstances stores many instances and measures lockstep's memory and
// the time its reconciler takes to go through all of them after a
// restart, with resync off; then what a resync pass over them costs.
func (s *Suite) manyInstances(ctx context.Context, sec *report.Section) error {
	n, settings := s.Sizes.ScaleInstances, s.Sizes.Resync
	sec.Text = append(sec.Text, fmt.Sprintf("**%d instances.** lockstep is restarted (a fresh process, resync off), then %d ServiceInstances are "+
		"stored as lockstep leaves them after a provision (finalizer, status with conditions, last operation, dashboard URL and "+
		"lastApplied; written directly, in a namespace its instance webhooks skip, which is far cheaper than provisioning each through "+
		"admission), and the instant test broker is given the same instances (same plan and parameters), so that nothing has drifted. "+
		"lockstep's memory is read from /proc (VmRSS; VmHWM is the peak). Then lockstep is restarted and timed: until it serves "+
		"(readyz, TLS), and until its instance reconciler has reconciled every instance and its queue is empty (controller-runtime's "+
		"`controller_runtime_reconcile_total` and `workqueue_depth` metrics).", n, n))
	sec.Text = append(sec.Text, fmt.Sprintf("**Resync of %d instances.** lockstep is restarted once more with resync on (%s): the instances "+
		"are due faster than the limit lets them be fetched, so the pass runs at the per-broker limit. Once the instance reconciler's "+
		"start-up pass is over, the pass is measured from then until the broker has answered a fetch of every instance: fetches counted "+
		"at the broker (every GET of an instance, the whole window and the highest rate over one second), lockstep's CPU time "+
		"(/proc), its requests to kube-apiserver (client-go's `rest_client_requests_total`), kube-apiserver's write requests "+
		"of every resource (`apiserver_request_duration_seconds_count`; the benchmark itself writes nothing meanwhile), and `lockstep_resync_results_total`. Afterwards lockstep is restarted with "+
		"its defaults for the benchmarks that follow.", n, settings))
	b, err := s.acmeBroker(ctx)
	if err != nil {
		return err
	}
	if err := s.Env.StopLockstep(); err != nil {
		return err
	}
	if err := s.Env.StartLockstep(ctx, resyncOff); err != nil {
		return err
	}
	if err := s.waitReconciled(ctx, 0, true); err != nil {
		return err
	}
	idle, err := s.Env.Lockstep.Memory()
	if err != nil {
		return err
	}

	const ns = "bench-scale"
	if err := s.Env.Namespace(ctx, ns, true); err != nil {
		return err
	}
	s.Logf("scale: storing %d instances", n)
	c := s.Env.Client
	ids := make(map[string]bool, n)
	for i := range n {
		si := scaleInstance(ns, i)
		ids[si.Spec.ExternalID] = true
		b.PutInstance(fakebroker.Instance{ID: si.Spec.ExternalID, ServiceID: fakebroker.ServiceDBID, PlanID: fakebroker.PlanSmallID,
			Parameters: map[string]any{"storageGB": 10}})
	}
	stored, err := loadgen.Run(ctx, loadgen.Load{Concurrency: 16, Requests: n, MaxDuration: s.Sizes.StepTimeout}, 0, loadgen.Work{
		Do: func(ctx context.Context, i int) error {
			si := scaleInstance(ns, i)
			held, ok := b.Instance(si.Spec.ExternalID)
			if !ok {
				return fmt.Errorf("the test broker does not hold instance %s", si.Spec.ExternalID)
			}
			status := si.Status
			status.DashboardURL = held.DashboardURL
			status.LastApplied = &v1alpha1.AppliedInstance{PlanName: si.Spec.PlanName, PlanID: held.PlanID, Parameters: si.Spec.Parameters.DeepCopy()}
			si.UID, si.ResourceVersion, si.CreationTimestamp, si.ManagedFields, si.Generation = "", "", metav1.Time{}, nil, 0
			if err := c.Create(ctx, si); err != nil {
				return err
			}
			si.Status = status
			return c.Status().Update(ctx, si)
		},
	})
	if err != nil {
		return err
	}
	if stored.Errors > 0 || stored.TimedOut {
		return fmt.Errorf("storing %d instances: %s", n, problems(stored))
	}
	if err := s.waitReconciled(ctx, n, true); err != nil {
		return err
	}
	running, err := s.Env.Lockstep.Memory()
	if err != nil {
		return err
	}

	s.Logf("scale: restarting lockstep with %d instances", n)
	if err := s.Env.StopLockstep(); err != nil {
		return err
	}
	start := time.Now()
	if err := s.Env.StartLockstep(ctx, resyncOff); err != nil {
		return err
	}
	ready := time.Since(start)
	if err := s.waitReconciled(ctx, n, true); err != nil {
		return err
	}
	reconciled := time.Since(start)
	restarted, err := s.Env.Lockstep.Memory()
	if err != nil {
		return err
	}

	pass, err := s.measureResync(ctx, b, ids, settings)
	if err != nil {
		return err
	}
	s.Logf("scale: restarting lockstep with its defaults")
	if err := s.Env.StopLockstep(); err != nil {
		return err
	}
	if err := s.Env.StartLockstep(ctx); err != nil {
		return err
	}

	sec.Tables = append(sec.Tables, report.Table{
		Caption: fmt.Sprintf("**%d instances** (stored at %s with 16 writers, each a create and a status update)", n, rate(stored.Throughput())),
		Header:  []string{"lockstep process", "RSS", "peak RSS"},
		Rows: [][]string{
			{"fresh, no instances, resync off", mib(idle.RSS), mib(idle.Peak)},
			{fmt.Sprintf("after watching %d instances being stored, resync off", n), mib(running.RSS), mib(running.Peak)},
			{fmt.Sprintf("restarted with %d instances, after its start-up reconcile, resync off", n), mib(restarted.RSS), mib(restarted.Peak)},
			{fmt.Sprintf("restarted with %d instances, resync on, after its start-up reconcile (the pass begins)", n), mib(pass.started.RSS), mib(pass.started.Peak)},
			{fmt.Sprintf("restarted with %d instances, resync on, after one resync pass", n), mib(pass.memory.RSS), mib(pass.memory.Peak)},
		},
	}, report.Table{
		Header: []string{"restart with instances (resync off)", "time"},
		Rows: [][]string{
			{"until it serves admission (readyz and TLS)", dur(ready)},
			{fmt.Sprintf("until every instance was reconciled and the queue is empty (start-up reconcile of %d)", n), dur(reconciled)},
		},
	}, report.Table{
		Caption: fmt.Sprintf("**Resync pass over %d instances** (%s)", n, settings),
		Header:  []string{"what", "measured"},
		Rows: [][]string{
			{"pass (until every instance was fetched once)", dur(pass.window)},
			{"broker fetches (GET of an instance)", fmt.Sprintf("%d, %s over the pass; highest over one second %s", pass.fetches, rate(pass.rate()), rate(pass.peak))},
			{"configured limit", fmt.Sprintf("%s (burst %d): at most %.0f in the pass", rate(settings.QPS), settings.Concurrency,
				settings.QPS*pass.window.Seconds()+float64(settings.Concurrency))},
			{"resync results (lockstep_resync_results_total, ServiceInstance)", counts(pass.results)},
			{"kube-apiserver writes of ServiceInstance status", fmt.Sprintf("%.0f in the pass", pass.statusWrites())},
			{"kube-apiserver write requests of any resource, any client", counts(pass.writes)},
			{"lockstep's requests to kube-apiserver, per fetch", pass.api.perOperation(max(pass.fetches, 1))},
			{"lockstep's CPU time in the pass", pass.cpuUse()},
		},
	})
	sec.Targets = append(sec.Targets,
		report.Check(fmt.Sprintf("resync fetches at %d instances", n), fmt.Sprintf("<= %s + burst %d", rate(settings.QPS), settings.Concurrency),
			fmt.Sprintf("%s over %s (%d fetches)", rate(pass.rate()), dur(pass.window), pass.fetches),
			withinLimit(pass.fetches, pass.window, settings.QPS, settings.Concurrency)),
		report.Check("status writes per resync pass, nothing drifted", "0",
			fmt.Sprintf("%.0f (results: %s)", pass.statusWrites(), counts(pass.results)), pass.statusWrites() == 0))
	// VmHWM is read from counters the kernel sums lazily: take every
	// reading, not only the last.
	peak := max(running.Peak, restarted.Peak, pass.started.Peak, pass.memory.Peak)
	worst := max(peak, running.RSS, restarted.RSS, pass.started.RSS, pass.memory.RSS)
	sec.Targets = append(sec.Targets, report.Check(fmt.Sprintf("memory with %d instances", n), "< 256 MiB RSS",
		fmt.Sprintf("%s RSS after the start-up reconcile, %s after a resync pass, %s peak", mib(restarted.RSS), mib(pass.memory.RSS),
			mib(peak)), worst < memoryTarget))
	return nil
}

// scaleInstance is the scale benchmark's instance i in namespace ns.
func scaleInstance(ns string, i int) *v1alpha1.ServiceInstance {
	return instance(ns, fmt.Sprintf("si-%05d", i), acme, fakebroker.ServiceDB, fakebroker.PlanSmall, `{"storageGB":10}`)
}

// waitReconciled waits until lockstep's instance controller has
// reconciled at least n objects since lockstep started and, when drained
// is set, its queue is empty. With resync on, the controller fetches every
// instance again and again, so its queue need not drain.
func (s *Suite) waitReconciled(ctx context.Context, n int, drained bool) error {
	var total, depth float64
	found := false
	err := env.Poll(ctx, s.Sizes.StepTimeout, 50*time.Millisecond, func(ctx context.Context) (bool, error) {
		m, err := env.ScrapeMetrics(ctx, s.Env.MetricsURL())
		if err != nil {
			return false, nil // not serving metrics yet
		}
		found = false
		for _, sample := range m {
			if sample.Name == "controller_runtime_reconcile_total" && sample.Labels["controller"] == instanceController {
				found = true
			}
		}
		total = m.Sum("controller_runtime_reconcile_total", map[string]string{"controller": instanceController})
		depth = m.Sum("workqueue_depth", map[string]string{"name": instanceController})
		return found && total >= float64(n) && (depth == 0 || !drained), nil
	})
	if err != nil {
		if !found {
			return fmt.Errorf("lockstep's metrics have no reconciler named %q (has it been renamed? see internal/controller/brokered): %w", instanceController, err)
		}
		return fmt.Errorf("lockstep reconciled %.0f of %d instances (queue depth %.0f): %w", total, n, depth, err)
	}
	return nil
}
