package suite

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/lockstep-dev/lockstep/api/v1alpha1"
	"github.com/lockstep-dev/lockstep/bench/env"
	"github.com/lockstep-dev/lockstep/bench/loadgen"
	"github.com/lockstep-dev/lockstep/bench/report"
	"github.com/lockstep-dev/lockstep/test/framework"
)

// burstArm is one way of holding the burst's instances and bindings.
type burstArm struct {
	name              string
	instance, binding schema.GroupVersionKind
	ns                string
	// lockstep is true for lockstep's own kinds: an object is Ready when
	// lockstep's Ready condition says so. Elsewhere it is Ready once
	// persisted.
	lockstep bool
	// floor takes each object's lock, carrying the operation's record,
	// before the write (see writeAhead).
	floor bool
	// writesStatus writes each applied object's status, with a True Ready
	// condition, right after the apply; the object is Ready once it has.
	writesStatus bool
}

// The arms of the burst benchmark, each in its namespace.
var burstArms = []burstArm{
	{name: "lockstep webhooks", instance: env.LockstepInstance, binding: env.LockstepBinding, ns: "bench-burst", lockstep: true},
	{name: "same CRDs, no webhooks", instance: env.PlainInstance, binding: env.PlainBinding, ns: "bench-burst-plain"},
	{name: "write-ahead floor: lock with record, then no webhooks", instance: env.PlainInstance, binding: env.PlainBinding,
		ns: "bench-burst-floor", floor: true},
	{name: "admission floor: lock with record, webhooks that allow at once, status written", instance: env.AllowedInstance,
		binding: env.AllowedBinding, ns: "bench-burst-admission", floor: true, writesStatus: true},
}

// The indexes of the baselines in burstArms.
const (
	burstPlain     = 1
	burstFloor     = 2
	burstAdmission = 3
)

// The burst's targets: lockstep's time against the floor's, and how often
// one object may be refused with a conflict and sent again.
const (
	burstTarget     = 2.0
	burstMaxRetries = 3
)

// burstBackoff is how a GitOps tool sends a refused object again: Argo
// CD's sync retry and a controller's rate-limited requeue both back off
// exponentially.
var burstBackoff = loadgen.Backoff{Initial: time.Second, Max: 30 * time.Second, Factor: 2, Jitter: 0.2}

// burstMaxAttempts bounds the tries of one object; BurstTimeout bounds the
// burst.
const burstMaxAttempts = 60

// burstPoll is how often the benchmark lists the objects while it waits
// for them to be Ready or gone.
const burstPoll = time.Second

// burstManager is the field manager of the benchmark's server-side applies.
const burstManager = "bench-gitops"

