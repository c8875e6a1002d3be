package suite

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/lockstep-dev/lockstep/api/v1alpha1"
	"github.com/lockstep-dev/lockstep/bench/env"
	"github.com/lockstep-dev/lockstep/bench/loadgen"
	"github.com/lockstep-dev/lockstep/bench/report"
	"github.com/lockstep-dev/lockstep/internal/broker/fakebroker"
	"github.com/lockstep-dev/lockstep/internal/broker/osbapi"
	"github.com/lockstep-dev/lockstep/internal/marketplace"
	"github.com/lockstep-dev/lockstep/internal/typed/render"
	"github.com/lockstep-dev/lockstep/test/framework"
)

// The typed-kinds benchmark's broker and the namespace of its objects.
const (
	typedBroker    = "typed"
	typedNamespace = "bench-typed"
	// typedPlansPerService are the plans of each service of its catalog.
	typedPlansPerService = 2
)

// Its targets.
const (
	typedRefusalTarget = 1.05
	activationTarget   = 5 * time.Second
)

// typedGroupVersion is the group and version of every typed kind.
var typedGroupVersion = schema.GroupVersion{Group: render.Group, Version: render.Version}

// Typed measures typed kinds, with lockstep running as in the other
// benchmarks and a test broker whose catalog has TypedOfferings services
// with schemas: kubectl api-resources and lockstep's memory with every
// service activated against none; the time from activating one service to
// its kind being established and served; a change of a create-only
// parameter of a typed kind, answered by lockstep's precheck, against the
// transition rule lockstep generates (the path before the precheck) and
// the end-to-end benchmark's hand-written CEL rule; and a change with
// several errors of both sorts answered once against the two rounds it
// took before.
func (s *Suite) Typed(ctx context.Context) (report.Section, error) {
	n := s.Sizes.TypedOfferings
	sec := report.Section{Title: "9. Typed kinds", Text: []string{
		fmt.Sprintf("A test broker whose catalog has %d services, each with %d plans with the typical create and update schemas "+
			"(scalars, an enum, a pattern, an array, a nested object, and region, which is in the create schema only; on the first plan, "+
			"storageGB is at most 100, on the other at most 1024), is registered as ServiceBroker %q. Typed kinds are activated by patching its spec.typedKinds, as an administrator does; lockstep "+
			"renders each activated service's CRD (internal/typed/render), applies it with its ClusterRoles and reports it on the "+
			"ServiceOffering.", n, typedPlansPerService, typedBroker),
	}}
	b, err := fakebroker.Start(fakebroker.WithCatalog(typedCatalog(n)))
	if err != nil {
		return sec, fmt.Errorf("starting the typed kinds' test broker: %w", err)
	}
	defer b.Close()
	if _, err := s.Env.RegisterBroker(ctx, typedBroker, b.URL(), s.Sizes.StepTimeout); err != nil {
		return sec, err
	}
	defer s.cleanTyped()
	if err := s.Env.Namespace(ctx, typedNamespace, false); err != nil {
		return sec, err
	}
	atOnce, err := s.manyTypedKinds(ctx, &sec, b)
	if err != nil {
		return sec, err
	}
	kind, err := s.typedActivation(ctx, &sec, b, atOnce)
	if err != nil {
		return sec, err
	}
	if err := s.typedRefusal(ctx, &sec, kind); err != nil {
		return sec, err
	}
	return sec, nil
}

// manyTypedKinds measures `kubectl api-resources` and lockstep's memory
// with none of the broker's services activated, then with all of them,
// then deactivates them all. It returns how the activation of all of them
// went.
func (s *Suite) manyTypedKinds(ctx context.Context, sec *report.Section, b *fakebroker.Broker) (served, error) {
	n, runs := s.Sizes.TypedOfferings, s.Sizes.APIResourcesRuns
	sec.Text = append(sec.Text, fmt.Sprintf("**%d activated offerings.** With none of the broker's services activated, `kubectl api-resources` "+
		"(the real kubectl, as the administrator, which fetches discovery afresh) is run once unmeasured and then %d times, timed, and lockstep's memory is "+
		"read from /proc (VmRSS; VmHWM is the peak), with its Go heap in use (`"+heapInuse+"`), once its marketplace controller is idle. Then `*` is activated: once every "+
		"offering's kind is established and served in discovery, the same again. Then every service is deactivated and the "+
		"benchmark waits until every CRD is gone. The two states cannot alternate (activating %d kinds takes seconds), so they "+
		"are measured one after the other, a moment apart.", n, runs, n))
	services := serviceNames(b)
	// measure reads lockstep's memory once its marketplace controller is
	// idle, then times kubectl api-resources.
	measure := func() (lockstepMemory, []time.Duration, error) {
		if err := s.marketplaceIdle(ctx); err != nil {
			return lockstepMemory{}, nil, err
		}
		m, err := s.Env.Lockstep.Memory()
		if err != nil {
			return lockstepMemory{}, nil, err
		}
		metrics, err := env.ScrapeMetrics(ctx, s.Env.MetricsURL())
		if err != nil {
			return lockstepMemory{}, nil, err
		}
		api, err := s.apiResources(ctx, runs)
		return lockstepMemory{Memory: m, heap: int64(metrics.Sum(heapInuse, nil))}, api, err
	}
	mem0, api0, err := measure()
	if err != nil {
		return served{}, err
	}

	before := s.scrape(ctx)
	cpu0, err := s.Env.Lockstep.CPU()
	if err != nil {
		return served{}, err
	}
	start := time.Now()
	if err := s.activate(ctx, []string{"*"}); err != nil {
		return served{}, err
	}
	all, err := s.typedKindsServed(ctx, services, start, 250*time.Millisecond)
	if err != nil {
		return served{}, err
	}
	after := s.scrape(ctx)
	cpu, err := s.Env.Lockstep.CPU()
	if err != nil {
		return served{}, err
	}
	memN, apiN, err := measure()
	if err != nil {
		return served{}, err
	}
	if err := s.deactivate(ctx, all.kinds); err != nil {
		return served{}, err
	}

	p0, pN := loadgen.Summarize(loadgen.Result{Latencies: api0}), loadgen.Summarize(loadgen.Result{Latencies: apiN})
	established := loadgen.Summarize(loadgen.Result{Latencies: all.established})
	sec.Tables = append(sec.Tables, report.Table{
		Caption: fmt.Sprintf("**Activating all %d at once** (offerings polled every 250 ms; lockstep's marketplace controller from its "+
			"`%s` and `%s` over the activation; kube-apiserver's time for the writes of CRDs and ClusterRoles, dry runs included, "+
			"from its `apiserver_request_duration_seconds`: count × mean):", n, reconcileTotal, reconcileSecondsSum),
		Header: []string{"first offering established", "median", "last", "all served in discovery", "marketplace reconciles (by result)",
			"their time", "writes", "lockstep's CPU", "lockstep's requests (method, answer × count)", "kube-apiserver's time for the writes"},
		Rows: [][]string{{dur(slices.Min(all.established)), dur(established.P50), dur(established.Max), dur(all.all),
			marketplaceReconciles(before, after), marketplaceTime(before, after), marketplaceWritesBetween(before, after), dur(cpu - cpu0),
			lockstepRequests(before, after), typedKindWrites(before, after)}},
	})
	sec.Tables = append(sec.Tables, report.Table{
		Caption: fmt.Sprintf("**0 and %d activated offerings** (%d more CRDs):", n, n),
		Header:  []string{"activated", "kubectl api-resources p50", "max", "lockstep RSS", "peak RSS", "Go heap in use"},
		Rows: [][]string{
			{"0", dur(p0.P50), dur(p0.Max), mib(mem0.RSS), mib(mem0.Peak), mib(mem0.heap)},
			{fmt.Sprint(n), dur(pN.P50), dur(pN.Max), mib(memN.RSS), mib(memN.Peak), mib(memN.heap)},
			{fmt.Sprintf("%d vs 0", n), ratio(pN.P50, p0.P50), ratio(pN.Max, p0.Max),
				times(memN.RSS, mem0.RSS), times(memN.Peak, mem0.Peak), times(memN.heap, mem0.heap)},
		},
	})
	sec.Notes = append(sec.Notes, "lockstep's figures with typed kinds activated are those of the controller that renders and applies "+
		"their CRDs and ClusterRoles; what a reconciler of a kind's objects would hold comes on top, per object.")
	return all, nil
}

