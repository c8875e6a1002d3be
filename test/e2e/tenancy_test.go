package e2e

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/lockstep-dev/lockstep/api/v1alpha1"
	"github.com/lockstep-dev/lockstep/internal/broker/fakebroker"
	"github.com/lockstep-dev/lockstep/internal/broker/osbapi"
	"github.com/lockstep-dev/lockstep/internal/credentials"
	"github.com/lockstep-dev/lockstep/test/framework"
)

// Two teams share the cluster: each user may edit instances, bindings and
// Secrets in the team's own namespace only (a Role and a RoleBinding, as
// an administrator would set them), and acts through the real kubectl
// with --as.

// tenant creates a namespace with labels whose instances, bindings and
// Secrets user may edit, and nothing else.
func tenant(t *testing.T, user string, labels map[string]string) string {
	t.Helper()
	ctx := context.Background()
	name := "e2e-" + user + "-" + strings.ReplaceAll(uuid.NewString()[:8], "-", "")
	require.NoError(t, cluster.client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}))
	require.NoError(t, cluster.client.Create(ctx, &rbacv1.Role{
		ObjectMeta: metav1.ObjectMeta{Namespace: name, Name: "editor"},
		Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{v1alpha1.GroupVersion.Group}, Resources: []string{"serviceinstances", "servicebindings", "brokeroperations"},
				Verbs: []string{"get", "list", "watch", "create", "update", "patch", "delete"}},
			{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"get", "list", "watch", "create", "update", "patch", "delete"}},
		},
	}))
	require.NoError(t, cluster.client.Create(ctx, &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Namespace: name, Name: "editor-" + user},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "editor"},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: user}},
	}))
	return name
}

// kubectlAs runs the real kubectl as user (impersonated by alice, a
// cluster administrator).
func kubectlAs(t *testing.T, user, stdin string, args ...string) result {
	t.Helper()
	return kubectl(t, stdin, append([]string{"--as", user}, args...)...)
}

// installAdoptRole creates the ClusterRole lockstep-adopt from
// deploy/rbac, as installing lockstep does.
func installAdoptRole(t *testing.T) {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(cluster.Root, "deploy", "rbac", "adopt_role.yaml"))
	require.NoError(t, err)
	objs, err := framework.Decode(string(raw))
	require.NoError(t, err)
	for _, o := range objs {
		if err := cluster.client.Create(context.Background(), o); err != nil && !apierrors.IsAlreadyExists(err) {
			require.NoError(t, err)
		}
	}
}

// onBehalfOf returns the broker calls made on user's behalf (by the
// originating identity lockstep sends).
func onBehalfOf(t *testing.T, b *fakebroker.Broker, user string) []fakebroker.Call {
	t.Helper()
	var out []fakebroker.Call
	for _, c := range b.Calls() {
		origin := strings.TrimPrefix(c.Header.Get(osbapi.HeaderOriginatingIdentity), "kubernetes ")
		raw, err := base64.StdEncoding.DecodeString(origin)
		if err != nil {
			continue
		}
		var who struct {
			Username string `json:"username"`
		}
		if json.Unmarshal(raw, &who) == nil && who.Username == user {
			out = append(out, c)
		}
	}
	return out
}

func adoptingInstance(ns, name, plan, externalID string) string {
	return fmt.Sprintf(`apiVersion: lockstep.dev/v1alpha1
kind: ServiceInstance
metadata: {name: %s, namespace: %s, annotations: {lockstep.dev/adopt: "true"}}
spec: {brokerName: acme, serviceName: db, planName: %s, externalID: %s}
`, name, ns, plan, externalID)
}