// Burst measures what a GitOps tool restoring a cluster does: many
// ServiceInstances of the embedded broker and a ServiceBinding of each,
// applied at once by a fixed number of clients, until every object is
// Ready; then all deleted the same way, until they are gone; then a
// namespace of them deleted at once.
func (s *Suite) Burst(ctx context.Context) (report.Section, error) {
	n, clients := s.Sizes.BurstInstances, s.Sizes.BurstClients
	sec := report.Section{Title: "8. GitOps burst: instances and bindings applied and deleted at once", Text: []string{
		fmt.Sprintf("lockstep is restarted with its embedded broker (a fresh bbolt store, one no-op bundle: every action is `builtin:noop`), "+
			"registered as ServiceBroker %q by the benchmark (lockstep's ClusterRole does not let it register the broker itself). Then %d ServiceInstances of it and a ServiceBinding of each (%d objects) are applied at once "+
			"by %d clients with server-side apply (field manager %q, forced), as a GitOps tool restoring a cluster does: one queue, the "+
			"instance of each application followed by its binding, each client taking the next object due. A refused apply is sent again "+
			"after an exponential back-off (%s), as Argo CD's sync retry or a controller's requeue would, while the clients go on with the "+
			"other objects (those not sent yet are due from the start, so a retry waits at least until the first pass has sent everything); "+
			"every try is counted by its answer. A binding sent before its instance exists is refused (422, no such instance), "+
			"and one sent while its instance's provision still holds the instance's lock waits for it up to lockstep's lock wait and is then "+
			"refused with a conflict (409): both are sent again. Time runs from the first apply until every object is Ready (lockstep's "+
			"Ready condition, listed every %s).", env.EmbeddedBrokerName, n, 2*n, clients, burstManager, burstBackoff, burstPoll),
		"The same objects go to three baselines, each in its own namespace: copies of the same CRDs in a group no webhook matches (Ready " +
			"there means persisted); the write-ahead floor: before each of those writes, the object's lock carrying the operation's " +
			"record, taken with lockstep's own journal code (the one API server write lockstep's admission makes before the broker call; " +
			"the locks are released after the burst, untimed); and the admission floor: the write-ahead floor's lock, then the object " +
			"written to copies of the CRDs behind a mutating and a validating webhook that allow every request at once " +
			"(bench/cmd/allow-all, called by kube-apiserver as lockstep's webhooks are: a mutating call on a create, a validating " +
			"call on a create and a delete), then, on apply, its status written once with a True Ready condition (Ready there means that " +
			"status). Then every object of each arm is deleted the same way (deletes refused " +
			"are sent again; an instance is refused while its bindings exist), until all are gone; lockstep deprovisions and unbinds at the " +
			"broker. Finally the objects are applied once more, lockstep's and the no-webhook copies each into a namespace of their own, " +
			"and each namespace is deleted as one, with kube-controller-manager's namespace controller running, until it is gone.",
		fmt.Sprintf("Each burst is bounded by %s from its first request; one that is not over by then is reported as not finished "+
			"(a missed target), with the objects that were never accepted (failed) and those accepted but not Ready or not gone (stuck). "+
			"lockstep's CPU time is read from /proc over each burst, its peak RSS (VmHWM) since its restart; kube-apiserver's requests "+
			"of every verb and resource, from every client, from its `apiserver_request_duration_seconds_count`.", s.Sizes.BurstTimeout),
	}}
	registry, err := os.MkdirTemp("", "lockstep-bench-burst-")
	if err != nil {
		return sec, err
	}
	defer func() { _ = os.RemoveAll(registry) }()
	if err := writeBundles(registry, 1); err != nil {
		return sec, err
	}
	s.Logf("burst: restarting lockstep with its embedded broker")
	if err := s.Env.StopLockstep(); err != nil {
		return sec, err
	}
	settings, err := s.Env.EmbeddedBroker(ctx, registry, "burst-broker")
	if err != nil {
		return sec, err
	}
	if err := s.Env.StartLockstep(ctx, settings...); err != nil {
		return sec, err
	}
	defer s.cleanBurst()
	v := &supervisor{s: s, settings: settings}
	stopWatching := v.watch(ctx, burstPoll)
	defer stopWatching()
	if err := s.Env.BrokerReady(ctx, env.EmbeddedBrokerName, s.Sizes.StepTimeout); err != nil {
		return sec, err
	}
	for _, a := range burstArms {
		if err := s.Env.Namespace(ctx, a.ns, false); err != nil {
			return sec, err
		}
	}

	applied := make([]burstPhase, len(burstArms))
	for k, a := range burstArms {
		s.Logf("burst: applying %d objects, %s", 2*n, a.name)
		if applied[k], err = s.burst(ctx, v, a, a.ns, burstObjects(a, a.ns, n), apply); err != nil {
			return sec, fmt.Errorf("burst, applying, %s: %w", a.name, err)
		}
	}
	deleted := make([]burstPhase, len(burstArms))
	for k, a := range burstArms {
		s.Logf("burst: deleting %d objects, %s", 2*n, a.name)
		if deleted[k], err = s.burst(ctx, v, a, a.ns, objectsOf(a, a.ns, n), remove); err != nil {
			return sec, fmt.Errorf("burst, deleting, %s: %w", a.name, err)
		}
	}
	stopKCM, err := s.Env.StartControllerManager()
	if err != nil {
		return sec, err
	}
	defer func() {
		if err := stopKCM(); err != nil {
			s.Logf("burst: stopping kube-controller-manager: %v", err)
		}
	}()
	var namespaces []namespaceDeletion
	for _, a := range burstArms[:burstFloor] {
		ns := a.ns + "-ns"
		s.Logf("burst: applying %d objects into namespace %s and deleting it, %s", 2*n, ns, a.name)
		d, err := s.deleteNamespace(ctx, v, a, ns, n)
		if err != nil {
			return sec, fmt.Errorf("burst, namespace deletion, %s: %w", a.name, err)
		}
		namespaces = append(namespaces, d)
	}

	sec.Tables = append(sec.Tables,
		burstTable(fmt.Sprintf("**Apply of %d instances and %d bindings** (time until every object is Ready)", n, n), applied),
		burstTable(fmt.Sprintf("**Delete of the %d objects** (time until every object is gone)", 2*n), deleted),
		namespaceTable(namespaces),
		requestsTable(applied, deleted, namespaces))
	sec.Targets = append(sec.Targets, burstTargets("apply", "Ready", applied)...)
	sec.Targets = append(sec.Targets, burstTargets("delete", "gone", deleted)...)
	sec.Targets = append(sec.Targets, namespaceTarget(namespaces, s.Sizes.BurstTimeout))
	sec.Notes = append(sec.Notes,
		"Ratios are against the same burst on the arm named, in the same run. The floor is what no admission that writes a record "+
			"before the broker call can go below: one API server write before each object's own. lockstep adds to it the webhook calls, "+
			"its checks, the broker call, and after the answer the reconciler's commit (status, record, releasing the lock), which Ready waits for.",
		"The admission floor is the least any synchronous admission that defaults fields on the server and reports Ready costs the "+
			"API server, with no check, no broker call and nothing written after the answer: what lockstep takes beyond it is its own "+
			"work (the checks, the broker call, the record, the lock's release, the Secrets, the refusals and their retries), what it "+
			"takes beyond the write-ahead floor up to it is the price of webhooks and of a status.",
		"Refusals are counted per object and by answer: 409 is a conflict (the object's or its instance's lock held by a broker "+
			"operation in flight, or an instance whose bindings still exist), 422 a binding of an instance that does not exist yet; "+
			"the target bounds the 409s any one object got.")
	if err := s.verifyBurst(applied, deleted, namespaces); err != nil {
		return sec, err
	}
	return sec, nil
}

