package suite

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"
	"time"

	"github.com/google/uuid"
	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/lockstep-dev/lockstep/api/v1alpha1"
	"github.com/lockstep-dev/lockstep/bench/env"
	"github.com/lockstep-dev/lockstep/bench/loadgen"
	"github.com/lockstep-dev/lockstep/bench/report"
	"github.com/lockstep-dev/lockstep/internal/admission"
	"github.com/lockstep-dev/lockstep/internal/broker/fakebroker"
	"github.com/lockstep-dev/lockstep/internal/broker/osbapi"
	"github.com/lockstep-dev/lockstep/internal/broker/osbclient"
	"github.com/lockstep-dev/lockstep/internal/journal"
)

// brokerVerb is one step of an instance's life, through lockstep and
// directly.
type brokerVerb struct {
	name string
	// review is the AdmissionReview for object i (its persisted state).
	review func(si *v1alpha1.ServiceInstance) ([]byte, error)
	// persist is what the API server does once lockstep allowed it.
	persist func(ctx context.Context, c client.Client, si *v1alpha1.ServiceInstance) error
	// direct makes the same call straight to the broker.
	direct func(ctx context.Context, c *osbclient.Client, id string) error
}

// BrokerPath measures provision, update and deprovision through lockstep's
// validating webhook (request class, static checks, the lock, the journal
// and the broker call) against the same calls made directly to the same
// test broker, at fixed broker latencies.
func (s *Suite) BrokerPath(ctx context.Context) (report.Section, error) {
	n, w := s.Sizes.BrokerPath, max(s.Sizes.Warmup/10, 1)
	sec := report.Section{Title: "3. Broker path: lockstep vs direct broker calls", Text: []string{
		fmt.Sprintf("%d instances per arm and broker latency are provisioned, then updated (parameters), then deprovisioned, one request "+
			"at a time, the two arms alternating request by request. lockstep: an AdmissionReview over TLS to the validating webhook of the "+
			"running `cmd/webhook`, which takes the object's lock (the one API server write before the broker call: the lock carries the "+
			"operation's record), calls the broker and answers, against the real kube-apiserver; the BrokerOperation record is written after the answer. Direct: the same OSB call made with lockstep's own OSB client "+
			"(`internal/broker/osbclient`) to the same test broker, which answers after a fixed latency. Floor: what no admission with a write-ahead "+
			"journal can go below; lockstep's own `internal/journal` code takes the object's lock carrying the operation record, the one write "+
			"lockstep's admission makes before the broker call, straight from the benchmark to the same kube-apiserver, then makes the direct call.", n),
		"The benchmark plays the API server's part around each review, untimed: the object exists (with its uid) before the provision " +
			"review, and each allowed update and delete is then persisted. Between steps it waits until lockstep's reconciler committed every " +
			"operation, released every lock and wrote every object's status (or let a deleted one go), so that each request measures one " +
			"uncontended operation and each step counts its own writes.",
	}}
	b, err := s.acmeBroker(ctx)
	if err != nil {
		return sec, err
	}
	defer b.SetLatency(0)
	const ns = "bench-broker"
	if err := s.Env.Namespace(ctx, ns, true); err != nil {
		return sec, err
	}
	defer s.cleanOperations(ns)
	direct, err := osbclient.New(b.Config())
	if err != nil {
		return sec, fmt.Errorf("creating the direct OSB client: %w", err)
	}
	defer direct.Close()
	rc, err := loadgen.NewReviewClient(s.Env.CA, 35*time.Second)
	if err != nil {
		return sec, err
	}
	defer rc.Close()
	url := s.Env.LockstepURL(admission.ValidateInstancePath)

	costs := report.Table{
		Caption: "**Where lockstep's time goes**, per operation, from the metrics of lockstep (controller-runtime's webhook histograms: " +
			"handler time without TLS and HTTP; client-go's request counter) and of kube-apiserver (its server time per request, and how " +
			"long it waited for lockstep's status guard); admission and the reconciler's commit together. kube-apiserver counts the floor " +
			"arm's writes with lockstep's (a Lease and a BrokerOperation created and deleted per request), which is why those show twice:",
		Header: []string{"broker latency", "call", "validating handler, mean", "lockstep CPU per operation, beyond idle", "lockstep's requests to kube-apiserver, per operation beyond idle",
			"kube-apiserver's writes of lockstep's resources (server time, mean)", "status-guard calls (kube-apiserver's wait, mean)"},
	}
	var evidence brokerEvidence
	floor := &writeAhead{client: s.Env.Client, namespace: "bench-floor"}
	if err := s.Env.Namespace(ctx, floor.namespace, true); err != nil {
		return sec, err
	}
	s.Logf("broker path: lockstep idle for %s", s.Sizes.IdleWindow)
	background := s.measureIdle(ctx, s.Sizes.IdleWindow)
	for _, latency := range s.Sizes.BrokerLatencies {
		b.SetLatency(latency)
		table := report.Table{
			Caption: fmt.Sprintf("**broker latency %s**", latency),
			Header: []string{"call", "lockstep p50", "lockstep p99", "direct p50", "direct p99", "lockstep's own time (p50 difference)",
				"p50 ratio", "p99 ratio", "floor p50", "floor's own time (the lock, carrying the record)", "lockstep beyond the floor", "unexpected answers"},
		}
		objects, err := s.brokerPathObjects(ctx, ns, latency, w+n)
		if err != nil {
			return sec, err
		}
		for _, v := range brokerVerbs() {
			s.Logf("broker path: %s at broker latency %s", v.name, latency)
			bodies, err := reviews(len(objects), func(i int) ([]byte, error) { return v.review(objects[i]) })
			if err != nil {
				return sec, err
			}
			arms := []loadgen.Arm{
				{Name: "lockstep", Work: loadgen.Work{
					Do: rc.Reviews(url, func(i int) []byte { return bodies[i] }, loadgen.Expect{Allowed: true}),
					After: func(ctx context.Context, i int) error {
						return v.persist(ctx, s.Env.Client, objects[i])
					},
				}},
				{Name: "direct", Work: loadgen.Work{Do: func(ctx context.Context, i int) error {
					return v.direct(ctx, direct, fmt.Sprintf("direct-%d-%d", latency.Milliseconds(), i))
				}}},
				floor.arm(func(ctx context.Context, i int) error {
					return v.direct(ctx, direct, fmt.Sprintf("floor-%d-%d", latency.Milliseconds(), i))
				}),
			}
			before := s.scrape(ctx)
			cpu0, err := s.Env.Lockstep.CPU()
			if err != nil {
				return sec, err
			}
			start := time.Now()
			res, err := loadgen.Alternate(ctx, arms, loadgen.Plan{
				Load: loadgen.Load{Concurrency: 1, Requests: n, MaxDuration: s.Sizes.StepTimeout}, Rounds: n, Warmup: w,
			})
			if err != nil {
				return sec, fmt.Errorf("broker path, %s: %w", v.name, err)
			}
			if err := s.verify("broker path, "+v.name, res...); err != nil {
				return sec, err
			}
			if err := s.Env.Settle(ctx, ns, s.Sizes.StepTimeout); err != nil {
				return sec, err
			}
			if objects, err = s.reload(ctx, objects); err != nil {
				return sec, err
			}
			cpu1, err := s.Env.Lockstep.CPU()
			if err != nil {
				return sec, err
			}
			elapsed := time.Since(start)
			after := s.scrape(ctx)
			if before != nil && after != nil {
				c, ops := costBetween(before, after), w+n
				api, cpu := background.beyond(c.api, cpu1-cpu0, elapsed)
				cpu /= time.Duration(ops)
				evidence.add(c, cpu)
				costs.Rows = append(costs.Rows, []string{latency.String(), v.name, dur(c.validate.mean()),
					fmt.Sprintf("%s (%s in all)", dur(cpu), dur((cpu1-cpu0)/time.Duration(ops))),
					fmt.Sprintf("%s (in all: %s)", api.perOperation(ops), c.api.perOperation(ops)),
					c.writesPerOperation(ops), fmt.Sprintf("%.1f × %s (lockstep's handler: %s)", c.guardCalls.count/float64(ops), dur(c.guardCalls.mean()), dur(c.guard.mean()))})
				if latency == 0 {
					sec.Targets = append(sec.Targets, operationCostTargets(fmt.Sprintf("%s at 0s broker latency", v.name), api, cpu, ops)...)
				}
			}
			l, d, f := loadgen.Summarize(res[0]), loadgen.Summarize(res[1]), loadgen.Summarize(res[2])
			own := l.P50 - d.P50
			evidence.own = append(evidence.own, own)
			evidence.floor = append(evidence.floor, f.P50-d.P50)
			table.Rows = append(table.Rows, []string{v.name, dur(l.P50), dur(l.P99), dur(d.P50), dur(d.P99), dur(own),
				ratio(l.P50, d.P50), ratio(l.P99, d.P99), dur(f.P50), dur(f.P50 - d.P50), dur(l.P50 - f.P50), problems(res...)})
			what := fmt.Sprintf("%s at %s broker latency", v.name, latency)
			sec.Targets = append(sec.Targets, report.Check(what+": lockstep's own time", "<= 5 ms p50 over the direct call",
				dur(own), own <= 5*time.Millisecond && clean(res...)))
			if latency >= 50*time.Millisecond {
				r50, r99 := loadgen.Ratio(l.P50, d.P50), loadgen.Ratio(l.P99, d.P99)
				sec.Targets = append(sec.Targets, report.Check(what+": ratio", "<= 1.1 (p50)",
					fmt.Sprintf("%s p50, %s p99", loadgen.FormatRatio(r50), loadgen.FormatRatio(r99)), !math.IsNaN(r50) && r50 <= 1.1))
				sec.Targets = append(sec.Targets, admissionWritesTarget(what, before, after))
			}
		}
		sec.Tables = append(sec.Tables, table)
	}
	sec.Tables = append(sec.Tables, costs)
	sec.Notes = append(sec.Notes,
		"lockstep's own time is the difference of the medians: what an admission adds to the broker call it makes (TLS hop, decoding, "+
			"checks, lock and journal writes to kube-apiserver, the answer).")
	sec.Notes = append(sec.Notes, "An operation's cost (lockstep's CPU and its requests to kube-apiserver) is what lockstep did during the step "+
		"beyond what it does idling for as long, measured in the same run before the first step, with nothing sent to it (its leader "+
		"election renewing its Lease, its timers, the benchmark's scrapes of its metrics): "+background.String()+". The figures in all are beside them.")
	if note := evidence.note(); note != "" {
		sec.Notes = append(sec.Notes, note)
	}
	return sec, nil
}

