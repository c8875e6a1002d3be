package deploy

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/lockstep-dev/lockstep/api/v1alpha1"
	"github.com/lockstep-dev/lockstep/internal/broker/fakebroker"
	"github.com/lockstep-dev/lockstep/internal/journal"
)

// TestLeastPrivilegeRBAC drives a whole instance and binding lifecycle
// through lockstep running as its service account with exactly the RBAC of
// deploy/ (see TestMain): catalog sync, access rules (which select the
// namespace by its labels, from lockstep's cache), provision, two updates (the second
// prunes an old BrokerOperation), drift corrected by resync, bind with credentials in an adopted
// Secret, unbind, deprovision, events, locks. Any rule missing from the
// ClusterRole stops one of these steps, or shows up as "forbidden" in
// lockstep's log, and fails the test.
func TestLeastPrivilegeRBAC(t *testing.T) {
	ctx := begin(t)
	c := env.admin

	sb := &v1alpha1.ServiceBroker{ObjectMeta: metav1.ObjectMeta{Name: "rbac"}, Spec: v1alpha1.ServiceBrokerSpec{URL: env.broker.URL(),
		Access: []v1alpha1.AccessRule{{Name: "rbac-test", NamespaceSelector: metav1.LabelSelector{MatchLabels: map[string]string{"team": "rbac"}},
			Services: []string{"*"}, Plans: []string{"*"}}}}}
	require.NoError(t, c.Create(ctx, sb))
	eventually(t, "the catalog is synced into the ServiceBroker's status", func() bool {
		return c.Get(ctx, client.ObjectKeyFromObject(sb), sb) == nil && meta.IsStatusConditionTrue(sb.Status.Conditions, v1alpha1.ConditionReady)
	})

	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "rbac-test", Labels: map[string]string{"team": "rbac"}}}
	require.NoError(t, c.Create(ctx, ns))
	// Parameters from a Secret: lockstep asks whether the requester may
	// read it (SubjectAccessReview), then reads it.
	require.NoError(t, c.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns.Name, Name: "db-version"},
		StringData: map[string]string{"parameters": `{"version":"16"}`}}))
	si := &v1alpha1.ServiceInstance{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns.Name, Name: "db"},
		Spec: v1alpha1.ServiceInstanceSpec{
			BrokerName: sb.Name, ServiceName: fakebroker.ServiceDB, PlanName: fakebroker.PlanSmall,
			Parameters:     params(t, map[string]any{"storageGB": 1, "region": "eu"}),
			ParametersFrom: []v1alpha1.ParametersFromSource{{SecretKeyRef: v1alpha1.SecretKeyReference{Name: "db-version", Key: "parameters"}}},
		},
	}
	require.NoError(t, c.Create(ctx, si), "provision")
	waitCommitted(ctx, t, si, v1alpha1.VerbProvision)
	require.Len(t, env.broker.Instances(), 1)
	for _, held := range env.broker.Instances() {
		assert.Equal(t, "16", held.Parameters["version"], "the parameter from the Secret reached the broker")
	}

	for _, size := range []int{2, 3} {
		require.NoError(t, c.Get(ctx, client.ObjectKeyFromObject(si), si))
		si.Spec.Parameters = params(t, map[string]any{"storageGB": size, "region": "eu"})
		require.NoError(t, c.Update(ctx, si), "update to storageGB %d", size)
		waitCommitted(ctx, t, si, v1alpha1.VerbUpdate)
	}
	// A change the broker refuses is an event (what kubectl was told of
	// an allowed change is none).
	env.broker.Script(fakebroker.OpUpdate, fakebroker.Respond{Status: 422, Description: "no capacity"})
	require.NoError(t, c.Get(ctx, client.ObjectKeyFromObject(si), si))
	si.Spec.Parameters = params(t, map[string]any{"storageGB": 9, "region": "eu"})
	require.Error(t, c.Update(ctx, si), "an update the broker refuses")
	eventually(t, "old BrokerOperations of the instance are pruned to 2", func() bool {
		return len(operationsOf(ctx, t, si)) == 2
	})

	// Drift: the broker's instance is changed behind lockstep's back.
	// Resync reads the instance past its cache before it reports drift,
	// then re-applies the spec.
	for _, held := range env.broker.Instances() {
		held.Parameters["storageGB"] = 7
		env.broker.PutInstance(held)
	}
	eventually(t, "resync re-applies the instance's spec at the broker", func() bool {
		for _, held := range env.broker.Instances() {
			return held.Parameters["storageGB"] == float64(3)
		}
		return false
	})

	sbd := &v1alpha1.ServiceBinding{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns.Name, Name: "db-creds"},
		Spec:       v1alpha1.ServiceBindingSpec{InstanceName: si.Name, Parameters: params(t, map[string]any{"role": "reader"})},
	}
	require.NoError(t, c.Create(ctx, sbd), "bind")
	waitCommitted(ctx, t, sbd, v1alpha1.VerbBind)
	eventually(t, "the credentials Secret is adopted by the binding", func() bool {
		s, err := secretOf(ctx, ns.Name, sbd.Name)
		ref := metav1.GetControllerOf(s)
		return err == nil && len(s.Data) > 0 && ref != nil && ref.UID == sbd.UID
	})

	require.NoError(t, c.Delete(ctx, sbd), "unbind")
	eventuallyGone(ctx, t, sbd)
	eventually(t, "the credentials Secret is deleted", func() bool {
		_, err := secretOf(ctx, ns.Name, sbd.Name)
		return apierrors.IsNotFound(err)
	})
	require.NoError(t, c.Delete(ctx, si), "deprovision")
	eventuallyGone(ctx, t, si)
	assert.Empty(t, env.broker.Instances(), "the broker holds what the API server holds")
	assert.Empty(t, env.broker.Bindings())

	var events corev1.EventList
	require.NoError(t, c.List(ctx, &events, client.InNamespace(ns.Name)))
	reasons := map[string]bool{}
	for _, e := range events.Items {
		reasons[e.Reason] = true
	}
	assert.NotEmpty(t, reasons, "lockstep reports the broker's refusal as an event")
	eventually(t, "every lock is released", func() bool {
		var leases coordinationv1.LeaseList
		if err := c.List(ctx, &leases, client.InNamespace("lockstep-system")); err != nil {
			return false
		}
		for _, l := range leases.Items {
			if l.Annotations[journal.AnnotationNamespace] == ns.Name {
				return false
			}
		}
		return true
	})
	assert.NotContains(t, env.logs.String(), "forbidden", "lockstep was refused something by RBAC")
}

