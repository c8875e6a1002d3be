package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/lockstep-dev/lockstep/api/v1alpha1"
	"github.com/lockstep-dev/lockstep/internal/admission"
	"github.com/lockstep-dev/lockstep/internal/broker/fakebroker"
	"github.com/lockstep-dev/lockstep/internal/broker/osbapi"
	"github.com/lockstep-dev/lockstep/internal/controller/controllertest"
	"github.com/lockstep-dev/lockstep/internal/journal"
	"github.com/lockstep-dev/lockstep/internal/typed/object"
	"github.com/lockstep-dev/lockstep/internal/typed/render"
)

// installTypedKind installs the typed kind of service of the test
// broker's catalog as lockstep renders it (service db: kind Db, resource
// dbs.services.lockstep.dev) until the test ends, with a kubectl
// discovery cache of the test's own (see controllertest.InstallTypedKind).
func installTypedKind(t *testing.T, service string) object.Kind {
	t.Helper()
	t.Setenv("KUBECACHEDIR", t.TempDir())
	cat := cluster.broker.Catalog()
	i := slices.IndexFunc(cat.Services, func(s osbapi.Service) bool { return s.Name == service })
	require.GreaterOrEqual(t, i, 0)
	kind, _ := controllertest.InstallTypedKind(t, cluster.config, brokerName, &cat.Services[i])
	return kind
}

// kvSchema is the create schema of service kv: region is create-only
// (not in the update schema); size is at most max (the plans differ in
// it); tier is one of a and b.
func kvSchema(max int, update bool) string {
	region := `, "region": {"type": "string"}`
	if update {
		region = ""
	}
	return fmt.Sprintf(`{"$schema": "http://json-schema.org/draft-04/schema#", "type": "object",
  "properties": {"size": {"type": "integer", "maximum": %d}, "tier": {"type": "string", "enum": ["a", "b"]}%s}}`, max, region)
}

// addKVService adds service kv to the test broker's catalog until the test
// ends: plans standard (size at most 10) and pinned (at most 100; it may
// not change plan), both with schemas, so that the CRD of its typed kind
// holds the create-only rule of region, the rule of plan changes, the
// enum of tier and the looser bound of size.
func addKVService(t *testing.T) {
	t.Helper()
	original := cluster.broker.Catalog()
	cat := cluster.broker.Catalog()
	no := false
	schemas := func(max int) *osbapi.Schemas {
		return &osbapi.Schemas{ServiceInstance: &osbapi.ServiceInstanceSchemas{
			Create: &osbapi.InputParameters{Parameters: json.RawMessage(kvSchema(max, false))},
			Update: &osbapi.InputParameters{Parameters: json.RawMessage(kvSchema(max, true))},
		}}
	}
	cat.Services = append(cat.Services, osbapi.Service{ID: "kv-service-id", Name: "kv", Description: "A key-value store", PlanUpdateable: true,
		Plans: []osbapi.Plan{
			{ID: "kv-standard-plan-id", Name: "standard", Description: "standard", Schemas: schemas(10)},
			{ID: "kv-pinned-plan-id", Name: "pinned", Description: "cannot change plan", PlanUpdateable: &no, Schemas: schemas(100)},
		}})
	require.NoError(t, cluster.broker.SetCatalog(cat))
	refreshCatalog(t)
	t.Cleanup(func() {
		require.NoError(t, cluster.broker.SetCatalog(original))
		refreshCatalog(t)
	})
}

// typedSide is one way to ask for an instance of service db in the
// end-to-end table: a ServiceInstance or an object of kind Db.
type typedSide struct {
	name, ns, resource string
	manifest           func(ns, plan, params string) string
	// binding is the manifest of binding creds of instance db1.
	binding func(ns string) string
	// get reads instance ns/db1 as its model; false when it is gone.
	get func(ns string) (*v1alpha1.ServiceInstance, bool)
	// normal says the side's answers in a ServiceInstance's words.
	normal func(s string) string
}

// dbManifest is object db1 of kind Db.
func dbManifest(ns, plan, params string) string { return typedManifest("Db", ns, "db1", plan, params) }