// burstObjects are the burst's objects in a namespace, in the order a
// GitOps tool sends them: application i's instance, then its binding.
// Each instance and binding has an external id of its own.
func burstObjects(a burstArm, ns string, n int) []*unstructured.Unstructured {
	objs := make([]*unstructured.Unstructured, 0, 2*n)
	for i := range n {
		name := burstName(i)
		si := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{
			"brokerName": env.EmbeddedBrokerName, "serviceName": noopService, "planName": noopPlan, "externalID": uuid.NewString(),
		}}}
		si.SetGroupVersionKind(a.instance)
		sb := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{
			"instanceName": name, "secretName": name, "externalID": uuid.NewString(),
		}}}
		sb.SetGroupVersionKind(a.binding)
		for _, u := range []*unstructured.Unstructured{si, sb} {
			u.SetNamespace(ns)
			u.SetName(name)
			objs = append(objs, u)
		}
	}
	return objs
}

// objectsOf names the burst's objects in a namespace, as burstObjects
// orders them, without their specs: what a delete needs.
func objectsOf(a burstArm, ns string, n int) []*unstructured.Unstructured {
	objs := make([]*unstructured.Unstructured, 0, 2*n)
	for i := range n {
		for _, gvk := range []schema.GroupVersionKind{a.instance, a.binding} {
			u := &unstructured.Unstructured{}
			u.SetGroupVersionKind(gvk)
			u.SetNamespace(ns)
			u.SetName(burstName(i))
			objs = append(objs, u)
		}
	}
	return objs
}

func burstName(i int) string { return fmt.Sprintf("app-%05d", i) }

