package suite

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/lockstep-dev/lockstep/bench/env"
	"github.com/lockstep-dev/lockstep/bench/loadgen"
	"github.com/lockstep-dev/lockstep/bench/report"
	"github.com/lockstep-dev/lockstep/internal/broker/fakebroker"
)

// e2eArm is one way of holding ServiceInstances in the API server.
type e2eArm struct {
	name string
	gvk  schema.GroupVersionKind
	// ns is the namespace of the arm's objects.
	ns string
	// rejectsCreateOnly is true when a change of a create-only field is
	// refused (by lockstep's webhook, or by the CEL rule).
	rejectsCreateOnly bool
	// floor is true for the arm that writes, before each change that
	// lockstep carries out at the broker, what lockstep's admission must
	// write first: the object's lock carrying the operation's record.
	floor bool
}

// The namespaces of the end-to-end benchmark: one for the three ways of
// holding objects (their objects have the same names in different
// groups), one for the floor's plain objects.
const (
	e2eNamespace      = "bench-e2e"
	e2eFloorNamespace = "bench-e2e-floor"
)

var e2eArms = []e2eArm{
	{name: "lockstep webhooks", gvk: env.LockstepInstance, ns: e2eNamespace, rejectsCreateOnly: true},
	{name: "same CRD, no webhooks", gvk: env.PlainInstance, ns: e2eNamespace},
	{name: "same CRD, CEL rule", gvk: env.CELInstance, ns: e2eNamespace, rejectsCreateOnly: true},
	{name: "write-ahead floor: lock with record, then no webhooks", gvk: env.PlainInstance, ns: e2eFloorNamespace, floor: true},
}

// floorArm is the index of the floor in e2eArms; it takes part only in the
// changes lockstep carries out at the broker.
const floorArm = 3

// e2eChange is one kind of request of the end-to-end benchmark.
type e2eChange struct {
	name string
	// do makes the change to object i of arm a.
	do func(ctx context.Context, c client.Client, a e2eArm, i int) error
	// settle waits for lockstep's reconciler afterwards (it holds locks).
	settle bool
	// target is what lockstep may cost, p50 and p99, as a ratio against
	// the arm named baseline (an index of e2eArms).
	target   float64
	baseline int
	// floorTarget, when set, is what lockstep may cost, p50 and p99, as a
	// ratio against the write-ahead floor (a change with settle has one).
	floorTarget float64
}

// The baselines of the end-to-end targets.
const (
	noWebhooks = 1
	celRule    = 2
)