// begin is how each test of lockstep's RBAC begins: a context that ends
// after 90 seconds, and lockstep's log printed if the test fails.
func begin(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	t.Cleanup(cancel)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("lockstep's log:\n%s", env.logs)
		}
	})
	return ctx
}

// params encodes instance or binding parameters.
func params(t *testing.T, p map[string]any) *runtime.RawExtension {
	t.Helper()
	raw, err := json.Marshal(p)
	require.NoError(t, err)
	return &runtime.RawExtension{Raw: raw}
}

// eventually polls cond for up to 30 seconds.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	require.Eventually(t, cond, 30*time.Second, 50*time.Millisecond, what)
}

// operationsOf lists the BrokerOperations of obj.
func operationsOf(ctx context.Context, t *testing.T, obj client.Object) []v1alpha1.BrokerOperation {
	t.Helper()
	var ops v1alpha1.BrokerOperationList
	require.NoError(t, env.admin.List(ctx, &ops, client.InNamespace(obj.GetNamespace()),
		client.MatchingLabels{journal.LabelTargetUID: string(obj.GetUID())}))
	return ops.Items
}

// waitCommitted waits until obj's newest operation with verb is Committed:
// lockstep wrote the record, called the broker, recorded the answer and,
// after the API server persisted the change, wrote the object's status.
func waitCommitted(ctx context.Context, t *testing.T, obj client.Object, verb v1alpha1.Verb) {
	t.Helper()
	eventually(t, string(verb)+" of "+obj.GetName()+" is committed", func() bool {
		if err := env.admin.Get(ctx, client.ObjectKeyFromObject(obj), obj); err != nil {
			return false
		}
		var newest *v1alpha1.BrokerOperation
		for _, op := range operationsOf(ctx, t, obj) {
			if op.Spec.Verb == verb && (newest == nil || op.Spec.Generation > newest.Spec.Generation) {
				newest = &op
			}
		}
		return newest != nil && newest.Spec.Generation == obj.GetGeneration() && newest.Status.Phase == v1alpha1.PhaseCommitted &&
			reported(obj, newest.Name)
	})
}

// reported says whether the object's status reports the operation: its
// controller writes it a moment after the commit.
func reported(obj client.Object, operation string) bool {
	var last *v1alpha1.LastOperation
	switch o := obj.(type) {
	case *v1alpha1.ServiceInstance:
		last = o.Status.LastOperation
	case *v1alpha1.ServiceBinding:
		last = o.Status.LastOperation
	}
	return last != nil && last.OperationName == operation
}

// eventuallyGone waits until obj no longer exists: the broker confirmed the
// delete and lockstep removed its finalizer.
func eventuallyGone(ctx context.Context, t *testing.T, obj client.Object) {
	t.Helper()
	eventually(t, obj.GetName()+" is deleted", func() bool {
		return apierrors.IsNotFound(env.admin.Get(ctx, client.ObjectKeyFromObject(obj), obj))
	})
}