// TestTenantsCannotTakeOverAnotherNamespacesInstance: ben, who may edit
// namespace B only, learns the external id of ann's instance in namespace
// A. Each step of the takeover is refused, tells him only what he may
// know, and changes nothing: no broker call on his behalf, no object.
func TestTenantsCannotTakeOverAnotherNamespacesInstance(t *testing.T) {
	b := freshBroker(t)
	installAdoptRole(t)
	nsA, nsB := tenant(t, "ann", nil), tenant(t, "ben", nil)
	// The ids do not name the namespace, so that a message naming it
	// would show.
	idA, credsA := "db-"+uuid.NewString(), "creds-"+uuid.NewString()
	require.Equal(t, 0, kubectlAs(t, "ann", instanceWith(nsA, "db", "small", idA, ""), "apply", "-f", "-").ExitCode)
	require.Equal(t, 0, kubectlAs(t, "ann", bindingYAML(nsA, "creds", "db", credsA, ""), "apply", "-f", "-").ExitCode)
	b.ResetCalls()

	nothingChanged := func(t *testing.T, r result, kind, name string) {
		t.Helper()
		assert.NotEqual(t, 0, r.ExitCode)
		assert.NotContains(t, r.Stderr, nsA, "namespace A is not named to ben")
		assert.Empty(t, onBehalfOf(t, b, "ben"), "no broker call on ben's behalf")
		err := cluster.client.Get(context.Background(), client.ObjectKey{Namespace: nsB, Name: name}, newObject(kind))
		assert.True(t, apierrors.IsNotFound(err), "no %s %s/%s", kind, nsB, name)
		var ops v1alpha1.BrokerOperationList
		require.NoError(t, cluster.client.List(context.Background(), &ops, client.InNamespace(nsB)))
		assert.Empty(t, ops.Items, "no operation record in B")
	}

	t.Run("a create that names the held id", func(t *testing.T) {
		r := kubectlAs(t, "ben", instanceWith(nsB, "mine", "small", idA, ""), "apply", "-f", "-")
		assert.Contains(t, r.Stderr, `external id "`+idA+`" is already held by another instance in this cluster: a broker's id belongs to one object; `+
			`nothing was created and the broker was not called; leave spec.externalID out to get a new id, or name another one`)
		nothingChanged(t, r, "instance", "mine")
	})

	t.Run("an adoption without the permission", func(t *testing.T) {
		r := kubectlAs(t, "ben", adoptingInstance(nsB, "mine", "small", idA), "apply", "-f", "-")
		assert.Contains(t, r.Stderr, `user "ben" may not adopt: lockstep.dev/adopt=true takes over what the broker already holds, `+
			`which needs the permission "adopt" on serviceinstances.lockstep.dev in namespace "`+nsB+`"`)
		assert.Contains(t, r.Stderr, "kubectl create rolebinding lockstep-adopt --clusterrole=lockstep-adopt --user=ben -n "+nsB)
		nothingChanged(t, r, "instance", "mine")
	})

	// An administrator grants ben adoption in B, as the refusal said.
	r := kubectl(t, "", "create", "rolebinding", "lockstep-adopt", "--clusterrole=lockstep-adopt", "--user=ben", "-n", nsB)
	require.Equal(t, 0, r.ExitCode, r.Output())

	t.Run("an adoption of another namespace's instance, with the permission", func(t *testing.T) {
		r := kubectlAs(t, "ben", adoptingInstance(nsB, "mine", "small", idA), "apply", "-f", "-")
		assert.Contains(t, r.Stderr, `external id "`+idA+`" is already held by another instance in this cluster`)
		assert.NotContains(t, r.Stderr, "annotate", "how to let the holder go is for who may read it")
		nothingChanged(t, r, "instance", "mine")
	})

	t.Run("an adoption of another namespace's binding", func(t *testing.T) {
		adopt := strings.Replace(bindingYAML(nsB, "stolen", "db", credsA, ""), "  namespace: "+nsB,
			"  namespace: "+nsB+"\n  annotations: {lockstep.dev/adopt: \"true\"}", 1)
		r := kubectlAs(t, "ben", adopt, "apply", "-f", "-")
		assert.Contains(t, r.Stderr, `external id "`+credsA+`" is already held by another binding in this cluster`)
		nothingChanged(t, r, "binding", "stolen")
		_, found := getSecret(t, nsB, "stolen")
		assert.False(t, found, "no credentials in B")
	})

	t.Run("a bind to another namespace's instance", func(t *testing.T) {
		r := kubectlAs(t, "ben", bindingYAML(nsB, "stolen", "db", "stolen-"+uuid.NewString(), ""), "apply", "-f", "-")
		assert.Contains(t, r.Stderr, `spec.instanceName: Invalid value: "db": no ServiceInstance of this name in namespace "`+nsB+`"`)
		nothingChanged(t, r, "binding", "stolen")
		_, found := getSecret(t, nsB, "stolen")
		assert.False(t, found, "no credentials in B")
	})

	t.Run("who may read the holder is told which it is", func(t *testing.T) {
		r := kubectlAs(t, "ann", instanceWith(nsA, "db2", "small", idA, ""), "apply", "-f", "-")
		assert.NotEqual(t, 0, r.ExitCode)
		assert.Contains(t, r.Stderr, `external id "`+idA+`" is already held by instance "db" in namespace "`+nsA+`"`)
		assert.False(t, instanceExists(t, nsA, "db2"))
	})

	// A's instance is untouched: still held at the broker, still Ready.
	_, held := b.Instance(idA)
	assert.True(t, held)
	si := getInstance(t, nsA, "db")
	assert.True(t, meta.IsStatusConditionTrue(si.Status.Conditions, v1alpha1.ConditionReady))
	assert.Zero(t, b.Count(fakebroker.OpProvision, fakebroker.OpDeprovision, fakebroker.OpBind, fakebroker.OpUnbind))
}