// EndToEnd measures changes through the real kube-apiserver: with
// lockstep's webhooks installed, against the same CRD without webhooks and
// with the create-only rule written as a CEL transition rule.
func (s *Suite) EndToEnd(ctx context.Context) (report.Section, error) {
	n := s.Sizes.EndToEnd
	sec := report.Section{Title: "2. End to end through kube-apiserver", Text: []string{
		fmt.Sprintf("%d objects per arm, then %d of each change, sent one at a time through the real kube-apiserver with client-go "+
			"(no client-side rate limit), the three arms alternating request by request in rotating order. Arms: lockstep's "+
			"ServiceInstance with its CRD (and the CEL rules generated from its field policies), its webhook configurations "+
			"(and their matchConditions) and lockstep running under its deployment's service account; a copy of the same CRD in another "+
			"group that no webhook matches; and a copy whose create-only fields (brokerName, serviceName, externalID) carry the CEL "+
			"transition rule `self == oldSelf` instead of a webhook. Every arm sends the same unstructured objects and merge patches. "+
			"For the changes lockstep carries out at the broker, a fourth arm measures the floor of any admission that keeps a write-ahead "+
			"record: before the same write as the no-webhook arm (its objects in another namespace), it takes the object's lock carrying "+
			"the operation's record with lockstep's own journal code, the one API server write lockstep's admission makes before the "+
			"broker call (released after the request, untimed).", n, n),
		"With lockstep, a create is a provision and a spec update an update at the (instant) test broker, each through the lock and the " +
			"journal; the plain and CEL arms only write the object. After the creates and the spec updates the benchmark waits until " +
			"lockstep has committed every operation and released every lock, then copies the status lockstep wrote into each object of " +
			"the other arms (untimed), so that every arm changes objects of the same size.",
	}}
	if _, err := s.acmeBroker(ctx); err != nil {
		return sec, err
	}
	const ns = e2eNamespace
	for _, name := range []string{ns, e2eFloorNamespace} {
		if err := s.Env.Namespace(ctx, name, false); err != nil {
			return sec, err
		}
	}
	c := s.Env.Client
	defer s.cleanE2E(n)
	floor := &writeAhead{client: c, namespace: e2eFloorNamespace}

	if err := s.warmE2E(ctx); err != nil {
		return sec, err
	}
	changes := []e2eChange{
		{name: "create (lockstep: provision)", settle: true, target: 2.0, baseline: noWebhooks, floorTarget: 1.3, do: func(ctx context.Context, c client.Client, a e2eArm, i int) error {
			return c.Create(ctx, e2eObject(a.gvk, a.ns, e2eName(i)))
		}},
		{name: "metadata-only update (label)", target: 1.1, baseline: noWebhooks, do: func(ctx context.Context, c client.Client, a e2eArm, i int) error {
			return patch(ctx, c, a.gvk, a.ns, e2eName(i), fmt.Sprintf(`{"metadata":{"labels":{"bench":"%d"}}}`, i))
		}},
		{name: "spec update (lockstep: broker update)", settle: true, target: 2.0, baseline: noWebhooks, floorTarget: 1.2, do: func(ctx context.Context, c client.Client, a e2eArm, i int) error {
			return patch(ctx, c, a.gvk, a.ns, e2eName(i), fmt.Sprintf(`{"spec":{"parameters":{"storageGB":%d}}}`, 20+i%100))
		}},
		{name: "create-only change (lockstep and CEL: rejected)", target: 1.1, baseline: celRule, do: func(ctx context.Context, c client.Client, a e2eArm, i int) error {
			err := patch(ctx, c, a.gvk, a.ns, e2eName(i), createOnlyPatch())
			if a.rejectsCreateOnly {
				return refusedInvalid(err)
			}
			return err
		}},
	}
	var floorNotes []string
	calls := report.Table{
		Caption: "**Which of lockstep's webhooks kube-apiserver called**, per request of the lockstep arm, and how long it waited " +
			"for each call, mean (from kube-apiserver's `apiserver_admission_webhook_admission_duration_seconds`; the other arms match " +
			"no webhook); beside it, lockstep's handler time per call, mean, without TLS and HTTP (controller-runtime's " +
			"`controller_runtime_webhook_latency_seconds`), for a create or a spec update with the lock and the broker call:",
		Header: []string{"change", "webhook calls per request × kube-apiserver's wait", "lockstep's handlers"},
	}
	for _, ch := range changes {
		var arms []loadgen.Arm
		for _, a := range e2eArms {
			do := func(ctx context.Context, i int) error { return ch.do(ctx, c, a, i) }
			switch {
			case a.floor && !ch.settle:
				continue
			case a.floor:
				arm := floor.arm(do)
				arm.Name = a.name
				arms = append(arms, arm)
			default:
				arms = append(arms, loadgen.Arm{Name: a.name, Work: loadgen.Work{Do: do}})
			}
		}
		s.Logf("e2e: %s", ch.name)
		before := s.scrape(ctx)
		res, err := loadgen.Alternate(ctx, arms, loadgen.Plan{
			Load: loadgen.Load{Concurrency: 1, Requests: n, MaxDuration: s.Sizes.StepTimeout}, Rounds: n,
		})
		if err != nil {
			return sec, fmt.Errorf("e2e, %s: %w", ch.name, err)
		}
		if err := s.verify("e2e, "+ch.name, res...); err != nil {
			return sec, err
		}
		sec.Tables = append(sec.Tables, e2eTable(ch.name, res))
		if after := s.scrape(ctx); before != nil && after != nil {
			calls.Rows = append(calls.Rows, []string{ch.name, webhookCalls(before.apiserver, after.apiserver, n),
				handlerTimes(before.lockstep, after.lockstep)})
		}
		sec.Targets = append(sec.Targets, e2eTarget(ch, res))
		if len(res) > floorArm {
			floorNotes = append(floorNotes, floorNote(ch.name, res))
			if ch.floorTarget > 0 {
				sec.Targets = append(sec.Targets, e2eFloorTarget(ch, res))
			}
		}
		if ch.settle {
			if err := s.Env.Settle(ctx, ns, s.Sizes.StepTimeout); err != nil {
				return sec, err
			}
			if err := s.sameStatus(ctx, n); err != nil {
				return sec, err
			}
		}
	}
	if len(calls.Rows) > 0 {
		sec.Tables = append(sec.Tables, calls)
	}
	sec.Notes = append(sec.Notes,
		"Ratios are against the same request on the arm named, in the same run.",
		"The floor is what no admission that writes a record before the broker call can go below on this machine: one API server "+
			"write before the object's own. lockstep adds to it the webhook calls (for a create, the mutating and the validating "+
			"webhook), its checks and the broker call.")
	sec.Notes = append(sec.Notes, floorNotes...)
	sec.Notes = append(sec.Notes,
		"The create-only change is persisted by the no-webhook arm (nothing refuses it): that row is the cost of an unvalidated write.",
		"lockstep's figures include whatever of its webhooks the API server calls for the request (its webhook configurations' "+
			"matchConditions skip the requests whose answer is known in advance) and, for creates and spec updates, the object's lock "+
			"and the broker call.")
	return sec, nil
}