// apiResources runs `kubectl api-resources` once unmeasured (its first
// run after a change of discovery writes kubectl's cache afresh), then
// runs times, and returns how long each of those took.
func (s *Suite) apiResources(ctx context.Context, runs int) ([]time.Duration, error) {
	ctx, cancel := context.WithTimeout(ctx, s.Sizes.StepTimeout)
	defer cancel()
	if _, err := s.Env.Kubectl(ctx, "api-resources"); err != nil {
		return nil, err
	}
	var took []time.Duration
	for range runs {
		start := time.Now()
		if _, err := s.Env.Kubectl(ctx, "api-resources"); err != nil {
			return nil, err
		}
		took = append(took, time.Since(start))
	}
	return took, nil
}

// typedActivation activates one service TypedActivations times and
// measures each time until its kind is established and served in
// discovery; it deactivates it in between (untimed), and leaves it
// activated. Its table shows beside it atOnce, the activation of every
// service at once. It returns the kind.
func (s *Suite) typedActivation(ctx context.Context, sec *report.Section, b *fakebroker.Broker, atOnce served) (*v1alpha1.TypedKindStatus, error) {
	samples := s.Sizes.TypedActivations
	service := serviceNames(b)[0]
	sec.Text = append(sec.Text, fmt.Sprintf("**Activation to established.** The broker's spec.typedKinds is patched to activate service %q; "+
		"timed from the patch until its ServiceOffering says status.typedKind.established and the API server lists the kind in "+
		"discovery (both polled every 50 ms, discovery without a cache). Then the service is deactivated and the benchmark waits "+
		"until its CRD is gone (untimed). %d samples.", service, samples))
	var (
		took []time.Duration
		kind *v1alpha1.TypedKindStatus
	)
	for i := range samples {
		start := time.Now()
		if err := s.activate(ctx, []string{service}); err != nil {
			return nil, err
		}
		one, err := s.typedKindsServed(ctx, []string{service}, start, 50*time.Millisecond)
		if err != nil {
			return nil, err
		}
		took = append(took, one.all)
		kind = one.kinds[0]
		if i < samples-1 {
			if err := s.deactivate(ctx, one.kinds); err != nil {
				return nil, err
			}
		}
	}
	m := loadgen.Summarize(loadgen.Result{Latencies: took})
	var cells []string
	for _, d := range took {
		cells = append(cells, dur(d))
	}
	sec.Tables = append(sec.Tables, report.Table{
		Caption: fmt.Sprintf("**Activation to established and served**: one service (kind %s), and all %d at once (the activation above, "+
			"until every offering said its kind is established; no target):", kind.Kind, len(atOnce.kinds)),
		Header: []string{"activated at once", "samples", "p50", "max", "each"},
		Rows: [][]string{
			{"1", fmt.Sprint(samples), dur(m.P50), dur(m.Max), strings.Join(cells, ", ")},
			{fmt.Sprint(len(atOnce.kinds)), "1", "-", dur(slices.Max(atOnce.established)), dur(slices.Max(atOnce.established))},
		},
	})
	sec.Targets = append(sec.Targets, report.Check("activation to established and served", "<= "+dur(activationTarget)+" (every sample)",
		fmt.Sprintf("%s p50, %s max", dur(m.P50), dur(m.Max)), m.Max <= activationTarget))
	return kind, nil
}

// typedRefusalBatch is how many changes each arm of the create-only
// refusal sends in a row before the next arm's turn.
const typedRefusalBatch = 10