func newObject(kind string) client.Object {
	if kind == "binding" {
		return &v1alpha1.ServiceBinding{}
	}
	return &v1alpha1.ServiceInstance{}
}

func instanceAt(ns, name, broker, plan string) string {
	return fmt.Sprintf(`apiVersion: lockstep.dev/v1alpha1
kind: ServiceInstance
metadata: {name: %s, namespace: %s}
spec: {brokerName: %s, serviceName: db, planName: %s}
`, name, ns, broker, plan)
}

// setAccess gives the ServiceBroker access rules and waits until every
// replica's rules are the new ones (the AccessRules condition observed
// them) and its marketplace shows them.
func setAccess(t *testing.T, broker string, rules []v1alpha1.AccessRule) {
	t.Helper()
	var sb v1alpha1.ServiceBroker
	require.NoError(t, cluster.client.Get(context.Background(), client.ObjectKey{Name: broker}, &sb))
	sb.Spec.Access = rules
	require.NoError(t, cluster.client.Update(context.Background(), &sb))
	require.Eventually(t, func() bool {
		require.NoError(t, cluster.client.Get(context.Background(), client.ObjectKey{Name: broker}, &sb))
		c := meta.FindStatusCondition(sb.Status.Conditions, v1alpha1.ConditionAccessRules)
		return c != nil && c.ObservedGeneration == sb.Generation
	}, 20*time.Second, 100*time.Millisecond, "the access rules are in force")
}