// A burstOp is what the burst does to each object, and what it waits for
// afterwards.
type burstOp struct {
	name string
	send func(ctx context.Context, c client.Client, u *unstructured.Unstructured) error
	// settled counts the objects of the arm in ns that are not yet as the
	// operation leaves them (Ready; gone); nil when the answer is enough.
	settled func(s *Suite, ctx context.Context, a burstArm, ns string, n int) (int, error)
	// readies is true for the operation that leaves objects Ready: an arm
	// that writesStatus writes the status after it.
	readies bool
}

var (
	apply = burstOp{name: "apply", send: func(ctx context.Context, c client.Client, u *unstructured.Unstructured) error {
		return c.Apply(ctx, client.ApplyConfigurationFromUnstructured(u.DeepCopy()), client.FieldOwner(burstManager), client.ForceOwnership)
	}, settled: (*Suite).notReady, readies: true}
	remove = burstOp{name: "delete", send: func(ctx context.Context, c client.Client, u *unstructured.Unstructured) error {
		return client.IgnoreNotFound(c.Delete(ctx, u.DeepCopy()))
	}, settled: (*Suite).notGone}
)

// burstPhase is one burst of one arm.
type burstPhase struct {
	arm  burstArm
	sent loadgen.BurstResult
	// settled is when every object was as the operation leaves it, since
	// the first request; 0 when that was not so by the time bound.
	settled time.Duration
	// unsettled counts the objects accepted but still not settled at the
	// end.
	unsettled int
	// cpu is lockstep's CPU time over the burst, memory its memory at the
	// end; restarts counts the times it exited meanwhile and was started
	// again.
	cpu      time.Duration
	memory   framework.Memory
	restarts int
	// requests are kube-apiserver's, by "VERB resource[/subresource]";
	// webhookCalls the admission webhooks it called (lockstep's, the
	// allow-all server's).
	requests     map[string]float64
	webhookCalls float64
}

func (p burstPhase) finished() bool { return p.settled > 0 }

// failed counts the objects never accepted.
func (p burstPhase) failed() int { return len(p.sent.Items) - p.sent.Done() }

// burst sends op for objs of arm a in ns from the clients at once, then
// waits until every object is settled, within BurstTimeout.
func (s *Suite) burst(ctx context.Context, v *supervisor, a burstArm, ns string, objs []*unstructured.Unstructured, op burstOp) (burstPhase, error) {
	p := burstPhase{arm: a}
	c := s.Env.Client
	do := func(ctx context.Context, i int) error { return op.send(ctx, c, objs[i]) }
	if a.writesStatus && op.readies {
		send := do
		do = func(ctx context.Context, i int) error {
			if err := send(ctx, i); err != nil {
				return err
			}
			return markReady(ctx, c, objs[i])
		}
	}
	var release []loadgen.Do
	if a.floor {
		floor := (&writeAhead{client: c, namespace: ns}).arm(do)
		do = func(ctx context.Context, i int) error {
			err := floor.Do(ctx, i)
			if err != nil {
				err = errors.Join(err, floor.After(ctx, i))
			}
			return err
		}
		release = append(release, floor.After)
	}
	before := s.scrape(ctx)
	cpu0, restarts := v.cpu(ctx), v.restarts()
	start := time.Now()
	deadline := start.Add(s.Sizes.BurstTimeout)
	var err error
	p.sent, err = loadgen.Burst(ctx, loadgen.BurstLoad{
		Clients: s.Sizes.BurstClients, Items: len(objs), MaxAttempts: burstMaxAttempts, MaxDuration: s.Sizes.BurstTimeout,
		Backoff: burstBackoff, Seed: 1,
	}, do, refusal)
	if err != nil {
		return p, err
	}
	n := len(objs) / 2
	switch {
	case p.failed() > 0:
		p.unsettled, _ = op.settled(s, ctx, a, ns, n)
		p.unsettled -= p.failed()
	case a.lockstep:
		err = env.Poll(ctx, max(time.Until(deadline), burstPoll), burstPoll, func(ctx context.Context) (bool, error) {
			left, err := op.settled(s, ctx, a, ns, n)
			if err != nil {
				return false, nil // listing under load: look again
			}
			p.unsettled = left
			return left == 0, nil
		})
		if err == nil {
			p.settled = time.Since(start)
		} else if ctx.Err() != nil {
			return p, ctx.Err()
		}
	default:
		// Persisted once accepted; check that it is so.
		if p.unsettled, err = op.settled(s, ctx, a, ns, n); err != nil {
			return p, err
		}
		if p.unsettled == 0 {
			p.settled = p.sent.Last()
		}
	}
	p.cpu, p.restarts = v.cpu(ctx)-cpu0, v.restarts()-restarts
	if p.memory, err = v.memory(); err != nil {
		return p, err
	}
	if after := s.scrape(ctx); before != nil && after != nil {
		p.requests = requestsBetween(before.apiserver, after.apiserver, func(string) bool { return true })
		p.webhookCalls = histogram(before.apiserver, after.apiserver, "apiserver_admission_webhook_admission_duration_seconds", nil).count
	}
	s.Logf("burst: %s, %s: %d of %d accepted, all %s; refusals %s; %d failed, %d stuck; lockstep CPU %s, %d restart(s)",
		op.name, a.name, p.sent.Done(), len(objs), settledTime(p), refusalCounts(p.sent), p.failed(), p.unsettled, dur(p.cpu), p.restarts)
	for _, r := range release {
		if _, err := loadgen.Run(ctx, loadgen.Load{Concurrency: s.Sizes.BurstClients, Requests: len(objs), MaxDuration: s.Sizes.StepTimeout}, 0,
			loadgen.Work{Do: r}); err != nil {
			return p, err
		}
	}
	return p, nil
}