// e2eTarget checks lockstep's p50 and p99 against the change's baseline.
func e2eTarget(ch e2eChange, res []loadgen.Result) report.Target {
	return ratioTarget(ch.name+": vs "+e2eArms[ch.baseline].name, ch.target, res[0], res[ch.baseline])
}

// ratioTarget checks an arm's p50 and p99 against a baseline's: each at
// most target times the baseline's, and no unexpected answer.
func ratioTarget(what string, target float64, arm, baseline loadgen.Result) report.Target {
	l, b := loadgen.Summarize(arm), loadgen.Summarize(baseline)
	p50, p99 := loadgen.Ratio(l.P50, b.P50), loadgen.Ratio(l.P99, b.P99)
	ok := !math.IsNaN(p50) && !math.IsNaN(p99) && p50 <= target && p99 <= target && clean(arm)
	want := strconv.FormatFloat(target, 'f', -1, 64)
	if !strings.Contains(want, ".") {
		want += ".0"
	}
	return report.Check(what, "<= "+want+"x (p50 and p99)",
		fmt.Sprintf("%s p50, %s p99", loadgen.FormatRatio(p50), loadgen.FormatRatio(p99)), ok)
}

// createOnlyPatch changes the create-only spec.externalID to a new value.
func createOnlyPatch() string {
	return fmt.Sprintf(`{"spec":{"externalID":"%s"}}`, uuid.NewString())
}

// refusedInvalid is nil when err is the API server's 422 Invalid refusal,
// the answer a rule that refuses a change gives.
func refusedInvalid(err error) error {
	switch {
	case err == nil:
		return errors.New("the create-only change was persisted, expected a rejection")
	case !apierrors.IsInvalid(err):
		return fmt.Errorf("expected a 422 Invalid rejection, got: %w", err)
	}
	return nil
}