// The label of the typed objects the benchmark keeps out of lockstep's
// precheck (typed-check.mutate.lockstep.dev), so that their changes take
// the path they took before it: the API server's schema check and the
// CRD's rules first, then lockstep's validating webhook.
const (
	beforeLabel = "bench.lockstep.dev/admission"
	beforeValue = "without-precheck"
	// typedCheckWebhook is the webhook of the precheck of typed objects'
	// updates.
	typedCheckWebhook = "typed-check.mutate.lockstep.dev"
)

// Changes of a typed object with several errors: region leaves the enum
// (the CRD's schema refuses it, a blocking error) and is create-only;
// replicas is beyond the CRD's bound; storageGB is beyond the bound of
// the object's plan only (the CRD holds the looser bound of the other
// plan). fixed is severalErrors with the CRD's errors put right: the
// second request of the path without the precheck, which lockstep's
// validating webhook refuses for storageGB.
const (
	severalErrors = `{"spec":{"parameters":{"region":"mars","replicas":20,"storageGB":500}}}`
	schemaFixed   = `{"spec":{"parameters":{"region":"eu","replicas":5,"storageGB":500}}}`
)

// typedRefusal measures a typed object's refused changes, the arms
// alternating in small batches: a change of a create-only parameter
// answered by lockstep's precheck (every error at once), against the same
// change refused by the CRD's generated transition rule (the path before
// the precheck) and against the hand-written CEL rule of the end-to-end
// benchmark's CRD; then a change with several errors of both sorts,
// answered once by the precheck, against the two rounds it took before.
func (s *Suite) typedRefusal(ctx context.Context, sec *report.Section, kind *v1alpha1.TypedKindStatus) error {
	n, changes, warm := s.Sizes.EndToEnd, s.Sizes.TypedRefusals, s.Sizes.Warmup
	rounds := max(1, changes/typedRefusalBatch)
	cel := e2eArms[celRule]
	typed := typedGroupVersion.WithKind(kind.Kind)
	sec.Text = append(sec.Text, fmt.Sprintf("**Refusals.** %d objects of kind %s (plan %s, region eu) and %d more labelled %s=%s, created through "+
		"lockstep (provisioned at the test broker, status written by lockstep); for the duration of these measurements lockstep's "+
		"MutatingWebhookConfiguration leaves the labelled objects out of `%s` (an objectSelector), so that their changes take the path "+
		"every change took before lockstep prechecked typed objects: the API server's schema check and the CRD's rules first, then "+
		"lockstep's validating webhook. %d objects of the end-to-end benchmark's CRD with the hand-written CEL rule (%s) get the status "+
		"lockstep wrote into the typed object of the same number (untimed), so that every arm changes objects of the same size. Every "+
		"change is sent one at a time through the real kube-apiserver with client-go, %d per arm after %d unmeasured ones; the arms "+
		"alternate in batches of %d changes, in rotating order (%d rounds), so that every arm sees the same moments of the machine's load.",
		n, kind.Kind, typedPlan, n, beforeLabel, beforeValue, typedCheckWebhook, n, cel.name, changes, warm, typedRefusalBatch, rounds))
	sec.Text = append(sec.Text, "*Create-only change.* A merge patch of spec.parameters.region to us: on the typed objects lockstep's "+
		"precheck refuses it (a mutating webhook call, the validating chain's static checks, every error in one 422); on the labelled ones "+
		"the transition rule lockstep generates refuses it (the API server's 422, no webhook called); on the CEL arm, the create-only "+
		"change of spec.externalID that `self == oldSelf` refuses. A fourth arm, for comparison, is a copy of the typed kind's CRD in group "+
		handWrittenGroup+" whose generated rule on region is replaced by a hand-written `self == oldSelf`, in a group no webhook matches.")
	sec.Text = append(sec.Text, "*Several errors.* A merge patch "+"`"+severalErrors+"`"+" of plan "+typedPlan+", whose storageGB is at "+
		"most 100 (the other plan's, and so the CRD's, 1024): region leaves the enum (the CRD refuses it, and then does not run its rules: "+
		"the answer says \"some validation rules were not checked\") and is create-only, replicas is beyond the CRD's bound, storageGB beyond "+
		"the plan's only. Lockstep's precheck answers once, with the three errors. Without it the API server refuses region and replicas, "+
		"and only once they are put right ("+"`"+schemaFixed+"`"+") does lockstep's validating webhook refuse storageGB: one change of this "+
		"arm is those two requests, one after the other, as a person who fixes what the first answer said sends them.")
	handWritten, err := s.handWrittenCopy(ctx, kind)
	if err != nil {
		return err
	}
	c := s.Env.Client
	before := func(i int) string { return fmt.Sprintf("before-%d", i) }
	for i := range n {
		objs := []*unstructured.Unstructured{typedObject(typed, typedName(i)), typedObject(typed, before(i)),
			e2eObject(cel.gvk, typedNamespace, typedName(i)), typedObject(handWritten, typedName(i))}
		objs[1].SetLabels(map[string]string{beforeLabel: beforeValue})
		for _, o := range objs {
			if err := c.Create(ctx, o); err != nil {
				return fmt.Errorf("typed kinds, creating %s of %s: %w", o.GetName(), o.GroupVersionKind().GroupKind(), err)
			}
		}
	}
	if err := s.Env.Settle(ctx, typedNamespace, s.Sizes.StepTimeout); err != nil {
		return err
	}
	if err := s.sameTypedStatus(ctx, n, typed, cel.gvk, handWritten); err != nil {
		return err
	}
	restore, err := s.withoutPrecheck(ctx, typed, before(0))
	if err != nil {
		return err
	}
	defer restore()
	var sizes []string
	for _, a := range []struct {
		name string
		gvk  schema.GroupVersionKind
	}{{"typed kind " + kind.Kind, typed}, {cel.name, cel.gvk}, {"hand-written copy", handWritten}} {
		sizes = append(sizes, s.refusalSizes(ctx, a.name, a.gvk))
	}
	sec.Notes = append(sec.Notes, "What the API server handles for each kind (the CRD's schema as JSON, its x-kubernetes-validations, and the "+
		"object changed, as JSON, managedFields included): "+strings.Join(sizes, "; ")+".")

	refused := func(name, merge string, want ...string) func(ctx context.Context, i int) error {
		return func(ctx context.Context, i int) error {
			err := patch(ctx, c, typed, typedNamespace, name, merge)
			if err := refusedInvalid(err); err != nil {
				return err
			}
			for _, w := range want {
				if !strings.Contains(err.Error(), w) {
					return fmt.Errorf("refused, but the answer does not say %q: %w", w, err)
				}
			}
			return nil
		}
	}
	precheck := `spec.parameters.region: Invalid value: "us": create-only parameter (in the plan's create schema`
	rule := "create-only parameter spec.parameters.region"
	arms := []loadgen.Arm{
		{Name: "typed kind " + kind.Kind + ", lockstep's precheck", Work: loadgen.Work{Do: func(ctx context.Context, i int) error {
			return refused(typedName(i%n), `{"spec":{"parameters":{"region":"us"}}}`, precheck)(ctx, i)
		}}},
		{Name: "typed kind " + kind.Kind + ", the CRD's generated rule (before the precheck)", Work: loadgen.Work{Do: func(ctx context.Context, i int) error {
			return refused(before(i%n), `{"spec":{"parameters":{"region":"us"}}}`, rule)(ctx, i)
		}}},
		{Name: cel.name, Work: loadgen.Work{Do: func(ctx context.Context, i int) error {
			return refusedInvalid(patch(ctx, c, cel.gvk, typedNamespace, typedName(i%n), createOnlyPatch()))
		}}},
		{Name: "same typed schema, hand-written rule on region (for comparison)", Work: loadgen.Work{Do: func(ctx context.Context, i int) error {
			return refusedInvalid(patch(ctx, c, handWritten, typedNamespace, typedName(i%n), `{"spec":{"parameters":{"region":"us"}}}`))
		}}},
	}
	s.Logf("typed: create-only refusal")
	scraped := s.scrape(ctx)
	res, err := loadgen.Alternate(ctx, arms, loadgen.Plan{
		Load: loadgen.Load{Concurrency: 1, Requests: changes, MaxDuration: s.Sizes.StepTimeout}, Rounds: rounds, Warmup: warm,
	})
	if err != nil {
		return fmt.Errorf("typed kinds, create-only refusal: %w", err)
	}
	if err := s.verify("typed kinds, create-only refusal", res...); err != nil {
		return err
	}
	calls := "not read"
	if after := s.scrape(ctx); scraped != nil && after != nil {
		calls = webhookCalls(scraped.apiserver, after.apiserver, changes)
	}
	t := report.Table{Caption: "**Create-only change of a typed object, refused.** Admission webhook calls while the changes were " +
		"sent, per change of one arm (from kube-apiserver's `apiserver_admission_webhook_admission_duration_seconds`; only the " +
		"precheck's arm calls one): " + calls + ".",
		Header: []string{"arm", "p50", "p99", "throughput", "p50 vs CEL", "p99 vs CEL", "p50 vs before", "p99 vs before", "unexpected answers"}}
	base, prior := loadgen.Summarize(res[2]), loadgen.Summarize(res[1])
	for k, a := range arms {
		m := loadgen.Summarize(res[k])
		t.Rows = append(t.Rows, []string{a.Name, dur(m.P50), dur(m.P99), rate(m.Throughput), ratio(m.P50, base.P50), ratio(m.P99, base.P99),
			ratio(m.P50, prior.P50), ratio(m.P99, prior.P99), problems(res[k])})
	}
	sec.Tables = append(sec.Tables, t)
	generated, same := loadgen.Summarize(res[1]), loadgen.Summarize(res[3])
	sec.Notes = append(sec.Notes, fmt.Sprintf("The CRD's generated rule against the hand-written copy (the generated rule and the webhooks' match "+
		"conditions): %s p50, %s p99. Lockstep's precheck against the CRD's rule it answers ahead of: %s p50, %s p99 (a webhook call, "+
		"for an answer with every error the change has).",
		ratio(generated.P50, same.P50), ratio(generated.P99, same.P99), ratio(loadgen.Summarize(res[0]).P50, prior.P50), ratio(loadgen.Summarize(res[0]).P99, prior.P99)))
	sec.Targets = append(sec.Targets,
		ratioTarget("typed kind's create-only refusal by its CRD's rule: vs "+cel.name, typedRefusalTarget, res[1], res[2]))

	// Several errors: one answer against two rounds.
	several := []loadgen.Arm{
		{Name: "typed kind " + kind.Kind + ": one answer (lockstep's precheck)", Work: loadgen.Work{Do: func(ctx context.Context, i int) error {
			return refused(typedName(i%n), severalErrors, "spec.parameters.region", "spec.parameters.replicas", "spec.parameters.storageGB")(ctx, i)
		}}},
		{Name: "typed kind " + kind.Kind + ": two rounds (before the precheck)", Work: loadgen.Work{Do: func(ctx context.Context, i int) error {
			if err := refused(before(i%n), severalErrors, "spec.parameters.region", "spec.parameters.replicas", "some validation rules were not checked")(ctx, i); err != nil {
				return fmt.Errorf("first round: %w", err)
			}
			if err := refused(before(i%n), schemaFixed, "spec.parameters.storageGB", "typed.validate.lockstep.dev")(ctx, i); err != nil {
				return fmt.Errorf("second round: %w", err)
			}
			return nil
		}}},
	}
	s.Logf("typed: several errors")
	res, err = loadgen.Alternate(ctx, several, loadgen.Plan{
		Load: loadgen.Load{Concurrency: 1, Requests: changes, MaxDuration: s.Sizes.StepTimeout}, Rounds: rounds, Warmup: warm,
	})
	if err != nil {
		return fmt.Errorf("typed kinds, several errors: %w", err)
	}
	if err := s.verify("typed kinds, several errors", res...); err != nil {
		return err
	}
	t = report.Table{Caption: "**A typed object's change with several errors of both sorts, until every error is known.**",
		Header: []string{"arm", "p50", "p99", "throughput", "p50 vs two rounds", "p99 vs two rounds", "unexpected answers"}}
	two := loadgen.Summarize(res[1])
	for k, a := range several {
		m := loadgen.Summarize(res[k])
		t.Rows = append(t.Rows, []string{a.Name, dur(m.P50), dur(m.P99), rate(m.Throughput), ratio(m.P50, two.P50), ratio(m.P99, two.P99), problems(res[k])})
	}
	sec.Tables = append(sec.Tables, t)
	sec.Targets = append(sec.Targets, ratioTarget("several errors answered once: vs the two rounds before", severalErrorsTarget, res[0], res[1]))
	return nil
}

