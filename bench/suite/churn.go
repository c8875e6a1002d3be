package suite

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/lockstep-dev/lockstep/api/v1alpha1"
	"github.com/lockstep-dev/lockstep/bench/env"
	"github.com/lockstep-dev/lockstep/bench/loadgen"
	"github.com/lockstep-dev/lockstep/bench/report"
)

// churnNamespace holds the objects of the journal benchmark.
const churnNamespace = "bench-churn"

// Journal measures how many BrokerOperations the journal holds while
// ServiceInstances are created and deleted over and over: every cycle
// writes a provision and a deprovision record, and lockstep prunes the
// final records of objects that are gone once they are older than the
// retention, so the count stays bounded by what the retention covers.
func (s *Suite) Journal(ctx context.Context) (report.Section, error) {
	n, retention := s.Sizes.ChurnCycles, s.Sizes.ChurnRetention
	sec := report.Section{Title: "7. Journal under churn: BrokerOperations stay bounded", Text: []string{
		fmt.Sprintf("lockstep is restarted with `LOCKSTEP_OPERATION_RETENTION=%s`; then %d ServiceInstances are each created (a provision "+
			"at the instant test broker) and deleted (a deprovision), %d cycles at a time, through the real kube-apiserver. Every cycle "+
			"leaves two final BrokerOperations of an object that no longer exists; lockstep removes them once they are older than the "+
			"retention. The count of BrokerOperations in the benchmark's namespace is sampled every second during the cycles and until the "+
			"retention has passed after the last one.", retention, n, churnConcurrency),
	}}
	if _, err := s.acmeBroker(ctx); err != nil {
		return sec, err
	}
	settings := []string{"LOCKSTEP_OPERATION_RETENTION=" + retention.String()}
	s.Logf("journal: restarting lockstep with %s", settings[0])
	if err := s.Env.StopLockstep(); err != nil {
		return sec, err
	}
	if err := s.Env.StartLockstep(ctx, settings...); err != nil {
		return sec, err
	}
	defer s.restartLockstep(ctx)
	if err := s.Env.Namespace(ctx, churnNamespace, false); err != nil {
		return sec, err
	}
	before := s.scrape(ctx)

	sampler := newJournalSampler(s.Env.Client)
	stopSampling := sampler.run(ctx, time.Second)
	start := time.Now()
	var conflicts atomic.Int64
	res, err := loadgen.Run(ctx, loadgen.Load{Concurrency: churnConcurrency, Requests: n, MaxDuration: s.Sizes.ChurnTimeout}, 0, loadgen.Work{
		Do: func(ctx context.Context, i int) error {
			retries, err := churnCycle(ctx, s.Env.Client, i)
			conflicts.Add(int64(retries))
			return err
		},
	})
	cycled := time.Since(start)
	if err != nil {
		stopSampling()
		return sec, err
	}
	atEnd, err := sampler.count(ctx)
	if err != nil {
		stopSampling()
		return sec, err
	}
	s.Logf("journal: %d cycles in %s; %d BrokerOperations; waiting out the retention", res.Completed(), cycled.Round(time.Second), atEnd)
	// After the retention every record of the cycles is due; the last
	// ones go within one reconcile of their due time.
	var final int
	err = env.Poll(ctx, retention+s.Sizes.StepTimeout, time.Second, func(ctx context.Context) (bool, error) {
		final, err = sampler.count(ctx)
		return err == nil && time.Since(start) > cycled+retention && final == 0, err
	})
	stopSampling()
	if err != nil {
		return sec, fmt.Errorf("the BrokerOperations of %d deleted instances were not all removed %s after the last cycle (%d left): %w",
			n, retention+s.Sizes.StepTimeout, final, err)
	}
	after := s.scrape(ctx)
	if err := s.verify("journal", res); err != nil {
		return sec, err
	}

	perSecond := float64(res.Completed()) / cycled.Seconds()
	// A record is pruned once it is older than the retention, within a
	// reconcile of that moment: the ideal level is two records per cycle
	// of the last retention; the bound allows half as much again for
	// pruning that lags behind while the cycles keep the reconciler busy.
	level := 2 * perSecond * retention.Seconds()
	bound := int(1.5*level) + 2*churnConcurrency
	peak := sampler.peak()
	var quarters []string
	for q := 1; q <= 4; q++ {
		quarters = append(quarters, fmt.Sprint(sampler.at(start.Add(cycled*time.Duration(q)/4))))
	}
	pruned := "n/a"
	if before != nil && after != nil {
		const metric = "lockstep_operation_records_pruned_total"
		sel := map[string]string{"reason": "expired"}
		pruned = fmt.Sprintf("%.0f", after.lockstep.Sum(metric, sel)-before.lockstep.Sum(metric, sel))
	}
	sec.Tables = append(sec.Tables, report.Table{
		Header: []string{"cycles", "took", "cycles/s", "records written", "BrokerOperations at 1/4, 1/2, 3/4 and the end of the cycles",
			"peak", "ideal level (2 × cycles/s × retention)", "bound (1.5 × level + in flight)", "after the retention", "pruned (expired)", "delete retried on a lock", "unexpected answers"},
		Rows: [][]string{{
			fmt.Sprint(res.Completed()), cycled.Round(time.Second).String(), fmt.Sprintf("%.1f", perSecond), fmt.Sprint(2 * res.Completed()),
			strings.Join(quarters, ", "), fmt.Sprint(peak), fmt.Sprintf("%.0f", level), fmt.Sprint(bound), fmt.Sprint(final), pruned,
			fmt.Sprint(conflicts.Load()), problems(res),
		}},
	})
	sec.Targets = append(sec.Targets, report.Check(fmt.Sprintf("BrokerOperations over %d create/delete cycles", n),
		fmt.Sprintf("bounded by the retention (%s): peak <= %d, none left after it", retention, bound),
		fmt.Sprintf("peak %d, %d after the retention (%d written)", peak, final, 2*res.Completed()), peak <= bound && final == 0))
	sec.Notes = append(sec.Notes,
		"Without pruning the journal would hold every record written: two per cycle, for ever; with it the count levels off once "+
			"the first records reach the retention.",
		"A delete sent while the provision's operation still holds the object's lock is refused with a conflict and sent again; "+
			"the column counts those retries.")
	return sec, nil
}