// refusal classifies a refused request by its HTTP code ("409"), or as
// "no answer".
func refusal(err error) string {
	var status apierrors.APIStatus
	if errors.As(err, &status) && status.Status().Code != 0 {
		return fmt.Sprint(status.Status().Code)
	}
	return "no answer"
}

// notReady counts the objects of arm a in ns that are not Ready: missing,
// or, for lockstep's kinds, without a True Ready condition.
func (s *Suite) notReady(ctx context.Context, a burstArm, ns string, n int) (int, error) {
	ready := 0
	for _, gvk := range []schema.GroupVersionKind{a.instance, a.binding} {
		list := &unstructured.UnstructuredList{}
		list.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
		if err := s.Env.Client.List(ctx, list, client.InNamespace(ns)); err != nil {
			return 0, err
		}
		for _, u := range list.Items {
			if !(a.lockstep || a.writesStatus) || conditionTrue(u, v1alpha1.ConditionReady) {
				ready++
			}
		}
	}
	return 2*n - ready, nil
}

// markReady writes an object's status as the admission floor's single
// status write: a True Ready condition, the one part of a status a reader
// of Ready needs.
func markReady(ctx context.Context, c client.Client, u *unstructured.Unstructured) error {
	patch := fmt.Sprintf(`{"status":{"conditions":[{"type":%q,"status":"True","reason":"Admitted","message":"written by the benchmark","lastTransitionTime":%q}]}}`,
		v1alpha1.ConditionReady, time.Now().UTC().Format(time.RFC3339))
	if err := c.Status().Patch(ctx, u.DeepCopy(), client.RawPatch(types.MergePatchType, []byte(patch))); err != nil {
		return fmt.Errorf("writing the status of %s %s: %w", u.GetKind(), u.GetName(), err)
	}
	return nil
}

// notGone counts the objects of arm a left in ns.
func (s *Suite) notGone(ctx context.Context, a burstArm, ns string, _ int) (int, error) {
	left := 0
	for _, gvk := range []schema.GroupVersionKind{a.instance, a.binding} {
		list := &metav1.PartialObjectMetadataList{}
		list.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
		if err := s.Env.Client.List(ctx, list, client.InNamespace(ns)); err != nil {
			return 0, err
		}
		left += len(list.Items)
	}
	return left, nil
}