// severalErrorsTarget bounds one answer with every error against the two
// rounds it took before: one request where there were two.
const severalErrorsTarget = 1.0

// withoutPrecheck leaves the typed objects labelled beforeLabel out of
// lockstep's precheck (an objectSelector on typedCheckWebhook), waits
// until the API server answers probe's changes without it and returns
// what puts the configuration back.
func (s *Suite) withoutPrecheck(ctx context.Context, typed schema.GroupVersionKind, probe string) (func(), error) {
	c := s.Env.Client
	update := func(edit func(w *admissionregistrationv1.MutatingWebhook)) error {
		var list admissionregistrationv1.MutatingWebhookConfigurationList
		if err := c.List(ctx, &list); err != nil {
			return err
		}
		for i := range list.Items {
			cfg := &list.Items[i]
			for j := range cfg.Webhooks {
				if cfg.Webhooks[j].Name == typedCheckWebhook {
					edit(&cfg.Webhooks[j])
					return c.Update(ctx, cfg)
				}
			}
		}
		return fmt.Errorf("no mutating webhook %s", typedCheckWebhook)
	}
	exclude := metav1.LabelSelectorRequirement{Key: beforeLabel, Operator: metav1.LabelSelectorOpNotIn, Values: []string{beforeValue}}
	if err := update(func(w *admissionregistrationv1.MutatingWebhook) {
		if w.ObjectSelector == nil {
			w.ObjectSelector = &metav1.LabelSelector{}
		}
		w.ObjectSelector.MatchExpressions = append(w.ObjectSelector.MatchExpressions, exclude)
	}); err != nil {
		return nil, fmt.Errorf("typed kinds: leaving labelled objects out of the precheck: %w", err)
	}
	restore := func() {
		err := update(func(w *admissionregistrationv1.MutatingWebhook) {
			w.ObjectSelector.MatchExpressions = slices.DeleteFunc(w.ObjectSelector.MatchExpressions, func(r metav1.LabelSelectorRequirement) bool { return r.Key == beforeLabel })
		})
		if err != nil {
			s.Logf("typed kinds: putting the precheck back: %v", err)
		}
	}
	err := env.Poll(ctx, s.Sizes.StepTimeout, 100*time.Millisecond, func(ctx context.Context) (bool, error) {
		err := patch(ctx, c, typed, typedNamespace, probe, `{"spec":{"parameters":{"region":"us"}}}`)
		return err != nil && strings.Contains(err.Error(), "create-only parameter spec.parameters.region"), nil
	})
	if err != nil {
		restore()
		return nil, fmt.Errorf("typed kinds: the API server still sends the labelled objects to the precheck: %w", err)
	}
	return restore, nil
}