// churnConcurrency is how many create/delete cycles run at once.
const churnConcurrency = 8

// churnCycle creates ServiceInstance i and deletes it, sending the delete
// again while the provision still holds the object's lock. It returns how
// many times the delete was sent again.
func churnCycle(ctx context.Context, c client.Client, i int) (int, error) {
	name := fmt.Sprintf("churn-%d", i)
	if err := c.Create(ctx, e2eObject(env.LockstepInstance, churnNamespace, name)); err != nil {
		return 0, fmt.Errorf("creating %s: %w", name, err)
	}
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(env.LockstepInstance)
	u.SetNamespace(churnNamespace)
	u.SetName(name)
	retries := 0
	backoff := wait.Backoff{Duration: 20 * time.Millisecond, Factor: 1.5, Steps: 20, Cap: time.Second}
	err := wait.ExponentialBackoffWithContext(ctx, backoff, func(ctx context.Context) (bool, error) {
		err := c.Delete(ctx, u)
		switch {
		case err == nil || apierrors.IsNotFound(err):
			return true, nil
		case apierrors.IsConflict(err):
			retries++
			return false, nil
		default:
			return false, err
		}
	})
	if err != nil {
		return retries, fmt.Errorf("deleting %s: %w", name, err)
	}
	return retries, nil
}

// restartLockstep starts lockstep again with the default settings.
func (s *Suite) restartLockstep(ctx context.Context) {
	if err := s.Env.StopLockstep(); err != nil {
		s.Logf("restarting lockstep: %v", err)
	}
	if err := s.Env.StartLockstep(ctx); err != nil {
		s.Logf("restarting lockstep: %v", err)
	}
}

// journalSampler counts the BrokerOperations of the benchmark's objects and
// keeps every count it took.
type journalSampler struct {
	c       client.Client
	mu      sync.Mutex
	samples []journalSample
}

// journalSample is one count and when it was taken.
type journalSample struct {
	at    time.Time
	count int
}

func newJournalSampler(c client.Client) *journalSampler { return &journalSampler{c: c} }

// count lists the BrokerOperations of the benchmark's namespace (metadata
// only): the records of its objects live next to them.
func (j *journalSampler) count(ctx context.Context) (int, error) {
	var list metav1.PartialObjectMetadataList
	list.SetGroupVersionKind(v1alpha1.GroupVersion.WithKind("BrokerOperationList"))
	if err := j.c.List(ctx, &list, client.InNamespace(churnNamespace)); err != nil {
		return 0, fmt.Errorf("counting BrokerOperations: %w", err)
	}
	n := len(list.Items)
	j.mu.Lock()
	j.samples = append(j.samples, journalSample{at: time.Now(), count: n})
	j.mu.Unlock()
	return n, nil
}

// at is the last count taken at or before t (0 when none was).
func (j *journalSampler) at(t time.Time) int {
	j.mu.Lock()
	defer j.mu.Unlock()
	n := 0
	for _, s := range j.samples {
		if s.at.After(t) {
			break
		}
		n = s.count
	}
	return n
}

// peak is the highest count taken.
func (j *journalSampler) peak() int {
	j.mu.Lock()
	defer j.mu.Unlock()
	n := 0
	for _, s := range j.samples {
		n = max(n, s.count)
	}
	return n
}

// run samples every interval until the function it returns is called.
func (j *journalSampler) run(ctx context.Context, interval time.Duration) (stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		wait.UntilWithContext(ctx, func(ctx context.Context) { _, _ = j.count(ctx) }, interval)
	}()
	return func() { cancel(); <-done }
}