// e2eFloorTarget checks lockstep's p50 and p99 against the write-ahead
// floor: the floor is what no admission that keeps a write-ahead record
// can go below, so a change is judged by how close it comes to it.
func e2eFloorTarget(ch e2eChange, res []loadgen.Result) report.Target {
	l, f := loadgen.Summarize(res[0]), loadgen.Summarize(res[floorArm])
	p50, p99 := loadgen.Ratio(l.P50, f.P50), loadgen.Ratio(l.P99, f.P99)
	ok := !math.IsNaN(p50) && !math.IsNaN(p99) && p50 <= ch.floorTarget && p99 <= ch.floorTarget && clean(res[0])
	return report.Check(ch.name+": vs "+e2eArms[floorArm].name, fmt.Sprintf("<= %.1fx (p50 and p99)", ch.floorTarget),
		fmt.Sprintf("%s p50, %s p99", loadgen.FormatRatio(p50), loadgen.FormatRatio(p99)), ok)
}

// floorNote says how far the floor alone is from the no-webhook arm, and
// lockstep from the floor.
func floorNote(change string, res []loadgen.Result) string {
	l, plain, f := loadgen.Summarize(res[0]), loadgen.Summarize(res[noWebhooks]), loadgen.Summarize(res[floorArm])
	return fmt.Sprintf("%s: the floor alone is %s (p50) and %s (p99) the no-webhook arm; lockstep is %s (p50) and %s (p99) the floor, "+
		"%s more at the median.", change, ratio(f.P50, plain.P50), ratio(f.P99, plain.P99), ratio(l.P50, f.P50), ratio(l.P99, f.P99), dur(l.P50-f.P50))
}

func e2eTable(change string, res []loadgen.Result) report.Table {
	t := report.Table{Caption: "**" + change + "**", Header: []string{"arm", "p50", "p99", "throughput",
		"p50 vs no webhooks", "p99 vs no webhooks", "p50 vs CEL", "p99 vs CEL", "unexpected answers"}}
	plain, cel := loadgen.Summarize(res[1]), loadgen.Summarize(res[2])
	for k, a := range e2eArms[:len(res)] {
		m := loadgen.Summarize(res[k])
		t.Rows = append(t.Rows, []string{a.name, dur(m.P50), dur(m.P99), rate(m.Throughput),
			ratio(m.P50, plain.P50), ratio(m.P99, plain.P99), ratio(m.P50, cel.P50), ratio(m.P99, cel.P99), problems(res[k])})
	}
	return t
}

func e2eName(i int) string { return fmt.Sprintf("e2e-%d", i) }

// e2eObject is the object every arm creates.
func e2eObject(gvk schema.GroupVersionKind, ns, name string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{
		"metadata": map[string]any{"labels": map[string]any{"app.kubernetes.io/name": "orders"}},
		"spec": map[string]any{
			"brokerName": acme, "serviceName": fakebroker.ServiceDB, "planName": fakebroker.PlanSmall,
			"externalID": uuid.NewString(), "parameters": map[string]any{"storageGB": int64(10)},
		},
	}}
	u.SetGroupVersionKind(gvk)
	u.SetNamespace(ns)
	u.SetName(name)
	return u
}

func patch(ctx context.Context, c client.Client, gvk schema.GroupVersionKind, ns, name, merge string) error {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(gvk)
	u.SetNamespace(ns)
	u.SetName(name)
	return c.Patch(ctx, u, client.RawPatch(types.MergePatchType, []byte(merge)))
}

// warmE2E sends one unmeasured create and patch per arm: discovery,
// connections and the API server's caches are then warm for every arm.
func (s *Suite) warmE2E(ctx context.Context) error {
	for _, a := range e2eArms {
		if err := s.Env.Client.Create(ctx, e2eObject(a.gvk, a.ns, "e2e-warmup")); err != nil {
			return fmt.Errorf("e2e warmup, %s: %w", a.name, err)
		}
		if err := patch(ctx, s.Env.Client, a.gvk, a.ns, "e2e-warmup", `{"metadata":{"labels":{"bench":"warm"}}}`); err != nil {
			return fmt.Errorf("e2e warmup, %s: %w", a.name, err)
		}
	}
	return s.Env.Settle(ctx, e2eNamespace, s.Sizes.StepTimeout)
}