// sameTypedStatus gives object i of each of the kinds others the status
// lockstep wrote into object i of the typed kind, untimed, as sameStatus
// does for the end-to-end benchmark.
func (s *Suite) sameTypedStatus(ctx context.Context, n int, typed schema.GroupVersionKind, others ...schema.GroupVersionKind) error {
	c := s.Env.Client
	for i := range n {
		src := kindObject(typed)
		if err := c.Get(ctx, client.ObjectKey{Namespace: typedNamespace, Name: typedName(i)}, src); err != nil {
			return fmt.Errorf("typed kinds: reading %s: %w", typedName(i), err)
		}
		status, ok := src.Object["status"]
		if !ok {
			continue
		}
		for _, gvk := range others {
			dst := kindObject(gvk)
			if err := c.Get(ctx, client.ObjectKey{Namespace: typedNamespace, Name: typedName(i)}, dst); err != nil {
				return fmt.Errorf("typed kinds, %s: reading %s: %w", gvk.GroupKind(), typedName(i), err)
			}
			dst.Object["status"] = status
			if err := c.Status().Update(ctx, dst); err != nil {
				return fmt.Errorf("typed kinds, %s: writing the status of %s: %w", gvk.GroupKind(), typedName(i), err)
			}
		}
	}
	return nil
}

// refusalSizes says how large the CRD of gvk is (its schema as JSON and
// its validation rules) and its first object (as JSON), for the arm name.
func (s *Suite) refusalSizes(ctx context.Context, name string, gvk schema.GroupVersionKind) string {
	c := s.Env.Client
	var crds apiextensionsv1.CustomResourceDefinitionList
	if err := c.List(ctx, &crds); err != nil {
		return name + ": not read (" + err.Error() + ")"
	}
	schemaSize, rules := "not found", 0
	for _, crd := range crds.Items {
		if crd.Spec.Group != gvk.Group || crd.Spec.Names.Kind != gvk.Kind {
			continue
		}
		root := crd.Spec.Versions[0].Schema.OpenAPIV3Schema
		raw, err := json.Marshal(root)
		if err != nil {
			return name + ": not read (" + err.Error() + ")"
		}
		schemaSize, rules = kib(len(raw)), countRules(root)
	}
	obj := kindObject(gvk)
	if err := c.Get(ctx, client.ObjectKey{Namespace: typedNamespace, Name: typedName(0)}, obj); err != nil {
		return name + ": not read (" + err.Error() + ")"
	}
	raw, err := json.Marshal(obj.Object)
	if err != nil {
		return name + ": not read (" + err.Error() + ")"
	}
	return fmt.Sprintf("%s: schema %s, %d rules, object %s", name, schemaSize, rules, kib(len(raw)))
}