// brokerEvidence gathers, over the steps of the broker-path benchmark,
// the figures that say where lockstep's own time goes.
type brokerEvidence struct {
	own, floor, cpu, writes, guard []time.Duration
}

func (e *brokerEvidence) add(c cost, cpu time.Duration) {
	e.cpu = append(e.cpu, cpu)
	for _, h := range c.writes {
		e.writes = append(e.writes, h.mean())
	}
	if c.guardCalls.count > 0 {
		e.guard = append(e.guard, c.guardCalls.mean())
	}
}

// note reads the evidence: how much of lockstep's own time is CPU, and
// what one kube-apiserver write costs on this machine.
func (e *brokerEvidence) note() string {
	if len(e.own) == 0 || len(e.cpu) == 0 || len(e.writes) == 0 {
		return ""
	}
	lo, hi := minMax(e.own)
	_, cpu := minMax(e.cpu)
	wlo, whi := minMax(e.writes)
	note := fmt.Sprintf("Reading the figures: lockstep's own time was %s to %s per call. Even counting everything its process did per "+
		"operation (the admission, the status-guard calls its writes caused, the commit after the answer, the watch events), beyond idling, its CPU was at "+
		"most %s: the admission mostly waits, for kube-apiserver. On this machine one write of lockstep's resources took %s to %s of "+
		"kube-apiserver's time (mean per kind of write)", dur(lo), dur(hi), dur(cpu), dur(wlo), dur(whi))
	if len(e.guard) > 0 {
		glo, ghi := minMax(e.guard)
		note += fmt.Sprintf(", a status write %s to %s more waiting for lockstep's own status guard", dur(glo), dur(ghi))
	}
	note += "."
	if len(e.floor) > 0 {
		flo, fhi := minMax(e.floor)
		note += fmt.Sprintf(" The floor, the lock and record writes alone (at the same time, as lockstep makes them), added %s to %s "+
			"to the direct call: that much of lockstep's own time is the write-ahead journal the design requires before every broker call, "+
			"and no admission that writes one can add less on this machine.", dur(flo), dur(fhi))
	}
	return note
}