// cleanE2E deletes what the benchmark created (lockstep's objects through
// lockstep: deprovisions), so that later benchmarks do not carry them.
func (s *Suite) cleanE2E(n int) {
	ctx, cancel := context.WithTimeout(context.Background(), s.Sizes.StepTimeout)
	defer cancel()
	for _, a := range e2eArms {
		for i := -1; i < n; i++ {
			name := e2eName(i)
			if i < 0 {
				name = "e2e-warmup"
			}
			u := &unstructured.Unstructured{}
			u.SetGroupVersionKind(a.gvk)
			u.SetNamespace(a.ns)
			u.SetName(name)
			if err := s.Env.Client.Delete(ctx, u); err != nil && !apierrors.IsNotFound(err) {
				s.Logf("e2e cleanup: deleting %s %s: %v", a.name, name, err)
			}
		}
	}
	if err := s.Env.Settle(ctx, e2eNamespace, time.Minute); err != nil {
		s.Logf("e2e cleanup: %v", err)
	}
	s.cleanOperations(e2eNamespace)
}

// webhookCalls says how often kube-apiserver called each admission webhook
// between two scrapes, per request of n, and how long it waited for each
// call (mean).
func webhookCalls(before, after env.Metrics, n int) string {
	return perLabel(before, after, "apiserver_admission_webhook_admission_duration_seconds", "name", func(name string, h handlerCost) string {
		return fmt.Sprintf("%s %.2f × %s", name, h.count/float64(n), dur(h.total/time.Duration(h.count)))
	})
}

// handlerTimes says how long lockstep's webhook handlers took between two
// scrapes (mean per call, from controller-runtime's histogram: without TLS
// and HTTP).
func handlerTimes(before, after env.Metrics) string {
	return perLabel(before, after, "controller_runtime_webhook_latency_seconds", "webhook", func(path string, h handlerCost) string {
		return fmt.Sprintf("%s %s", path, dur(h.total/time.Duration(h.count)))
	})
}

// perLabel formats, for each value of label, the samples a histogram
// gained between two scrapes; "none" when it gained none.
func perLabel(before, after env.Metrics, metric, label string, format func(value string, h handlerCost) string) string {
	var parts []string
	for _, v := range labelValues(after, metric+"_count", label) {
		if h := histogram(before, after, metric, map[string]string{label: v}); h.count > 0 {
			parts = append(parts, format(v, h))
		}
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ", ")
}

// sameStatus gives every object of the other arms the status
// lockstep wrote into the lockstep arm's object of the same number, untimed,
// so that every arm updates objects of the same size, as a controller
// writing status would leave them.
func (s *Suite) sameStatus(ctx context.Context, n int) error {
	c := s.Env.Client
	for i := range n {
		src := &unstructured.Unstructured{}
		src.SetGroupVersionKind(e2eArms[0].gvk)
		if err := c.Get(ctx, client.ObjectKey{Namespace: e2eNamespace, Name: e2eName(i)}, src); err != nil {
			return fmt.Errorf("e2e: reading %s: %w", e2eName(i), err)
		}
		status, ok := src.Object["status"]
		if !ok {
			continue
		}
		for _, a := range e2eArms[1:] {
			dst := &unstructured.Unstructured{}
			dst.SetGroupVersionKind(a.gvk)
			if err := c.Get(ctx, client.ObjectKey{Namespace: a.ns, Name: e2eName(i)}, dst); err != nil {
				return fmt.Errorf("e2e, %s: reading %s: %w", a.name, e2eName(i), err)
			}
			dst.Object["status"] = status
			if err := c.Status().Update(ctx, dst); err != nil {
				return fmt.Errorf("e2e, %s: writing the status of %s: %w", a.name, e2eName(i), err)
			}
		}
	}
	return nil
}