// countRules counts the x-kubernetes-validations of a schema and of every
// schema below it.
func countRules(s *apiextensionsv1.JSONSchemaProps) int {
	if s == nil {
		return 0
	}
	n := len(s.XValidations)
	for _, p := range s.Properties {
		n += countRules(&p)
	}
	if s.Items != nil {
		n += countRules(s.Items.Schema)
	}
	if s.AdditionalProperties != nil {
		n += countRules(s.AdditionalProperties.Schema)
	}
	return n
}

// kib is a size in bytes in KiB.
func kib(n int) string { return fmt.Sprintf("%.1f KiB", float64(n)/1024) }

// handWrittenGroup is the group of the copy of a typed kind's CRD whose
// generated rule on region is replaced by a hand-written one.
const handWrittenGroup = "handwritten.bench.lockstep.dev"

// handWrittenCopy installs a copy of kind's CRD in handWrittenGroup
// whose rule on spec.parameters.region is the hand-written
// `self == oldSelf` instead of lockstep's generated rule, waits until the
// API server serves it, and returns its kind.
func (s *Suite) handWrittenCopy(ctx context.Context, kind *v1alpha1.TypedKindStatus) (schema.GroupVersionKind, error) {
	gvk := schema.GroupVersionKind{Group: handWrittenGroup, Version: render.Version, Kind: kind.Kind}
	var live apiextensionsv1.CustomResourceDefinition
	if err := s.Env.Client.Get(ctx, client.ObjectKey{Name: kind.CRDName}, &live); err != nil {
		return gvk, fmt.Errorf("reading CRD %s: %w", kind.CRDName, err)
	}
	crd := &apiextensionsv1.CustomResourceDefinition{Spec: *live.Spec.DeepCopy()}
	crd.Name = crd.Spec.Names.Plural + "." + handWrittenGroup
	crd.Spec.Group = handWrittenGroup
	crd.Spec.Names.ShortNames, crd.Spec.Names.Categories = nil, nil
	root := crd.Spec.Versions[0].Schema.OpenAPIV3Schema
	spec := root.Properties["spec"]
	spec.XValidations = slices.DeleteFunc(spec.XValidations, func(r apiextensionsv1.ValidationRule) bool {
		return r.FieldPath == ".parameters.region"
	})
	params := spec.Properties["parameters"]
	region, ok := params.Properties["region"]
	if !ok {
		return gvk, fmt.Errorf("CRD %s has no spec.parameters.region", kind.CRDName)
	}
	region.XValidations = append(region.XValidations, apiextensionsv1.ValidationRule{Rule: "self == oldSelf", Message: env.CELMessage})
	params.Properties["region"] = region
	spec.Properties["parameters"] = params
	root.Properties["spec"] = spec
	if err := s.Env.Client.Create(ctx, crd); err != nil && !apierrors.IsAlreadyExists(err) {
		return gvk, fmt.Errorf("creating CRD %s: %w", crd.Name, err)
	}
	dc, err := discovery.NewDiscoveryClientForConfig(s.Env.Config)
	if err != nil {
		return gvk, fmt.Errorf("creating a discovery client: %w", err)
	}
	err = env.Poll(ctx, s.Sizes.StepTimeout, 100*time.Millisecond, func(context.Context) (bool, error) {
		list, err := dc.ServerResourcesForGroupVersion(gvk.GroupVersion().String())
		return err == nil && slices.ContainsFunc(list.APIResources, func(r metav1.APIResource) bool { return r.Name == crd.Spec.Names.Plural }), nil
	})
	if err != nil {
		return gvk, fmt.Errorf("CRD %s is not served: %w", crd.Name, err)
	}
	return gvk, nil
}

// typedCatalog is the generated catalog of n services of
// typedPlansPerService plans each, where the first plan of each service
// (typedPlan) takes a storageGB of at most 100: the plans differ in a
// bound, which the CRD holds at its looser value and lockstep's webhook
// at each plan's own.
func typedCatalog(n int) osbapi.Catalog {
	cat := generatedCatalog(n*typedPlansPerService, typedPlansPerService)
	const wide, narrow = `"storageGB": {"type": "integer", "minimum": 1, "maximum": 1024}`, `"storageGB": {"type": "integer", "minimum": 1, "maximum": 100}`
	for i := range cat.Services {
		schemas := cat.Services[i].Plans[0].Schemas.ServiceInstance
		for _, p := range []*osbapi.InputParameters{schemas.Create, schemas.Update} {
			p.Parameters = json.RawMessage(strings.Replace(string(p.Parameters), wide, narrow, 1))
		}
	}
	return cat
}

// typedPlan is the plan of the typed kind's objects.
const typedPlan = "plan-0"

func typedName(i int) string { return fmt.Sprintf("typed-%d", i) }

// typedObject is an object of the typed kind gvk, valid against the
// plans' create schema, with the create-only region.
func typedObject(gvk schema.GroupVersionKind, name string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{
		"metadata": map[string]any{"labels": map[string]any{"app.kubernetes.io/name": "orders"}},
		"spec": map[string]any{
			"brokerName": typedBroker, "plan": typedPlan, "externalID": uuid.NewString(),
			"parameters": map[string]any{"region": "eu", "version": "16", "storageGB": int64(10)},
		},
	}}
	u.SetGroupVersionKind(gvk)
	u.SetNamespace(typedNamespace)
	u.SetName(name)
	return u
}

// serviceNames are the services of the broker's catalog, in order.
func serviceNames(b *fakebroker.Broker) []string {
	var names []string
	for _, svc := range b.Catalog().Services {
		names = append(names, svc.Name)
	}
	return names
}