// typedManifest is object name of typed kind kind.
func typedManifest(kind, ns, name, plan, params string) string {
	return fmt.Sprintf(`apiVersion: services.lockstep.dev/v1alpha1
kind: %s
metadata:
  name: %s
  namespace: %s
spec:
  plan: %s
  externalID: %s-%s
  parameters: %s
`, kind, name, ns, plan, ns, name, params)
}

// deniedBy is the message of a webhook's refusal in kubectl's output; ""
// when kubectl succeeded.
func deniedBy(r result) string {
	if r.ExitCode == 0 {
		return ""
	}
	out := r.Output()
	if i := strings.Index(out, "denied the request: "); i >= 0 {
		return strings.TrimSpace(out[i+len("denied the request: "):])
	}
	return strings.TrimSpace(out)
}

// TestTypedKindIsAdmittedAsServiceInstance: through kubectl, the same
// changes of a ServiceInstance and of an object of typed kind Db of the
// same service, and of a binding of each, with the same broker behaviour,
// get the same answers (in the words of each kind), the same broker calls,
// once lockstep's reconcilers caught up the same status of the instance
// and of the binding and the same keys in the binding's Secret, and the
// same journal records, which name the typed kind.
func TestTypedKindIsAdmittedAsServiceInstance(t *testing.T) {
	kind := installTypedKind(t, fakebroker.ServiceDB)
	b := freshBroker(t)
	nsSI, nsTyped := namespace(t), namespace(t)
	ctx := context.Background()
	sides := []typedSide{
		{name: "ServiceInstance", ns: nsSI, resource: "serviceinstance",
			manifest: func(ns, plan, params string) string { return instanceWith(ns, "db1", plan, ns+"-db1", params) },
			binding:  func(ns string) string { return bindingYAML(ns, "creds", "db1", ns+"-creds", "") },
			get: func(ns string) (*v1alpha1.ServiceInstance, bool) {
				si := &v1alpha1.ServiceInstance{}
				err := cluster.client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "db1"}, si)
				require.NoError(t, client.IgnoreNotFound(err))
				return si, err == nil
			},
			normal: func(s string) string { return s }},
		{name: "typed kind", ns: nsTyped, resource: "dbs.services.lockstep.dev", manifest: dbManifest,
			binding: func(ns string) string { return typedBindingYAML(ns, "creds", kind.GVK.Kind, "db1", ns+"-creds") },
			get: func(ns string) (*v1alpha1.ServiceInstance, bool) {
				u := &unstructured.Unstructured{}
				u.SetGroupVersionKind(kind.GVK)
				err := cluster.client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "db1"}, u)
				require.NoError(t, client.IgnoreNotFound(err))
				if err != nil {
					return nil, false
				}
				si, err := object.ToInstance(u, kind)
				require.NoError(t, err)
				return si, true
			},
			normal: strings.NewReplacer(nsTyped, nsSI,
				"typed.validate.lockstep.dev", "serviceinstances.validate.lockstep.dev",
				"Db.services.lockstep.dev", "ServiceInstance.lockstep.dev",
				`The Db "`, `The ServiceInstance "`,
				"spec.plan", "spec.planName",
				"kubectl annotate db ", "kubectl annotate serviceinstance ").Replace},
	}
	apply := func(plan, params string, flags ...string) func(s typedSide) result {
		return func(s typedSide) result {
			return kubectl(t, s.manifest(s.ns, plan, params), append([]string{"apply", "-f", "-"}, flags...)...)
		}
	}
	del := func(s typedSide) result {
		return kubectl(t, "", "delete", s.resource, "db1", "-n", s.ns, "--wait=false")
	}
	bind := func(s typedSide) result { return kubectl(t, s.binding(s.ns), "apply", "-f", "-") }
	unbind := func(s typedSide) result { return kubectl(t, "", "delete", "servicebinding", "creds", "-n", s.ns) }
	steps := []struct {
		name   string
		script func(b *fakebroker.Broker, id string)
		do     func(s typedSide) result
		denied string // a fragment of the refusal, in a ServiceInstance's words; "" when allowed
		// retry says that a refusal just before may be repeated for a
		// moment without asking the broker: the test retries, as a person
		// would, until the request succeeds.
		retry bool
	}{
		{name: "create", do: apply("small", `{"storageGB": 10, "region": "eu"}`)},
		{name: "dry-run plan change", do: apply("large", `{"storageGB": 10, "region": "eu"}`, "--dry-run=server")},
		{name: "parameters update", do: apply("small", `{"storageGB": 20, "region": "eu"}`)},
		{name: "parameters against the schema", do: apply("small", `{"storageGB": 5000, "region": "eu"}`), denied: "spec.parameters.storageGB"},
		{name: "plan change", do: apply("large", `{"storageGB": 20, "region": "eu"}`)},
		{name: "update refused by the broker", do: apply("large", `{"storageGB": 30, "region": "eu"}`), denied: "no room for 30GB",
			script: func(b *fakebroker.Broker, id string) {
				b.ScriptInstance(fakebroker.OpUpdate, id, fakebroker.Respond{Status: 422, Error: "QuotaExceeded", Description: "no room for 30GB"})
			}},
		{name: "bind", do: bind},
		{name: "unbind", do: unbind},
		{name: "delete refused by the broker", do: del, denied: "backups running",
			script: func(b *fakebroker.Broker, id string) {
				b.ScriptInstance(fakebroker.OpDeprovision, id, fakebroker.Respond{Status: 400, Error: "BadRequest", Description: "backups running"})
			}},
		{name: "delete", do: del, retry: true},
	}
	for _, step := range steps {
		var answers []string
		var calls []int
		for _, s := range sides {
			id := s.ns + "-db1"
			if step.script != nil {
				step.script(b, id)
			}
			before := len(callsOf(b, id))
			// A change right after the last one may find its lock not yet
			// released (the operations reconciler commits it): a person
			// retries, and so does the test, on that answer only.
			var r result
			require.Eventually(t, func() bool {
				r = step.do(s)
				if step.retry && r.ExitCode != 0 {
					return false
				}
				return !strings.Contains(r.Output(), "in flight") && !strings.Contains(r.Output(), "is in progress")
			}, 30*time.Second, 200*time.Millisecond)
			answers = append(answers, s.normal(deniedBy(r)))
			calls = append(calls, len(callsOf(b, id))-before)
		}
		assert.Equal(t, answers[0], answers[1], "step %q: the same answer", step.name)
		assert.Equal(t, calls[0], calls[1], "step %q: the same broker calls", step.name)
		if step.denied == "" {
			assert.Empty(t, answers[0], "step %q is allowed", step.name)
		} else {
			assert.Contains(t, answers[0], step.denied, "step %q", step.name)
		}
		assert.Equal(t, settled(t, sides[0]), settled(t, sides[1]), "step %q: the same status", step.name)
	}

	// The records are written after each answer, and committed by the
	// operations reconciler: read them once every one is final.
	records := func(s typedSide) []string {
		var ops v1alpha1.BrokerOperationList
		require.NoError(t, cluster.client.List(context.Background(), &ops, client.InNamespace(s.ns)))
		slices.SortFunc(ops.Items, func(a, b v1alpha1.BrokerOperation) int {
			return strings.Compare(a.Annotations["lockstep.dev/started"], b.Annotations["lockstep.dev/started"])
		})
		var out []string
		for _, op := range ops.Items {
			outcome := "done"
			switch op.Status.Phase {
			case v1alpha1.PhaseFailed:
				outcome = "failed"
			case v1alpha1.PhaseCommitted:
			default:
				outcome = "pending"
			}
			out = append(out, fmt.Sprintf("%s %s %d %s", op.Spec.Verb, outcome, op.Status.HTTPStatus, s.normal(op.Status.Description)))
			if s.ns == nsTyped && op.Spec.Target.Kind != v1alpha1.TargetKind("ServiceBinding") {
				assert.Equal(t, v1alpha1.TargetKind("Db"), op.Spec.Target.Kind)
				assert.Equal(t, render.Group, op.Spec.Target.APIGroup)
				assert.Equal(t, "Db", op.Labels[journal.LabelTargetKind])
			}
		}
		return out
	}
	var si, typed []string
	require.Eventually(t, func() bool {
		si, typed = records(sides[0]), records(sides[1])
		return len(si) == 8 && !slices.ContainsFunc(append(si, typed...), func(r string) bool { return strings.Contains(r, " pending ") })
	}, 30*time.Second, 200*time.Millisecond, "provision, two updates, a refused update, a bind, an unbind, a refused and a carried out deprovision, all final")
	assert.Equal(t, si, typed, "the same journal")
	out := kubectl(t, "", "get", "brokeroperations", "-n", nsTyped, "-o", "wide").Output()
	assert.Contains(t, out, "Db")
	assert.Contains(t, out, render.Group)
}