// TestAccessRulesRefuseAndAllowAsWritten: the administrator opens every
// plan to team a and the small plan to everyone; team b's provision of
// the large plan, its move to it and, once the small plan is closed too,
// its bind are refused with the rules named and nothing changed, while
// what the rules open goes through, and an instance on a plan no longer
// open keeps working.
func TestAccessRulesRefuseAndAllowAsWritten(t *testing.T) {
	broker := "restricted"
	b := marketBroker(t, broker)
	nsA, nsB := tenant(t, "ann", map[string]string{"team": "a"}), tenant(t, "ben", map[string]string{"team": "b"})
	teamA := v1alpha1.AccessRule{Name: "team-a", NamespaceSelector: metav1.LabelSelector{MatchLabels: map[string]string{"team": "a"}},
		Services: []string{"*"}, Plans: []string{"*"}}
	everyoneSmall := v1alpha1.AccessRule{Name: "everyone-small", Services: []string{"db"}, Plans: []string{"small"}}
	setAccess(t, broker, []v1alpha1.AccessRule{teamA, everyoneSmall})
	t.Cleanup(func() {
		for _, ns := range []string{nsA, nsB} {
			kubectl(t, "", "delete", "serviceinstances", "--all", "-n", ns, "--timeout=30s")
		}
		require.NoError(t, cluster.client.Delete(context.Background(), &v1alpha1.ServiceBroker{ObjectMeta: metav1.ObjectMeta{Name: broker}}))
	})

	t.Run("the marketplace shows each plan's access", func(t *testing.T) {
		var got string
		require.Eventually(t, func() bool {
			r := kubectl(t, "", "get", "serviceplans", "-l", v1alpha1.LabelBroker+"="+broker, "--sort-by=.spec.name",
				"-o", "custom-columns=PLAN:.spec.name,ACCESS:.spec.access.namespaces,RULES:.spec.access.rules")
			got = r.Stdout
			return strings.Contains(got, "team=a")
		}, 20*time.Second, 200*time.Millisecond)
		assert.Regexp(t, `(?m)^large\s+team=a\s+\[team-a\]$`, got)
		assert.Regexp(t, `(?m)^small\s+all\s+\[team-a everyone-small\]$`, got)
	})

	refused := func(t *testing.T, r result, want string) {
		t.Helper()
		assert.NotEqual(t, 0, r.ExitCode)
		assert.Contains(t, r.Stderr, want)
		assert.Empty(t, onBehalfOf(t, b, "ben"), "the broker is not called")
	}
	t.Run("a provision outside the rules", func(t *testing.T) {
		r := kubectlAs(t, "ben", instanceAt(nsB, "big", broker, "large"), "apply", "-f", "-")
		refused(t, r, `spec.planName: Forbidden: plan "large" of service "db" (broker "restricted") is not open to namespace "`+nsB+`": `+
			`access rule "team-a" opens the plan only to namespaces matching team=a; access rule "everyone-small" selects it but opens only plans "small" of services "db"; `+
			`ask a cluster administrator to open it (spec.access of ServiceBroker "restricted"), or use a plan this namespace may use (kubectl get serviceplans shows each plan's access)`)
		assert.False(t, instanceExists(t, nsB, "big"))
	})
	t.Run("a provision the rules open", func(t *testing.T) {
		r := kubectlAs(t, "ben", instanceAt(nsB, "mine", broker, "small"), "apply", "-f", "-")
		require.Equal(t, 0, r.ExitCode, r.Output())
		r = kubectlAs(t, "ann", instanceAt(nsA, "big", broker, "large"), "apply", "-f", "-")
		require.Equal(t, 0, r.ExitCode, r.Output())
	})
	b.ResetCalls()
	t.Run("a plan change outside the rules", func(t *testing.T) {
		r := kubectlAs(t, "ben", "", "patch", "serviceinstance", "mine", "-n", nsB, "--type=merge", "-p", `{"spec":{"planName":"large"}}`)
		refused(t, r, `spec.planName: Forbidden: plan "large" of service "db" (broker "restricted") is not open to namespace "`+nsB+`"`)
		assert.Equal(t, "small", getInstance(t, nsB, "mine").Spec.PlanName)
	})

	// The administrator closes the small plan to everyone but team a.
	setAccess(t, broker, []v1alpha1.AccessRule{teamA})
	t.Run("a bind of an instance whose plan is no longer open", func(t *testing.T) {
		r := kubectlAs(t, "ben", bindingYAML(nsB, "creds", "mine", "creds-"+uuid.NewString(), ""), "apply", "-f", "-")
		refused(t, r, `spec.instanceName: Forbidden: instance "mine" cannot be bound: plan "small" of service "db" (broker "restricted") is not open to namespace "`+nsB+`": `+
			`access rule "team-a" opens the plan only to namespaces matching team=a`)
		assert.False(t, bindingExists(t, nsB, "creds"))
	})
	t.Run("an instance on a plan no longer open keeps working", func(t *testing.T) {
		r := kubectlAs(t, "ben", "", "patch", "serviceinstance", "mine", "-n", nsB, "--type=merge", "-p", `{"spec":{"parameters":{"storageGB":3}}}`)
		require.Equal(t, 0, r.ExitCode, r.Output())
		assert.Len(t, onBehalfOf(t, b, "ben"), 1, "the update reached the broker")
		r = kubectlAs(t, "ben", "", "delete", "serviceinstance", "mine", "-n", nsB, "--timeout=30s")
		require.Equal(t, 0, r.ExitCode, r.Output())
		assert.False(t, instanceExists(t, nsB, "mine"))
	})
}