// TestLeastPrivilegeTypedKinds activates a typed kind and deactivates it
// again through lockstep running with exactly the RBAC of deploy/ (and
// its admission policies): the CRD is applied and served, its edit and
// view ClusterRoles are created (which takes holding what they grant),
// and both go again. Any rule missing stops a step, or shows up as
// "forbidden" in lockstep's log. The kind's roles are in no default role
// until the ServiceBroker asks (aggregateToDefaultRoles); then
// Kubernetes' ClusterRole aggregation adds them to edit, admin and view:
// a user bound to edit in a namespace may create objects of the kind
// there while it is active, and no longer once it is not.
func TestLeastPrivilegeTypedKinds(t *testing.T) {
	ctx := begin(t)
	c := env.admin
	sb := &v1alpha1.ServiceBroker{ObjectMeta: metav1.ObjectMeta{Name: "rbac-typed"}, Spec: v1alpha1.ServiceBrokerSpec{URL: env.broker.URL(),
		TypedKinds: []v1alpha1.TypedKindActivation{{Services: []string{fakebroker.ServiceDB}, Kind: "RbacDatabase"}}}}
	require.NoError(t, c.Create(ctx, sb))
	defer func() { _ = c.Delete(context.Background(), sb) }()

	const crd = "rbacdatabases.services.lockstep.dev"
	offering := client.ObjectKey{Name: sb.Name + "." + fakebroker.ServiceDB}
	eventually(t, "the kind is served", func() bool {
		var o v1alpha1.ServiceOffering
		return c.Get(ctx, offering, &o) == nil && meta.IsStatusConditionTrue(o.Status.Conditions, v1alpha1.ConditionTypedKindReady)
	})
	roles := []string{"lockstep:services:rbacdatabases:edit", "lockstep:services:rbacdatabases:view"}
	for _, name := range roles {
		var r rbacv1.ClusterRole
		require.NoError(t, c.Get(ctx, client.ObjectKey{Name: name}, &r), "the kind's roles are there")
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "rbac-typed"}}
	require.NoError(t, client.IgnoreAlreadyExists(c.Create(ctx, ns)))
	require.NoError(t, client.IgnoreAlreadyExists(c.Create(ctx, &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "editor", Namespace: ns.Name},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "edit"},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: "erin"}},
	})))
	aggregated := func(role, verb string) bool {
		var r rbacv1.ClusterRole
		require.NoError(t, c.Get(ctx, client.ObjectKey{Name: role}, &r))
		return slices.ContainsFunc(r.Rules, func(p rbacv1.PolicyRule) bool {
			return slices.Contains(p.APIGroups, "services.lockstep.dev") && slices.Contains(p.Resources, "rbacdatabases") && slices.Contains(p.Verbs, verb)
		})
	}
	// kubectl auth can-i answers yes or no (exiting 1), and warns on stderr
	// about a resource its discovery does not know (yet, or any more).
	canCreate := func() string {
		out, _, _ := run(env.kubectl, "", "--kubeconfig", env.kubeconfig, "auth", "can-i", "create", "rbacdatabases.services.lockstep.dev", "-n", ns.Name, "--as", "erin")
		return strings.TrimSpace(out)
	}
	for _, name := range roles {
		var r rbacv1.ClusterRole
		require.NoError(t, c.Get(ctx, client.ObjectKey{Name: name}, &r))
		for k := range r.Labels {
			assert.NotContains(t, k, "aggregate-to", "%s is in no default role unless the ServiceBroker asks", name)
		}
	}
	assert.False(t, aggregated("edit", "create") || aggregated("admin", "create") || aggregated("view", "list"), "the default roles do not hold the kind")
	assert.Equal(t, "no", canCreate(), "a user bound to edit may not create objects of a kind nobody granted")

	require.NoError(t, c.Get(ctx, client.ObjectKeyFromObject(sb), sb))
	sb.Spec.TypedKinds[0].AggregateToDefaultRoles = true
	require.NoError(t, c.Update(ctx, sb), "ask for the kind in the default roles")
	eventually(t, "edit, admin and view gain the kind's rules", func() bool {
		return aggregated("edit", "create") && aggregated("admin", "create") && aggregated("view", "list")
	})
	assert.Equal(t, "yes", canCreate(), "a user bound to edit may create objects of the kind")

	require.NoError(t, c.Get(ctx, client.ObjectKeyFromObject(sb), sb))
	sb.Spec.TypedKinds = nil
	require.NoError(t, c.Update(ctx, sb), "deactivate")
	eventually(t, "the CRD and its roles go", func() bool {
		var roles rbacv1.ClusterRoleList
		err := c.Get(ctx, client.ObjectKey{Name: crd}, &apiextensionsv1.CustomResourceDefinition{})
		return apierrors.IsNotFound(err) && c.List(ctx, &roles, client.MatchingLabels{"app.kubernetes.io/managed-by": "lockstep"}) == nil && len(roles.Items) == 0
	})
	eventually(t, "edit, admin and view lose the kind's rules", func() bool {
		return !aggregated("edit", "create") && !aggregated("admin", "create") && !aggregated("view", "list")
	})
	assert.Equal(t, "no", canCreate(), "a user bound to edit may not create objects of a deactivated kind")
	assert.NotContains(t, env.logs.String(), "forbidden", "lockstep was refused something by RBAC")
}