func minMax(ds []time.Duration) (time.Duration, time.Duration) {
	lo, hi := ds[0], ds[0]
	for _, d := range ds[1:] {
		lo, hi = min(lo, d), max(hi, d)
	}
	return lo, hi
}

// brokerPathObjects creates count ServiceInstances as the API server holds
// them when the validating webhook sees their CREATE: defaulted, with the
// finalizer and a uid, no status yet.
func (s *Suite) brokerPathObjects(ctx context.Context, ns string, latency time.Duration, count int) ([]*v1alpha1.ServiceInstance, error) {
	return s.pendingInstances(ctx, ns, fmt.Sprintf("bp-%dms", latency.Milliseconds()), count)
}

// pendingInstances creates count ServiceInstances named prefix-0, ... as
// the API server holds them when the validating webhook sees their
// CREATE.
func (s *Suite) pendingInstances(ctx context.Context, ns, prefix string, count int) ([]*v1alpha1.ServiceInstance, error) {
	out := make([]*v1alpha1.ServiceInstance, count)
	for i := range out {
		si := &v1alpha1.ServiceInstance{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("%s-%d", prefix, i),
				Labels: map[string]string{"app.kubernetes.io/name": "orders"}, Finalizers: []string{v1alpha1.Finalizer}},
			Spec: v1alpha1.ServiceInstanceSpec{BrokerName: acme, ServiceName: fakebroker.ServiceDB, PlanName: fakebroker.PlanSmall,
				ExternalID: uuid.NewString(), Parameters: &runtime.RawExtension{Raw: []byte(`{"storageGB":10}`)}},
		}
		if err := s.Env.Client.Create(ctx, si); err != nil {
			return nil, fmt.Errorf("creating instance %s: %w", si.Name, err)
		}
		si.TypeMeta = metav1.TypeMeta{APIVersion: v1alpha1.GroupVersion.String(), Kind: "ServiceInstance"}
		out[i] = si
	}
	return out, nil
}