// TestConcurrentCreatesOfOneExternalIDPersistAtMostOne: ann in A and ben
// in B create an instance with the same external id at the same moment,
// 50 times (five ids at a time). A watch sees every instance that is ever
// persisted: at most one per id, and the broker is asked to provision each
// id once; the other create is refused with 409.
func TestConcurrentCreatesOfOneExternalIDPersistAtMostOne(t *testing.T) {
	const rounds, together = 50, 5
	b := freshBroker(t)
	nsA, nsB := tenant(t, "ann", nil), tenant(t, "ben", nil)
	run := strings.ReplaceAll(uuid.NewString()[:8], "-", "")
	label := client.MatchingLabels{"e2e.lockstep.dev/race": run}
	as := func(user string) client.Client {
		cfg := rest.CopyConfig(cluster.config)
		cfg.Impersonate = rest.ImpersonationConfig{UserName: user}
		c, err := client.New(cfg, client.Options{Scheme: cluster.client.Scheme()})
		require.NoError(t, err)
		return c
	}
	ann, ben := as("ann"), as("ben")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	// Every instance ever persisted, by external id.
	wc, err := client.NewWithWatch(cluster.config, client.Options{Scheme: cluster.client.Scheme()})
	require.NoError(t, err)
	w, err := wc.Watch(ctx, &v1alpha1.ServiceInstanceList{}, label)
	require.NoError(t, err)
	defer w.Stop()
	var mu sync.Mutex
	persisted := map[string]map[types.UID]string{}
	go func() {
		for ev := range w.ResultChan() {
			si, ok := ev.Object.(*v1alpha1.ServiceInstance)
			if !ok || ev.Type != watch.Added {
				continue
			}
			mu.Lock()
			if persisted[si.Spec.ExternalID] == nil {
				persisted[si.Spec.ExternalID] = map[types.UID]string{}
			}
			persisted[si.Spec.ExternalID][si.UID] = si.Namespace
			mu.Unlock()
		}
	}()
	// The namespaces go after the test, and their instances without their
	// broker (detach-on-delete); the next test starts once they are gone.
	t.Cleanup(func() {
		for _, ns := range []string{nsA, nsB} {
			require.NoError(t, cluster.client.Delete(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}))
		}
		require.Eventually(t, func() bool {
			var left v1alpha1.ServiceInstanceList
			require.NoError(t, cluster.client.List(context.Background(), &left, label))
			return len(left.Items) == 0
		}, 90*time.Second, 200*time.Millisecond, "the instances are deleted")
	})

	race := func(i int) [2]error {
		var errs [2]error
		start := make(chan struct{})
		var wg sync.WaitGroup
		for j, side := range []struct {
			c  client.Client
			ns string
		}{{ann, nsA}, {ben, nsB}} {
			// Deleted without the broker, so that the cleanup is quick.
			si := &v1alpha1.ServiceInstance{
				ObjectMeta: metav1.ObjectMeta{Namespace: side.ns, Name: fmt.Sprintf("race-%d", i), Labels: label,
					Annotations: map[string]string{v1alpha1.AnnotationReconcilePolicy: string(v1alpha1.PolicyDetachOnDelete)}},
				Spec: v1alpha1.ServiceInstanceSpec{BrokerName: brokerName, ServiceName: "db", PlanName: "small", ExternalID: fmt.Sprintf("race-%s-%d", run, i)},
			}
			wg.Go(func() {
				<-start
				errs[j] = side.c.Create(ctx, si)
			})
		}
		close(start)
		wg.Wait()
		return errs
	}
	results := make([][2]error, rounds)
	began := time.Now()
	sem := make(chan struct{}, together)
	var wg sync.WaitGroup
	for i := range rounds {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			results[i] = race(i)
		})
	}
	wg.Wait()
	t.Logf("%d rounds took %s", rounds, time.Since(began))

	for i, errs := range results {
		created := 0
		for _, err := range errs {
			if err == nil {
				created++
				continue
			}
			assert.True(t, apierrors.IsConflict(err), "round %d: %v", i, err)
			assert.Regexp(t, `external id "race-\S+" is (already held by another instance in this cluster|in use: a change of another instance that names it is in flight)`, err.Error())
		}
		assert.Equal(t, 1, created, "round %d: one of the two creates goes through: %v", i, errs)
	}
	require.Eventually(t, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(persisted) == rounds
	}, 10*time.Second, 50*time.Millisecond, "the watch saw every id")
	mu.Lock()
	defer mu.Unlock()
	for id, objects := range persisted {
		assert.Len(t, objects, 1, "external id %s was held by more than one object: %v", id, objects)
	}
	provisions := map[string]int{}
	for _, c := range b.Calls(fakebroker.OpProvision) {
		provisions[c.InstanceID]++
	}
	for i := range rounds {
		assert.Equal(t, 1, provisions[fmt.Sprintf("race-%s-%d", run, i)], "round %d: one provision reached the broker", i)
	}
}