// settled is what side s shows once lockstep's reconcilers caught up with
// the records of instance db1 and of binding creds (each object's last
// operation is its last record, answered): their status (absent when
// gone), in a ServiceInstance's words, without times and record names,
// and the keys of the binding's Secret.
func settled(t *testing.T, s typedSide) map[string]any {
	t.Helper()
	ctx := context.Background()
	var shown map[string]any
	require.Eventually(t, func() bool {
		shown = map[string]any{}
		caughtUp := func(obj client.Object, last *v1alpha1.LastOperation) bool {
			var ops v1alpha1.BrokerOperationList
			require.NoError(t, cluster.client.List(ctx, &ops, client.InNamespace(s.ns), client.MatchingLabels{journal.LabelTargetUID: string(obj.GetUID())}))
			answered := journal.Answered(ops.Items)
			return obj.GetDeletionTimestamp() == nil && len(ops.Items) > 0 && last != nil && answered != nil &&
				last.OperationName == answered.Name && !slices.ContainsFunc(ops.Items, func(op v1alpha1.BrokerOperation) bool {
				return op.Status.Phase != v1alpha1.PhaseCommitted && op.Status.Phase != v1alpha1.PhaseFailed
			})
		}
		if si, ok := s.get(s.ns); ok {
			if !caughtUp(si, si.Status.LastOperation) {
				return false
			}
			shown["instance"] = normalStatus(t, s, si.Status)
		}
		sb := &v1alpha1.ServiceBinding{}
		if err := cluster.client.Get(ctx, client.ObjectKey{Namespace: s.ns, Name: "creds"}, sb); err == nil {
			if !caughtUp(sb, sb.Status.LastOperation) {
				return false
			}
			shown["binding"] = normalStatus(t, s, sb.Status)
		} else {
			require.True(t, apierrors.IsNotFound(err), err)
		}
		if secret, ok := getSecret(t, s.ns, "creds"); ok {
			shown["secret"] = slices.Sorted(maps.Keys(secret.Data))
		}
		return true
	}, 30*time.Second, 100*time.Millisecond, "%s: the status reports the last record", s.name)
	return shown
}