// reload waits until lockstep's reconciler is done with every object
// (its status says the generation the broker confirmed, or it is gone),
// so that no write of one step is counted in the next, and reads the
// objects back as the API server now holds them.
func (s *Suite) reload(ctx context.Context, objects []*v1alpha1.ServiceInstance) ([]*v1alpha1.ServiceInstance, error) {
	for i, si := range objects {
		fresh := &v1alpha1.ServiceInstance{}
		gone := false
		err := env.Poll(ctx, s.Sizes.StepTimeout, 10*time.Millisecond, func(ctx context.Context) (bool, error) {
			err := s.Env.Client.Get(ctx, client.ObjectKeyFromObject(si), fresh)
			if client.IgnoreNotFound(err) == nil && err != nil {
				gone = true // deleted: the last step is done
				return true, nil
			}
			return err == nil && fresh.Status.ObservedGeneration == fresh.Generation, err
		})
		if err != nil {
			return nil, fmt.Errorf("waiting for lockstep's status of instance %s: %w", si.Name, err)
		}
		if !gone {
			fresh.TypeMeta = si.TypeMeta
			objects[i] = fresh
		}
	}
	return objects, nil
}

func brokerVerbs() []brokerVerb {
	meta := func() osbclient.RequestMeta {
		return osbclient.RequestMeta{
			Identity:  osbclient.Identity{Username: requester.Username, UID: requester.UID, Groups: requester.Groups},
			RequestID: uuid.NewString(),
		}
	}
	return []brokerVerb{
		{
			name:    "provision",
			review:  func(si *v1alpha1.ServiceInstance) ([]byte, error) { return review(admissionv1.Create, nil, si, false) },
			persist: func(context.Context, client.Client, *v1alpha1.ServiceInstance) error { return nil },
			direct: func(ctx context.Context, c *osbclient.Client, id string) error {
				_, err := c.Provision(ctx, meta(), osbclient.ProvisionRequest{
					InstanceID: id, ServiceID: fakebroker.ServiceDBID, PlanID: fakebroker.PlanSmallID,
					Context:    osbapi.Context{Platform: osbapi.KubernetesPlatform, Namespace: "bench-broker", InstanceName: id},
					Parameters: []byte(`{"storageGB":10}`),
				})
				return err
			},
		},
		{
			name: "update (parameters)",
			review: func(si *v1alpha1.ServiceInstance) ([]byte, error) {
				return review(admissionv1.Update, si, updated(si), false)
			},
			persist: func(ctx context.Context, c client.Client, si *v1alpha1.ServiceInstance) error {
				return c.Patch(ctx, si.DeepCopy(), client.RawPatch(types.MergePatchType, []byte(`{"spec":{"parameters":{"storageGB":20}}}`)))
			},
			direct: func(ctx context.Context, c *osbclient.Client, id string) error {
				_, err := c.Update(ctx, meta(), osbclient.UpdateRequest{
					InstanceID: id, ServiceID: fakebroker.ServiceDBID, Parameters: []byte(`{"storageGB":20}`),
					PreviousValues: &osbapi.PreviousValues{ServiceID: fakebroker.ServiceDBID, PlanID: fakebroker.PlanSmallID},
				})
				return err
			},
		},
		{
			name:   "deprovision",
			review: func(si *v1alpha1.ServiceInstance) ([]byte, error) { return review(admissionv1.Delete, si, nil, false) },
			persist: func(ctx context.Context, c client.Client, si *v1alpha1.ServiceInstance) error {
				return client.IgnoreNotFound(c.Delete(ctx, si.DeepCopy()))
			},
			direct: func(ctx context.Context, c *osbclient.Client, id string) error {
				_, err := c.Deprovision(ctx, meta(), osbclient.DeprovisionRequest{InstanceID: id, ServiceID: fakebroker.ServiceDBID, PlanID: fakebroker.PlanSmallID})
				return err
			},
		},
	}
}