// activate sets the typed broker's spec.typedKinds to one entry with the
// service patterns, or to none when services is empty.
func (s *Suite) activate(ctx context.Context, services []string) error {
	var sb v1alpha1.ServiceBroker
	if err := s.Env.Client.Get(ctx, client.ObjectKey{Name: typedBroker}, &sb); err != nil {
		return err
	}
	patch := client.MergeFrom(sb.DeepCopy())
	sb.Spec.TypedKinds = nil
	if len(services) > 0 {
		sb.Spec.TypedKinds = []v1alpha1.TypedKindActivation{{Services: services}}
	}
	if err := s.Env.Client.Patch(ctx, &sb, patch); err != nil {
		return fmt.Errorf("setting the typed kinds of ServiceBroker %s to %v: %w", typedBroker, services, err)
	}
	return nil
}

// served is when the typed kinds of services were established and served,
// measured from a start.
type served struct {
	// kinds are the kinds, in the order of the services.
	kinds []*v1alpha1.TypedKindStatus
	// established is when each ServiceOffering first said its kind is
	// established, in the order of the services; all is when, after
	// that, the API server listed every kind in discovery.
	established []time.Duration
	all         time.Duration
}

// typedKindsServed waits until the ServiceOffering of each service says
// its kind is established and the API server lists every kind in
// discovery, polling every interval from start.
func (s *Suite) typedKindsServed(ctx context.Context, services []string, start time.Time, interval time.Duration) (served, error) {
	dc, err := discovery.NewDiscoveryClientForConfig(s.Env.Config)
	if err != nil {
		return served{}, fmt.Errorf("creating a discovery client: %w", err)
	}
	out := served{kinds: make([]*v1alpha1.TypedKindStatus, len(services)), established: make([]time.Duration, len(services))}
	waiting := ""
	err = env.Poll(ctx, s.Sizes.StepTimeout, interval, func(ctx context.Context) (bool, error) {
		var offerings v1alpha1.ServiceOfferingList
		if err := s.Env.Client.List(ctx, &offerings, client.MatchingFields{"spec.brokerName": typedBroker}); err != nil {
			return false, err
		}
		now := time.Since(start)
		byName := map[string]*v1alpha1.ServiceOffering{}
		for i := range offerings.Items {
			byName[offerings.Items[i].Name] = &offerings.Items[i]
		}
		waiting = ""
		for i, service := range services {
			if out.kinds[i] != nil {
				continue
			}
			name := marketplace.OfferingName(typedBroker, service, service+"-id")
			o, ok := byName[name]
			if !ok || o.Status.TypedKind == nil || !o.Status.TypedKind.Established {
				waiting = "ServiceOffering " + name + " to say its kind is established"
				continue
			}
			out.kinds[i], out.established[i] = o.Status.TypedKind, now
		}
		if waiting != "" {
			return false, nil
		}
		list, err := dc.ServerResourcesForGroupVersion(typedGroupVersion.String())
		if err != nil {
			waiting = "discovery: " + err.Error()
			return false, nil
		}
		for _, k := range out.kinds {
			if !slices.ContainsFunc(list.APIResources, func(r metav1.APIResource) bool { return r.Name == k.Plural }) {
				waiting = "discovery to list " + k.Plural
				return false, nil
			}
		}
		out.all = time.Since(start)
		return true, nil
	})
	if err != nil {
		return served{}, fmt.Errorf("typed kinds of %d service(s) of %s, waiting for %s: %w", len(services), typedBroker, waiting, err)
	}
	return out, nil
}