// normalStatus is status as JSON, every string in a ServiceInstance's
// words, without the times of its conditions and of its last operation,
// nor the name of that operation's record.
func normalStatus(t *testing.T, s typedSide, status any) map[string]any {
	t.Helper()
	raw, err := json.Marshal(status)
	require.NoError(t, err)
	var out map[string]any
	require.NoError(t, json.Unmarshal(raw, &out))
	conds, _ := out["conditions"].([]any)
	for _, c := range conds {
		delete(c.(map[string]any), "lastTransitionTime")
	}
	if last, ok := out["lastOperation"].(map[string]any); ok {
		delete(last, "startTime")
		delete(last, "endTime")
		delete(last, "operationName")
	}
	return inWords(out, s.normal).(map[string]any)
}

// inWords is v, decoded JSON, with normal applied to every string in it.
func inWords(v any, normal func(string) string) any {
	switch v := v.(type) {
	case string:
		return normal(v)
	case []any:
		for i := range v {
			v[i] = inWords(v[i], normal)
		}
	case map[string]any:
		for k := range v {
			v[k] = inWords(v[k], normal)
		}
	}
	return v
}

// callsOf are the broker's calls about instance id that change it or its
// bindings.
func callsOf(b *fakebroker.Broker, id string) []fakebroker.Call {
	var out []fakebroker.Call
	for _, c := range b.Calls(fakebroker.OpProvision, fakebroker.OpUpdate, fakebroker.OpDeprovision, fakebroker.OpBind, fakebroker.OpUnbind) {
		if c.InstanceID == id {
			out = append(out, c)
		}
	}
	return out
}