// credentialsAt returns where in the cluster a Secret holds password, as
// namespace/name.
func credentialsAt(t *testing.T, password string) []string {
	t.Helper()
	var all corev1.SecretList
	require.NoError(t, cluster.client.List(context.Background(), &all))
	var at []string
	for _, s := range all.Items {
		if string(s.Data["password"]) == password {
			at = append(at, s.Namespace+"/"+s.Name)
		}
	}
	return at
}

// TestBindingsNeverCrossNamespaces: a binding names an instance of its own
// namespace only, and its credentials go into a Secret of its own
// namespace only, by every path that writes them: a bind, an adoption; a
// spec change is refused, resync writes nothing, and a deleted Secret is
// not written again anywhere.
func TestBindingsNeverCrossNamespaces(t *testing.T) {
	b := freshBroker(t)
	installAdoptRole(t)
	nsA, nsB := tenant(t, "ann", nil), tenant(t, "ben", nil)
	r := kubectl(t, "", "create", "rolebinding", "lockstep-adopt", "--clusterrole=lockstep-adopt", "--user=ann", "-n", nsA)
	require.Equal(t, 0, r.ExitCode, r.Output())
	idA := "db-" + uuid.NewString()
	require.Equal(t, 0, kubectlAs(t, "ann", instanceWith(nsA, "db", "small", idA, ""), "apply", "-f", "-").ExitCode)
	// Ben has an instance of the same name in his namespace.
	require.Equal(t, 0, kubectlAs(t, "ben", instanceWith(nsB, "db", "small", "db-"+uuid.NewString(), ""), "apply", "-f", "-").ExitCode)
	require.Equal(t, 0, kubectl(t, "", "wait", "serviceinstance", "db", "-n", nsA, "--for=condition=Ready", "--timeout=30s").ExitCode,
		"bound once its provision is committed")

	passwordOf := func(bindingID string) string {
		held, ok := b.Binding(idA, bindingID)
		require.True(t, ok)
		return held.Credentials["password"].(string)
	}
	t.Run("a bind", func(t *testing.T) {
		id := "creds-" + uuid.NewString()
		r := kubectlAs(t, "ann", bindingYAML(nsA, "creds", "db", id, ""), "apply", "-f", "-")
		require.Equal(t, 0, r.ExitCode, r.Output())
		assert.Equal(t, "/v2/service_instances/"+idA+"/service_bindings/"+id, b.Calls(fakebroker.OpBind)[0].Path, "ann's own instance, by its name in her namespace")
		assert.Equal(t, []string{nsA + "/creds"}, credentialsAt(t, passwordOf(id)))
	})
	t.Run("an adoption", func(t *testing.T) {
		id := "legacy-" + uuid.NewString()
		b.PutBinding(fakebroker.Binding{InstanceID: idA, ID: id, ServiceID: fakebroker.ServiceDBID, PlanID: fakebroker.PlanSmallID,
			Credentials: map[string]any{"username": "legacy", "password": "legacy-" + uuid.NewString()}})
		adopt := strings.Replace(bindingYAML(nsA, "legacy", "db", id, ""), "  namespace: "+nsA,
			"  namespace: "+nsA+"\n  annotations: {lockstep.dev/adopt: \"true\"}", 1)
		r := kubectlAs(t, "ann", adopt, "apply", "-f", "-")
		require.Equal(t, 0, r.ExitCode, r.Output())
		assert.Equal(t, []string{nsA + "/legacy"}, credentialsAt(t, passwordOf(id)))
	})
	t.Run("a spec change", func(t *testing.T) {
		r := kubectlAs(t, "ann", "", "patch", "servicebinding", "creds", "-n", nsA, "--type=merge", "-p", `{"spec":{"secretName":"elsewhere"}}`)
		assert.NotEqual(t, 0, r.ExitCode)
		assert.Contains(t, r.Stderr, "create-only field")
		_, found := getSecret(t, nsA, "elsewhere")
		assert.False(t, found)
	})
	creds := func() string {
		var sb v1alpha1.ServiceBinding
		require.NoError(t, cluster.client.Get(context.Background(), client.ObjectKey{Namespace: nsA, Name: "creds"}, &sb))
		return sb.Spec.ExternalID
	}()
	t.Run("resync", func(t *testing.T) {
		reads := func() int {
			n := 0
			for _, c := range b.Calls(fakebroker.OpGetBinding) {
				if c.BindingID == creds {
					n++
				}
			}
			return n
		}
		before := reads()
		require.Eventually(t, func() bool { return reads() > before }, 3*resyncInterval+5*time.Second, 100*time.Millisecond, "resync reads the binding")
		assert.Equal(t, []string{nsA + "/creds"}, credentialsAt(t, passwordOf(creds)))
	})
	t.Run("a deleted Secret", func(t *testing.T) {
		password := passwordOf(creds)
		r := kubectlAs(t, "ann", "", "delete", "secret", "creds", "-n", nsA)
		require.Equal(t, 0, r.ExitCode, r.Output())
		require.Eventually(t, func() bool {
			var sb v1alpha1.ServiceBinding
			require.NoError(t, cluster.client.Get(context.Background(), client.ObjectKey{Namespace: nsA, Name: "creds"}, &sb))
			c := meta.FindStatusCondition(sb.Status.Conditions, v1alpha1.ConditionReady)
			return c != nil && c.Reason == "CredentialsMissing"
		}, 10*time.Second, 100*time.Millisecond, "the binding says its credentials are gone")
		assert.Empty(t, credentialsAt(t, password), "not written again, anywhere")
	})

	// Nothing of A's bindings is in B.
	var inB corev1.SecretList
	require.NoError(t, cluster.client.List(context.Background(), &inB, client.InNamespace(nsB)))
	for _, s := range inB.Items {
		assert.NotContains(t, s.Labels, credentials.LabelBindingUID, "Secret %s/%s", s.Namespace, s.Name)
	}
}