// conditionTrue reports whether an object's status has condition kind
// with status True.
func conditionTrue(u unstructured.Unstructured, kind string) bool {
	conditions, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, c := range conditions {
		if m, ok := c.(map[string]any); ok && m["type"] == kind && m["status"] == string(metav1.ConditionTrue) {
			return true
		}
	}
	return false
}

// namespaceDeletion is the deletion of one namespace holding an arm's
// objects.
type namespaceDeletion struct {
	arm     burstArm
	applied burstPhase
	// gone is how long the namespace took to go; 0 when it had not by the
	// time bound.
	gone time.Duration
	// left counts the arm's objects still in it then.
	left     int
	cpu      time.Duration
	restarts int
	requests map[string]float64
}

// deleteNamespace applies the burst's objects into namespace ns, then
// deletes the namespace and waits until it is gone.
func (s *Suite) deleteNamespace(ctx context.Context, v *supervisor, a burstArm, ns string, n int) (namespaceDeletion, error) {
	d := namespaceDeletion{arm: a}
	if err := s.Env.Namespace(ctx, ns, false); err != nil {
		return d, err
	}
	var err error
	if d.applied, err = s.burst(ctx, v, a, ns, burstObjects(a, ns, n), apply); err != nil {
		return d, err
	}
	before := s.scrape(ctx)
	cpu0, restarts := v.cpu(ctx), v.restarts()
	start := time.Now()
	if err := s.Env.Client.Delete(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		return d, fmt.Errorf("deleting namespace %s: %w", ns, err)
	}
	err = env.Poll(ctx, s.Sizes.BurstTimeout, burstPoll, func(ctx context.Context) (bool, error) {
		err := s.Env.Client.Get(ctx, client.ObjectKey{Name: ns}, &corev1.Namespace{})
		return apierrors.IsNotFound(err), nil
	})
	switch {
	case err == nil:
		d.gone = time.Since(start)
	case ctx.Err() != nil:
		return d, ctx.Err()
	default:
		d.left, _ = s.notGone(ctx, a, ns, n)
	}
	d.cpu, d.restarts = v.cpu(ctx)-cpu0, v.restarts()-restarts
	s.Logf("burst: namespace %s, %s: gone after %s (0: not by the bound), %d objects left; lockstep CPU %s", ns, a.name, dur(d.gone), d.left, dur(d.cpu))
	if after := s.scrape(ctx); before != nil && after != nil {
		d.requests = requestsBetween(before.apiserver, after.apiserver, func(string) bool { return true })
	}
	return d, nil
}

// burstTable sets the arms of one kind of burst side by side.
func burstTable(caption string, phases []burstPhase) report.Table {
	t := report.Table{Caption: caption, Header: []string{"arm", "all accepted", "all settled", "vs floor", "vs admission floor", "vs no webhooks",
		"requests sent", "webhook calls", "refusals by answer (most for one object)", "failed", "stuck", "lockstep CPU", "lockstep RSS (peak)", "lockstep restarts"}}
	for _, p := range phases {
		tries := 0
		for _, o := range p.sent.Items {
			tries += o.Tries()
		}
		accepted := "did not finish"
		if p.failed() == 0 {
			accepted = dur(p.sent.Last())
		}
		t.Rows = append(t.Rows, []string{p.arm.name, accepted, settledTime(p), burstRatio(p, phases[burstFloor]), burstRatio(p, phases[burstAdmission]),
			burstRatio(p, phases[burstPlain]),
			fmt.Sprintf("%d for %d objects", tries, len(p.sent.Items)), fmt.Sprintf("%.0f", p.webhookCalls), refusalCounts(p.sent), fmt.Sprint(p.failed()), fmt.Sprint(p.unsettled),
			dur(p.cpu), fmt.Sprintf("%s (%s)", mib(p.memory.RSS), mib(p.memory.Peak)), fmt.Sprint(p.restarts)})
	}
	return t
}

func settledTime(p burstPhase) string {
	if !p.finished() {
		return "did not finish"
	}
	return dur(p.settled)
}

func burstRatio(p, base burstPhase) string {
	if !p.finished() || !base.finished() {
		return "-"
	}
	return ratio(p.settled, base.settled)
}