// TestTypedKindEveryErrorAtOnce: a change of an object of a typed kind
// with errors the API server's schema check finds (an enum, a type) and
// errors only lockstep finds (a plan's own bound, a create-only change,
// a plan change the catalog forbids) is refused once, by lockstep's
// mutating webhook, with every error and without the API server's line
// "some validation rules were not checked"; the validating webhook is not
// called for it. A ServiceInstance whose spec.parameters is not an object
// is refused the same way. The status stays lockstep's only.
func TestTypedKindEveryErrorAtOnce(t *testing.T) {
	freshBroker(t)
	addKVService(t)
	kv := installTypedKind(t, "kv")
	ns := namespace(t)
	// On both plans region is create-only; kv2's plan may not change.
	retried(t, typedManifest("Kv", ns, "kv1", "standard", `{"region": "eu"}`), "apply", "-f", "-")
	retried(t, typedManifest("Kv", ns, "kv2", "pinned", `{"region": "eu"}`), "apply", "-f", "-")
	retried(t, instanceWith(ns, "si1", "small", ns+"-si1", ""), "apply", "-f", "-")

	// fenced makes a request that lockstep answers on another path (a
	// dry-run create of a ServiceInstance) and returns the counts once it
	// is counted: a request to the typed kind's webhooks before it would
	// have been counted first.
	fenced := func() map[string]int {
		from := webhookRequests(t)[admission.ValidateInstancePath]
		r := kubectl(t, instanceWith(ns, "fence", "small", ns+"-fence", ""), "apply", "--dry-run=server", "-f", "-")
		require.Equal(t, 0, r.ExitCode, r.Output())
		var got map[string]int
		require.Eventually(t, func() bool {
			got = webhookRequests(t)
			return got[admission.ValidateInstancePath] > from
		}, 10*time.Second, 50*time.Millisecond, "the fence is counted")
		return got
	}
	before := fenced()
	for _, tc := range []struct {
		name, stdin string
		args, want  []string
	}{{
		name: "an update with errors of both sorts",
		args: []string{"patch", "kvs.services.lockstep.dev", "kv1", "-n", ns, "--type=merge", "-p", `{"spec":{"parameters":{"size":40,"tier":"z","region":"us"}}}`},
		want: []string{
			`The Kv "kv1" is invalid: `,
			`* spec.parameters.region: Invalid value: "us": create-only parameter`,
			`* spec.parameters.size: Invalid value: 40: does not match the plan's update schema at /size: must be <= 10`,
			`* spec.parameters.tier: Invalid value: "z": does not match the plan's update schema at /tier`,
		},
	}, {
		name: "a plan change the catalog forbids, and a type",
		args: []string{"patch", "kvs.services.lockstep.dev", "kv2", "-n", ns, "--type=merge", "-p", `{"spec":{"plan":"standard","parameters":{"size":"big"}}}`},
		want: []string{`The Kv "kv2" is invalid: `, `* spec.plan: Invalid value: "standard"`, `* spec.parameters.size: Invalid value: "big"`},
	}, {
		name:  "a create on a plan the catalog does not have, with a value the CRD refuses",
		stdin: typedManifest("Kv", ns, "kv3", "huge", `{"tier": "z", "size": 4000}`),
		args:  []string{"apply", "-f", "-"},
		want: []string{`The Kv "kv3" is invalid: `, `* spec.plan: Invalid value: "huge"`,
			`* spec.parameters.tier: Unsupported value: "z": supported values: "a", "b"`, `* spec.parameters.size: Invalid value: 4000: spec.parameters.size in body should be less than or equal to 100`},
	}, {
		name:  "a dry run, the same",
		stdin: typedManifest("Kv", ns, "kv3", "standard", `{"tier": "z", "size": 40}`),
		args:  []string{"apply", "--dry-run=server", "-f", "-"},
		want:  []string{`The Kv "kv3" is invalid: `, `* spec.parameters.size: Invalid value: 40: does not match the plan's create schema at /size: must be <= 10`, `* spec.parameters.tier: `},
	}, {
		name: "a ServiceInstance's parameters that are not an object",
		args: []string{"patch", "serviceinstance", "si1", "-n", ns, "--type=merge", "-p", `{"spec":{"parameters":"big"}}`},
		want: []string{`The ServiceInstance "si1" is invalid: spec.parameters: Invalid value: "big": must be a JSON object that maps parameter names to values, not a string`},
	}, {
		name:  "a ServiceInstance created on a plan the catalog does not have, with parameters that are not an object",
		stdin: instanceWith(ns, "si2", "huge", ns+"-si2", `[1, 2]`),
		args:  []string{"apply", "-f", "-"},
		want: []string{`The ServiceInstance "si2" is invalid: `, `* spec.planName: Invalid value: "huge"`,
			`* spec.parameters: Invalid value: [1,2]: must be a JSON object that maps parameter names to values, not an array`},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			r := kubectl(t, tc.stdin, tc.args...)
			require.NotEqual(t, 0, r.ExitCode, r.Output())
			for _, w := range tc.want {
				assert.Contains(t, r.Output(), w)
			}
			assert.NotContains(t, r.Output(), "some validation rules were not checked")
		})
	}
	after := fenced()
	assert.Equal(t, before[admission.ValidateTypedPath], after[admission.ValidateTypedPath], "the validating webhook is not called for what the mutating one refused")
	assert.Greater(t, after[admission.MutateTypedPath], before[admission.MutateTypedPath], "the mutating webhook answered")

	read := func(name string, fields ...string) string {
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(kv.GVK)
		require.NoError(t, cluster.client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, u))
		v, _, _ := unstructured.NestedString(u.Object, fields...)
		return v
	}
	r := kubectl(t, "", "patch", "kvs.services.lockstep.dev", "kv1", "-n", ns, "--subresource=status", "--type=merge",
		"-p", `{"status":{"dashboardURL":"https://evil.example"}}`)
	assert.NotEqual(t, 0, r.ExitCode)
	assert.Contains(t, r.Output(), `the status of Kv "kv1" is written by lockstep only`, "the status guard covers typed kinds")
	assert.Equal(t, "eu", read("kv1", "spec", "parameters", "region"), "nothing changed")
	assert.Equal(t, "pinned", read("kv2", "spec", "plan"), "nothing changed")
	r = kubectl(t, "", "get", "kvs.services.lockstep.dev", "kv3", "-n", ns)
	assert.NotEqual(t, 0, r.ExitCode, "kv3 was never created")
}