// deactivate deactivates every service of the typed broker and waits
// until the CRDs of kinds are gone and no offering shows a kind.
func (s *Suite) deactivate(ctx context.Context, kinds []*v1alpha1.TypedKindStatus) error {
	if err := s.activate(ctx, nil); err != nil {
		return err
	}
	left := ""
	err := env.Poll(ctx, s.Sizes.StepTimeout, 50*time.Millisecond, func(ctx context.Context) (bool, error) {
		for _, k := range kinds {
			crd := kindObject(schema.GroupVersionKind{Group: "apiextensions.k8s.io", Version: "v1", Kind: "CustomResourceDefinition"})
			err := s.Env.Client.Get(ctx, client.ObjectKey{Name: k.CRDName}, crd)
			if err == nil {
				left = "CRD " + k.CRDName
				return false, nil
			}
			if !apierrors.IsNotFound(err) {
				return false, err
			}
		}
		var offerings v1alpha1.ServiceOfferingList
		if err := s.Env.Client.List(ctx, &offerings, client.MatchingFields{"spec.brokerName": typedBroker}); err != nil {
			return false, err
		}
		for _, o := range offerings.Items {
			if o.Status.TypedKind != nil {
				left = "the typed kind on ServiceOffering " + o.Name
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil {
		return fmt.Errorf("deactivating the typed kinds of %s, waiting for %s to go: %w", typedBroker, left, err)
	}
	return nil
}

// cleanTyped deletes what the benchmark created: the objects, the typed
// kinds and the ServiceBroker, so that later benchmarks do not carry them.
func (s *Suite) cleanTyped() {
	ctx, cancel := context.WithTimeout(context.Background(), s.Sizes.StepTimeout)
	defer cancel()
	c := s.Env.Client
	var offerings v1alpha1.ServiceOfferingList
	if err := c.List(ctx, &offerings, client.MatchingFields{"spec.brokerName": typedBroker}); err != nil {
		s.Logf("typed cleanup: listing the offerings: %v", err)
	}
	var kinds []*v1alpha1.TypedKindStatus
	for _, o := range offerings.Items {
		if k := o.Status.TypedKind; k != nil {
			kinds = append(kinds, k)
			gvk := typedGroupVersion.WithKind(k.Kind)
			if err := c.DeleteAllOf(ctx, kindObject(gvk), client.InNamespace(typedNamespace)); err != nil {
				s.Logf("typed cleanup: deleting the objects of %s: %v", k.Kind, err)
			}
		}
	}
	if err := c.DeleteAllOf(ctx, kindObject(e2eArms[celRule].gvk), client.InNamespace(typedNamespace)); err != nil {
		s.Logf("typed cleanup: deleting the CEL arm's objects: %v", err)
	}
	var crds apiextensionsv1.CustomResourceDefinitionList
	if err := c.List(ctx, &crds); err != nil {
		s.Logf("typed cleanup: listing the CRDs: %v", err)
	}
	for i := range crds.Items {
		if crd := &crds.Items[i]; crd.Spec.Group == handWrittenGroup {
			if err := c.Delete(ctx, crd); err != nil && !apierrors.IsNotFound(err) {
				s.Logf("typed cleanup: deleting CRD %s: %v", crd.Name, err)
			}
		}
	}
	if err := env.Poll(ctx, s.Sizes.StepTimeout, 100*time.Millisecond, func(ctx context.Context) (bool, error) {
		for _, k := range kinds {
			l := typedList(typedGroupVersion.WithKind(k.Kind))
			if err := c.List(ctx, l, client.InNamespace(typedNamespace)); err != nil || len(l.Items) > 0 {
				return false, client.IgnoreNotFound(err)
			}
		}
		return true, nil
	}); err != nil {
		s.Logf("typed cleanup: the objects did not go: %v", err)
	}
	if err := s.deactivate(ctx, kinds); err != nil {
		s.Logf("typed cleanup: %v", err)
	}
	sb := &v1alpha1.ServiceBroker{}
	sb.Name = typedBroker
	if err := c.Delete(ctx, sb); err != nil && !apierrors.IsNotFound(err) {
		s.Logf("typed cleanup: deleting ServiceBroker %s: %v", typedBroker, err)
	}
	s.cleanOperations(typedNamespace)
}

// typedList is an empty list of the objects of gvk.
func typedList(gvk schema.GroupVersionKind) *unstructured.UnstructuredList {
	l := &unstructured.UnstructuredList{}
	l.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
	return l
}

// kindObject is an empty object of gvk.
func kindObject(gvk schema.GroupVersionKind) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(gvk)
	return u
}

// marketplaceReconciles says how many reconciles the marketplace
// controller ran between two scrapes, by result.
func marketplaceReconciles(before, after *scrapes) string {
	if before == nil || after == nil {
		return "not read"
	}
	var parts []string
	for _, result := range labelValues(after.lockstep, reconcileTotal, "result") {
		match := map[string]string{"controller": marketplaceController, "result": result}
		if d := after.lockstep.Sum(reconcileTotal, match) - before.lockstep.Sum(reconcileTotal, match); d > 0 {
			parts = append(parts, fmt.Sprintf("%.0f %s", d, result))
		}
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ", ")
}

// marketplaceTime is the marketplace controller's reconcile time between
// two scrapes.
func marketplaceTime(before, after *scrapes) string {
	if before == nil || after == nil {
		return "not read"
	}
	match := map[string]string{"controller": marketplaceController}
	return dur(time.Duration((after.lockstep.Sum(reconcileSecondsSum, match) - before.lockstep.Sum(reconcileSecondsSum, match)) * float64(time.Second)))
}

// marketplaceWritesBetween are the marketplace's writes between two
// scrapes.
func marketplaceWritesBetween(before, after *scrapes) string {
	if before == nil || after == nil {
		return "not read"
	}
	return fmt.Sprintf("%.0f", after.lockstep.Sum(marketplaceWrites, nil)-before.lockstep.Sum(marketplaceWrites, nil))
}

// heapInuse is the Go runtime's heap in use, as lockstep's metrics show it.
const heapInuse = "go_memstats_heap_inuse_bytes"

// lockstepMemory is lockstep's memory as /proc and its Go runtime see it.
type lockstepMemory struct {
	framework.Memory
	heap int64
}

// times is a/b as a ratio.
func times(a, b int64) string {
	if b == 0 {
		return "n/a"
	}
	return fmt.Sprintf("%.2fx", float64(a)/float64(b))
}

// typedKindWrites are kube-apiserver's writes of CRDs and ClusterRoles
// between two scrapes, by verb (dry runs apart), count × mean time.
func typedKindWrites(before, after *scrapes) string {
	if before == nil || after == nil {
		return "not read"
	}
	const latency = "apiserver_request_duration_seconds"
	seen := map[string]bool{}
	var parts []string
	for _, sample := range after.apiserver {
		resource := sample.Labels["resource"]
		if sample.Name != latency+"_count" || (resource != "customresourcedefinitions" && resource != "clusterroles") || sample.Labels["subresource"] != "" {
			continue
		}
		verb, dry := sample.Labels["verb"], sample.Labels["dry_run"]
		key := verb + " " + resource + " " + dry
		if seen[key] || verb == "GET" || verb == "LIST" || verb == "WATCH" {
			continue
		}
		seen[key] = true
		if h := histogram(before.apiserver, after.apiserver, latency, map[string]string{"verb": verb, "resource": resource, "subresource": "", "dry_run": dry}); h.count > 0 {
			what := verb + " " + resource
			if dry != "" {
				what += " (dry run)"
			}
			parts = append(parts, fmt.Sprintf("%s %.0f × %s", what, h.count, dur(h.mean())))
		}
	}
	if len(parts) == 0 {
		return "none"
	}
	slices.Sort(parts)
	return strings.Join(parts, "; ")
}

// lockstepRequests are the requests lockstep made to kube-apiserver
// between two scrapes (client-go's `rest_client_requests_total`, retries
// included), by method and answer.
func lockstepRequests(before, after *scrapes) string {
	if before == nil || after == nil {
		return "not read"
	}
	const requests = "rest_client_requests_total"
	var parts []string
	for _, method := range labelValues(after.lockstep, requests, "method") {
		for _, code := range labelValues(after.lockstep, requests, "code") {
			match := map[string]string{"method": method, "code": code}
			if d := after.lockstep.Sum(requests, match) - before.lockstep.Sum(requests, match); d > 0 {
				parts = append(parts, fmt.Sprintf("%s %s × %.0f", method, code, d))
			}
		}
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, "; ")
}