// refusalCounts formats a burst's refusals by answer, "none" when there
// were none.
func refusalCounts(r loadgen.BurstResult) string {
	total, most := r.Refusals()
	if len(total) == 0 {
		return "none"
	}
	classes := make([]string, 0, len(total))
	for c := range total {
		classes = append(classes, c)
	}
	slices.Sort(classes)
	parts := make([]string, len(classes))
	for i, c := range classes {
		parts[i] = fmt.Sprintf("%s × %d (%d)", c, total[c], most[c])
	}
	return strings.Join(parts, ", ")
}

// namespaceTable sets the namespace deletions side by side.
func namespaceTable(ds []namespaceDeletion) report.Table {
	t := report.Table{Caption: "**One namespace deleted** (its objects applied as above first; time from the DELETE until the namespace is gone)",
		Header: []string{"arm", "apply: all settled", "namespace gone", "vs no webhooks", "objects left", "lockstep CPU", "lockstep restarts"}}
	for _, d := range ds {
		gone, vs := "did not finish", "-"
		if d.gone > 0 {
			gone = dur(d.gone)
			if b := ds[len(ds)-1]; b.gone > 0 {
				vs = ratio(d.gone, b.gone)
			}
		}
		t.Rows = append(t.Rows, []string{d.arm.name, settledTime(d.applied), gone, vs, fmt.Sprint(d.left), dur(d.cpu), fmt.Sprint(d.restarts)})
	}
	return t
}

// requestsTable lists kube-apiserver's requests in each burst.
func requestsTable(applied, deleted []burstPhase, ds []namespaceDeletion) report.Table {
	t := report.Table{Caption: "**kube-apiserver's requests** in each burst, every client (the benchmark's, lockstep's, kube-controller-manager's), by verb and resource:",
		Header: []string{"burst", "arm", "requests"}}
	for _, p := range applied {
		t.Rows = append(t.Rows, []string{"apply", p.arm.name, mostCounts(p.requests, burstRequestKinds)})
	}
	for _, p := range deleted {
		t.Rows = append(t.Rows, []string{"delete", p.arm.name, mostCounts(p.requests, burstRequestKinds)})
	}
	for _, d := range ds {
		t.Rows = append(t.Rows, []string{"apply into a namespace", d.arm.name, mostCounts(d.applied.requests, burstRequestKinds)})
		t.Rows = append(t.Rows, []string{"namespace deletion", d.arm.name, mostCounts(d.requests, burstRequestKinds)})
	}
	return t
}

// burstRequestKinds is how many kinds of request the requests table names.
const burstRequestKinds = 12

// mostCounts formats the k most frequent counts of m, then the rest and
// the total.
func mostCounts(m map[string]float64, k int) string {
	if len(m) <= k {
		return counts(m)
	}
	total := 0.0
	for _, v := range m {
		total += v
	}
	parts := strings.SplitN(counts(m), ", ", k+1)
	return fmt.Sprintf("%s; %d other kinds; %.0f in all", strings.Join(parts[:k], ", "), len(m)-k, total)
}

// burstTargets checks lockstep's burst against the floor: its time, its
// failed or stuck objects, and its conflicts retried.
func burstTargets(what, settled string, phases []burstPhase) []report.Target {
	l, f := phases[0], phases[burstFloor]
	objects := len(l.sent.Items)
	timeTarget := report.Check(fmt.Sprintf("burst %s of %d objects: until all %s, vs the write-ahead floor", what, objects, settled),
		fmt.Sprintf("<= %.1fx", burstTarget), "", false)
	switch {
	case !l.finished():
		timeTarget.Got = fmt.Sprintf("did not finish: %d of %d %s", objects-l.failed()-l.unsettled, objects, settled)
	case !f.finished():
		timeTarget.Got, timeTarget.Status = "the floor did not finish", report.NotMeasured
	default:
		r := loadgen.Ratio(l.settled, f.settled)
		timeTarget.Got = fmt.Sprintf("%s (lockstep %s, floor %s)", loadgen.FormatRatio(r), dur(l.settled), dur(f.settled))
		timeTarget.Status = map[bool]report.Status{true: report.Met, false: report.Missed}[r <= burstTarget]
	}
	total, most := l.sent.Refusals()
	return []report.Target{
		timeTarget,
		report.Check(fmt.Sprintf("burst %s: failed or stuck objects", what), "0",
			fmt.Sprintf("%d failed, %d stuck of %d%s", l.failed(), l.unsettled, objects, exits(l.restarts)), l.failed() == 0 && l.unsettled == 0 && l.finished()),
		report.Check(fmt.Sprintf("burst %s: 409s retried per object", what), fmt.Sprintf("<= %d", burstMaxRetries),
			fmt.Sprintf("most %d (%d in all)", most["409"], total["409"]), most["409"] <= burstMaxRetries),
	}
}