// TestTypedKindAndServiceInstanceNeverShareAnExternalID: a ServiceInstance
// created with the external id of an object of a typed kind is refused,
// and the other way round. The typed object is defaulted as a
// ServiceInstance is (its broker, the finalizer).
func TestTypedKindAndServiceInstanceNeverShareAnExternalID(t *testing.T) {
	installTypedKind(t, fakebroker.ServiceDB)
	freshBroker(t)
	ns := namespace(t)
	retried(t, typedManifest("Db", ns, "held", "small", `{}`), "apply", "-f", "-")
	retried(t, instanceWith(ns, "si-held", "small", ns+"-si-held", ""), "apply", "-f", "-")
	held := &unstructured.Unstructured{}
	held.SetGroupVersionKind(schema.GroupVersionKind{Group: render.Group, Version: render.Version, Kind: "Db"})
	require.NoError(t, cluster.client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "held"}, held))
	broker, _, _ := unstructured.NestedString(held.Object, "spec", "brokerName")
	assert.Equal(t, brokerName, broker, "spec.brokerName is defaulted to the kind's broker")
	assert.Equal(t, []string{v1alpha1.Finalizer}, held.GetFinalizers())
	r := kubectl(t, instanceWith(ns, "si", "small", ns+"-held", ""), "apply", "-f", "-")
	assert.NotEqual(t, 0, r.ExitCode)
	assert.Contains(t, r.Output(), fmt.Sprintf(`external id %q is already held by Db "held" in namespace %q`, ns+"-held", ns))
	r = kubectl(t, strings.Replace(typedManifest("Db", ns, "typed", "small", `{}`), ns+"-typed", ns+"-si-held", 1), "apply", "-f", "-")
	assert.NotEqual(t, 0, r.ExitCode)
	assert.Contains(t, r.Output(), fmt.Sprintf(`external id %q is already held by instance "si-held" in namespace %q`, ns+"-si-held", ns))
}