// updated is si with new parameters, as an update would leave it.
func updated(si *v1alpha1.ServiceInstance) *v1alpha1.ServiceInstance {
	to := si.DeepCopy()
	to.Spec.Parameters = &runtime.RawExtension{Raw: []byte(`{"storageGB":20}`)}
	to.Generation++
	return to
}

// writeAhead is the floor arm of the broker-path benchmark: the one API
// server write that lockstep's admission makes before every broker call
// (the object's lock, carrying the operation's record), written by
// lockstep's own journal code, followed by the direct broker call. Each
// request cleans up after itself, untimed.
type writeAhead struct {
	client    client.Client
	namespace string
}

func (f *writeAhead) arm(call func(ctx context.Context, i int) error) loadgen.Arm {
	leases := &journal.Leases{Client: f.client, Duration: time.Minute}
	j := &journal.Journal{Client: f.client}
	type written struct {
		key    journal.Key
		record string
	}
	var (
		mu   sync.Mutex
		done = map[int]written{}
	)
	cleanup := func(ctx context.Context, i int) error {
		mu.Lock()
		w := done[i]
		delete(done, i)
		mu.Unlock()
		if w.record == "" {
			return nil
		}
		return leases.Release(ctx, w.key, w.record)
	}
	return loadgen.Arm{Name: "floor", Work: loadgen.Work{
		Do: func(ctx context.Context, i int) error {
			target := &v1alpha1.ServiceInstance{ObjectMeta: metav1.ObjectMeta{Namespace: f.namespace, Name: fmt.Sprintf("floor-%d", i),
				UID: types.UID(uuid.NewString()), Generation: 1}}
			in := journal.Intent{ID: uuid.NewString(), Target: target, Kind: v1alpha1.KindServiceInstance, ExternalID: uuid.NewString(), Broker: acme,
				Verb: v1alpha1.VerbUpdate, User: requester, SpecHash: journal.SpecHash(target.Spec),
				ServiceID: fakebroker.ServiceDBID, PlanID: fakebroker.PlanSmallID}
			key := journal.Key{Kind: in.Kind, Namespace: f.namespace, Name: target.Name, ExternalID: in.ExternalID}
			draft := j.Draft(in)
			op := &journal.Operation{ID: in.ID, Verb: in.Verb, User: requester.Username, Started: time.Now(),
				Record: draft.Name, Carried: draft}
			_, ok, err := leases.TryAcquire(ctx, key, op)
			if err == nil && !ok {
				err = fmt.Errorf("floor: lock of %s held", key)
			}
			mu.Lock()
			done[i] = written{key: key, record: draft.Name}
			mu.Unlock()
			if err != nil {
				return errors.Join(err, cleanup(ctx, i))
			}
			return call(ctx, i)
		},
		After: cleanup,
	}}
}