// exits says how often lockstep exited and was started again, when it did.
func exits(restarts int) string {
	if restarts == 0 {
		return ""
	}
	return fmt.Sprintf("; lockstep exited %d time(s) and was started again", restarts)
}

// namespaceTarget checks that lockstep's namespace went with everything in
// it.
func namespaceTarget(ds []namespaceDeletion, bound time.Duration) report.Target {
	const what, want = "namespace deletion of a burst's objects", "gone, nothing stuck"
	if len(ds) == 0 {
		return report.Target{What: what, Want: want, Got: "not run", Status: report.NotMeasured}
	}
	l := ds[0]
	if l.gone == 0 {
		return report.Check(what, want, fmt.Sprintf("not gone after %s: %d objects left", bound, l.left), false)
	}
	got := fmt.Sprintf("gone in %s", dur(l.gone))
	if b := ds[len(ds)-1]; b.gone > 0 {
		got += fmt.Sprintf(" (%s no webhooks)", ratio(l.gone, b.gone))
	}
	return report.Check(what, want, got, true)
}

// verifyBurst fails under Strict when an arm left objects failed or stuck
// or did not finish.
func (s *Suite) verifyBurst(applied, deleted []burstPhase, ds []namespaceDeletion) error {
	if !s.Strict {
		return nil
	}
	var problems []string
	for _, p := range slices.Concat(applied, deleted) {
		if !p.finished() || p.failed() > 0 || p.unsettled > 0 {
			problems = append(problems, fmt.Sprintf("%s: %d failed, %d stuck", p.arm.name, p.failed(), p.unsettled))
		}
	}
	for _, d := range ds {
		if d.gone == 0 {
			problems = append(problems, fmt.Sprintf("%s: namespace not gone, %d objects left", d.arm.name, d.left))
		}
	}
	if len(problems) > 0 {
		return fmt.Errorf("burst: %s", strings.Join(problems, "; "))
	}
	return nil
}

// cleanBurst deletes what the burst left (best effort: all is gone when
// it finished), the embedded broker's ServiceBroker, and restarts
// lockstep with its defaults.
func (s *Suite) cleanBurst() {
	ctx, cancel := context.WithTimeout(context.Background(), s.Sizes.StepTimeout)
	defer cancel()
	for _, a := range burstArms {
		for _, gvk := range []schema.GroupVersionKind{a.binding, a.instance} {
			u := &unstructured.Unstructured{}
			u.SetGroupVersionKind(gvk)
			if err := s.Env.Client.DeleteAllOf(ctx, u, client.InNamespace(a.ns)); err != nil && !apierrors.IsNotFound(err) {
				s.Logf("burst cleanup: deleting %s in %s: %v", gvk.Kind, a.ns, err)
			}
		}
	}
	s.cleanOperations(burstArms[0].ns)
	s.restartLockstep(ctx)
	sb := &v1alpha1.ServiceBroker{ObjectMeta: metav1.ObjectMeta{Name: env.EmbeddedBrokerName}}
	if err := s.Env.Client.Delete(ctx, sb); client.IgnoreNotFound(err) != nil {
		s.Logf("burst cleanup: deleting ServiceBroker %s: %v", sb.Name, err)
	}
}