// admissionWritesTarget reads from lockstep's metrics how many API server
// writes its admissions waited for per broker operation between two
// scrapes: the synchronous requests on the admission path. A lockstep
// built before the metric existed leaves it not measured.
func admissionWritesTarget(what string, before, after *scrapes) report.Target {
	const metric = "lockstep_admission_apiserver_writes_per_operation"
	t := report.Target{What: what + ": API server writes on the admission path, per operation", Want: "1", Status: report.NotMeasured,
		Got: "not measured: this lockstep does not count them"}
	if before == nil || after == nil || !after.lockstep.Has(metric+"_count") {
		return t
	}
	ops := after.lockstep.Sum(metric+"_count", nil) - before.lockstep.Sum(metric+"_count", nil)
	writes := after.lockstep.Sum(metric+"_sum", nil) - before.lockstep.Sum(metric+"_sum", nil)
	if ops <= 0 {
		t.Got = "not measured: no broker operation counted"
		return t
	}
	perOp := writes / ops
	return report.Check(t.What, t.Want, fmt.Sprintf("%.2f (%.0f writes, %.0f operations)", perOp, writes, ops), perOp <= 1)
}

// The cost of one broker operation to the platform, at a broker that
// answers at once: lockstep's requests to kube-apiserver (admission, the
// record, the commit, the status, events, reads), and lockstep's CPU.
const (
	maxRequestsPerOperation = 5
	maxCPUPerOperation      = 3 * time.Millisecond
	// idleResolution is how many requests a step's count beyond idle may
	// be off by: one renewal of the leader's Lease, estimated from the
	// idle rate rather than counted.
	idleResolution = 1.0
)

// operationCostTargets checks what one operation cost, all of lockstep's
// work for it counted (the admission and everything after it), beyond
// what lockstep does idling in the same time.
func operationCostTargets(what string, api apiRequests, cpu time.Duration, ops int) []report.Target {
	requests := api.total() / float64(ops)
	// What idling would have sent is estimated from a rate (Lease renewals
	// on their own timers), so a step's count beyond idle is known to about
	// one request: the target holds within one request over
	// the whole step, not one per operation.
	within := api.total() <= float64(maxRequestsPerOperation*ops)+idleResolution
	return []report.Target{
		report.Check(what+": lockstep's requests to kube-apiserver, per operation", fmt.Sprintf("<= %d (to within %.0f request over the step's %d)", maxRequestsPerOperation, idleResolution, ops),
			fmt.Sprintf("%.2f (%s)", requests, api.perOperation(ops)), within),
		report.Check(what+": lockstep's CPU, per operation", "<= "+dur(maxCPUPerOperation), dur(cpu), cpu <= maxCPUPerOperation),
	}
}
