package deploy

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// rightsNamespace is a team's namespace in these tests, with a Secret
// that lockstep did not write.
const rightsNamespace = "rights-test"

// waitRightsPolicies waits until the API server enforces each of the
// admission policies deploy/rbac installs (they are in force a moment
// after they are created): until lockstep's service account (c) is
// refused a dry-run write that only a policy refuses, for each kind.
func waitRightsPolicies(ctx context.Context, c client.Client) error {
	probes := map[string]func() client.Object{
		"lockstep-clusterrole-writes": func() client.Object {
			return &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "lockstep-policy-probe"}}
		},
		"lockstep-secret-writes": func() client.Object {
			return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "lockstep-policy-probe"}}
		},
		"lockstep-crd-writes": func() client.Object { return otherGroupCRD("probes") },
	}
	deadline := time.Now().Add(time.Minute)
	for name, probe := range probes {
		for {
			err := c.Create(ctx, probe(), client.DryRunAll)
			if apierrors.IsForbidden(err) {
				break
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("the admission policy %s does not refuse lockstep's writes after a minute (the last answer: %v)", name, err)
			}
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(100 * time.Millisecond):
			}
		}
	}
	return nil
}

// otherGroupCRD is a CRD of another project's group, example.com.
func otherGroupCRD(plural string) *apiextensionsv1.CustomResourceDefinition {
	return crd(plural, "example.com", nil)
}

// crd is a namespaced CRD of plural in group, with labels.
func crd(plural, group string, labels map[string]string) *apiextensionsv1.CustomResourceDefinition {
	kind := string(plural[0]-'a'+'A') + plural[1:len(plural)-1]
	return &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: plural + "." + group, Labels: labels},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: group, Scope: apiextensionsv1.NamespaceScoped,
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: plural, Singular: plural[:len(plural)-1], Kind: kind, ListKind: kind + "List"},
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{Name: "v1alpha1", Served: true, Storage: true,
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{Type: "object",
					XPreserveUnknownFields: ptr.To(true)}}}},
		},
	}
}

// lockstepsLabel is the label of the CRDs and ClusterRoles lockstep
// writes for typed kinds.
var lockstepsLabel = map[string]string{"app.kubernetes.io/managed-by": "lockstep"}

// kindRole is a ClusterRole named as a typed kind's, labelled as
// lockstep's (and with labels), with rules.
func kindRole(name string, labels map[string]string, rules ...rbacv1.PolicyRule) *rbacv1.ClusterRole {
	l := map[string]string{"app.kubernetes.io/managed-by": "lockstep"}
	for k, v := range labels {
		l[k] = v
	}
	return &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: l}, Rules: rules}
}

// widgetRules are what a typed kind's view role grants on the kind
// widgets.
var widgetRules = []rbacv1.PolicyRule{
	{APIGroups: []string{"services.lockstep.dev"}, Resources: []string{"widgets"}, Verbs: []string{"get", "list", "watch"}},
	{APIGroups: []string{"services.lockstep.dev"}, Resources: []string{"widgets/status"}, Verbs: []string{"get", "list", "watch"}},
}

var secretsRule = rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"get", "list", "watch"}}

// bindingSecret is a Secret as lockstep writes it for a binding.
func bindingSecret(ns, name string, typ corev1.SecretType) *corev1.Secret {
	return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name,
		Labels: map[string]string{"lockstep.dev/binding-uid": "0b7c54a2-9f1e-4d4e-8f36-2f0d1b9a6c11"}}, Type: typ,
		StringData: map[string]string{"password": "s3cret"}}
}

// TestLockstepsRightsAreBounded acts as lockstep's service account, with
// exactly the RBAC and admission policies of deploy/, and tries what a
// compromised lockstep could otherwise do with the cluster-wide rights
// its work needs: every attempt is refused, and nothing changed. What
// lockstep's work does write passes (dry runs), so that a refusal is the
// policy's and not a request the API server would refuse anyway; the
// other tests of this package run lockstep's whole work under the same
// rights.
func TestLockstepsRightsAreBounded(t *testing.T) {
	ctx := begin(t)
	admin, as := env.admin, env.asLockstep

	require.NoError(t, client.IgnoreAlreadyExists(admin.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: rightsNamespace}})))
	theirs := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: rightsNamespace, Name: "app-password"}, StringData: map[string]string{"password": "hunter2"}}
	require.NoError(t, client.IgnoreAlreadyExists(admin.Create(ctx, theirs)))
	otherCRD := otherGroupCRD("widgets")
	require.NoError(t, client.IgnoreAlreadyExists(admin.Create(ctx, otherCRD)))
	notLockstepsRole := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "lockstep:services:others:view"}, Rules: widgetRules}
	require.NoError(t, client.IgnoreAlreadyExists(admin.Create(ctx, notLockstepsRole)))

	t.Run("allowed: what lockstep's work writes", func(t *testing.T) {
		for _, obj := range []client.Object{
			bindingSecret(rightsNamespace, "db-creds", corev1.SecretTypeOpaque),
			kindRole("lockstep:services:widgets:view", map[string]string{"rbac.authorization.k8s.io/aggregate-to-view": "true",
				"services.lockstep.dev/broker": "acme"}, widgetRules...),
			crd("widgets", "services.lockstep.dev", lockstepsLabel),
			&coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: "lockstep-system", Name: "rights-test-lock"}},
			// lockstep's own configuration, in its namespace.
			&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "lockstep-system", Name: "lockstep-settings",
				Labels: map[string]string{"app.kubernetes.io/name": "lockstep"}}, StringData: map[string]string{"key": "v"}},
		} {
			assert.NoError(t, as.Create(ctx, obj, client.DryRunAll), "%T %s", obj, obj.GetName())
		}
	})

	secretPatch := func(s *corev1.Secret) func() error {
		return func() error {
			return as.Patch(ctx, s.DeepCopy(), client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"labels":{"lockstep.dev/binding-uid":"x"}},"stringData":{"password":"mine"}}`)))
		}
	}
	tests := []struct {
		name string
		try  func() error
		// created is what the attempt would have created: deleted should
		// it not be refused.
		created client.Object
		want    string // in the refusal; "" for any Forbidden
	}{
		{name: "a ClusterRole that gives view the Secrets",
			created: &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "secrets-viewer",
				Labels: map[string]string{"rbac.authorization.k8s.io/aggregate-to-view": "true"}}, Rules: []rbacv1.PolicyRule{secretsRule}},
			want: "lockstep writes only the ClusterRoles of typed kinds"},
		{name: "a typed kind's view role with rules on Secrets",
			created: kindRole("lockstep:services:widgets:view", map[string]string{"rbac.authorization.k8s.io/aggregate-to-view": "true"},
				append([]rbacv1.PolicyRule{secretsRule}, widgetRules...)...),
			want: "grants only what its access (edit or view) grants, on that kind's objects"},
		{name: "a typed kind's view role on another kind",
			created: kindRole("lockstep:services:widgets:view", nil, rbacv1.PolicyRule{APIGroups: []string{"services.lockstep.dev"},
				Resources: []string{"gadgets"}, Verbs: []string{"get"}}),
			want: "grants only what its access (edit or view) grants, on that kind's objects"},
		{name: "a typed kind's view role that grants create",
			created: kindRole("lockstep:services:widgets:view", nil, rbacv1.PolicyRule{APIGroups: []string{"services.lockstep.dev"},
				Resources: []string{"widgets"}, Verbs: []string{"get", "create"}}),
			want: "grants only what its access (edit or view) grants"},
		{name: "a typed kind's view role aggregated into edit",
			created: kindRole("lockstep:services:widgets:view", map[string]string{"rbac.authorization.k8s.io/aggregate-to-edit": "true"}, widgetRules...),
			want:    "no aggregation label but"},
		{name: "a typed kind's role aggregated into another project's role",
			created: kindRole("lockstep:services:widgets:view", map[string]string{"example.com/aggregate-to-monitoring": "true"}, widgetRules...),
			want:    "no aggregation label but"},
		{name: "a typed kind's role with an aggregationRule",
			created: &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "lockstep:services:widgets:edit", Labels: lockstepsLabel},
				AggregationRule: &rbacv1.AggregationRule{ClusterRoleSelectors: []metav1.LabelSelector{{MatchLabels: map[string]string{"rbac.authorization.k8s.io/aggregate-to-admin": "true"}}}}}},
		{name: "a typed kind's role not labelled as lockstep's",
			created: &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "lockstep:services:widgets:view"}, Rules: widgetRules},
			want:    "labelled app.kubernetes.io/managed-by=lockstep"},
		// Rules lockstep holds (no RBAC escalation to refuse it first).
		{name: "changing a ClusterRole of the cluster",
			try: func() error {
				return as.Patch(ctx, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "lockstep-servicebinding-reader"}},
					client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"labels":{"x":"y"}}}`)))
			},
			want: "lockstep writes only the ClusterRoles of typed kinds"},
		{name: "changing a kind's role that lockstep did not create",
			try: func() error {
				return as.Patch(ctx, notLockstepsRole.DeepCopy(), client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"labels":{"app.kubernetes.io/managed-by":"lockstep"}}}`)))
			},
			want: "lockstep changes and deletes only the ClusterRoles it created"},
		{name: "deleting a kind's role that lockstep did not create",
			try:  func() error { return as.Delete(ctx, notLockstepsRole.DeepCopy()) },
			want: "lockstep changes and deletes only the ClusterRoles it created"},
		{name: "deleting a ClusterRole of the cluster",
			try: func() error {
				return as.Delete(ctx, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "lockstep-adopt"}})
			},
			want: "lockstep writes only the ClusterRoles of typed kinds"},

		{name: "a service account token Secret in kube-system",
			created: func() client.Object {
				s := bindingSecret("kube-system", "token-of-default", corev1.SecretTypeServiceAccountToken)
				s.Annotations = map[string]string{corev1.ServiceAccountNameKey: "default"}
				return s
			}(),
			want: "lockstep writes no Secret in kube-system"},
		{name: "an Opaque Secret in kube-system", created: bindingSecret("kube-system", "creds", corev1.SecretTypeOpaque),
			want: "lockstep writes no Secret in kube-system"},
		{name: "a service account token Secret in a team's namespace",
			created: func() client.Object {
				s := bindingSecret(rightsNamespace, "token-of-default", corev1.SecretTypeServiceAccountToken)
				s.Annotations = map[string]string{corev1.ServiceAccountNameKey: "default"}
				return s
			}(),
			want: "lockstep writes only Secrets of type Opaque"},
		{name: "a service account token Secret in lockstep's namespace",
			created: func() client.Object {
				s := bindingSecret("lockstep-system", "token-of-lockstep", corev1.SecretTypeServiceAccountToken)
				s.Annotations = map[string]string{corev1.ServiceAccountNameKey: "lockstep"}
				return s
			}(),
			want: "lockstep writes only Secrets of type Opaque"},
		{name: "a Secret not labelled as a binding's",
			created: &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: rightsNamespace, Name: "mine"}, StringData: map[string]string{"k": "v"}},
			want:    "lockstep creates only the Secrets of ServiceBindings"},
		{name: "changing a Secret lockstep did not write", try: secretPatch(theirs),
			want: "lockstep changes and deletes only the Secrets it wrote for ServiceBindings"},
		{name: "deleting a Secret lockstep did not write", try: func() error { return as.Delete(ctx, theirs.DeepCopy()) },
			want: "lockstep changes and deletes only the Secrets it wrote for ServiceBindings"},

		{name: "another group's CRD", created: otherGroupCRD("gadgets"),
			want: "lockstep writes only the CustomResourceDefinitions of typed kinds"},
		{name: "a CRD of the typed kinds' group not labelled as lockstep's", created: crd("gadgets", "services.lockstep.dev", nil),
			want: "lockstep writes only the CustomResourceDefinitions of typed kinds"},
		{name: "a typed kind's CRD with a conversion webhook",
			created: func() client.Object {
				c := crd("gadgets", "services.lockstep.dev", lockstepsLabel)
				c.Spec.Versions = append(c.Spec.Versions, apiextensionsv1.CustomResourceDefinitionVersion{Name: "v1", Served: true,
					Schema: c.Spec.Versions[0].Schema})
				c.Spec.Conversion = &apiextensionsv1.CustomResourceConversion{Strategy: apiextensionsv1.WebhookConverter,
					Webhook: &apiextensionsv1.WebhookConversion{ConversionReviewVersions: []string{"v1"},
						ClientConfig: &apiextensionsv1.WebhookClientConfig{URL: ptr.To("https://collector.example.com/convert")}}}
				return c
			}(),
			want: "have no conversion webhook"},
		{name: "changing another group's CRD",
			try: func() error {
				return as.Patch(ctx, otherCRD.DeepCopy(), client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"labels":{"app.kubernetes.io/managed-by":"lockstep"}}}`)))
			},
			want: "lockstep writes only the CustomResourceDefinitions of typed kinds"},
		{name: "deleting another group's CRD", try: func() error { return as.Delete(ctx, otherCRD.DeepCopy()) },
			want: "lockstep changes and deletes only the CustomResourceDefinitions of typed kinds it created"},

		{name: "a Lease in another namespace",
			created: &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "lockstep-reconcilers"}},
			want:    `cannot create resource "leases" in API group "coordination.k8s.io" in the namespace "default"`},
		{name: "a Lease in kube-system",
			created: &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "kube-controller-manager"}},
			want:    `cannot create resource "leases" in API group "coordination.k8s.io" in the namespace "kube-system"`},
		{name: "reading the Leases of every namespace",
			try:  func() error { return as.List(ctx, &coordinationv1.LeaseList{}) },
			want: "cannot list resource \"leases\" in API group \"coordination.k8s.io\" at the cluster scope"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			try := tt.try
			if tt.created != nil {
				try = func() error { return as.Create(ctx, tt.created.DeepCopyObject().(client.Object)) }
			}
			err := try()
			if err == nil && tt.created != nil {
				_ = admin.Delete(context.Background(), tt.created.DeepCopyObject().(client.Object))
			}
			require.Error(t, err, "lockstep's service account was allowed")
			assert.True(t, apierrors.IsForbidden(err), "refused as forbidden: %v", err)
			assert.Contains(t, err.Error(), tt.want)
		})
	}

	// Nothing changed.
	var view rbacv1.ClusterRole
	require.NoError(t, admin.Get(ctx, client.ObjectKey{Name: "view"}, &view))
	assert.False(t, slices.ContainsFunc(view.Rules, func(r rbacv1.PolicyRule) bool { return slices.Contains(r.Resources, "secrets") }),
		"the built-in view role holds no Secrets")
	require.NoError(t, client.IgnoreAlreadyExists(admin.Create(ctx, &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "viewer", Namespace: rightsNamespace},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "view"},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: "vera"}},
	})))
	out, _, _ := run(env.kubectl, "", "--kubeconfig", env.kubeconfig, "auth", "can-i", "get", "secrets", "-n", rightsNamespace, "--as", "vera")
	assert.Equal(t, "no\n", out, "a user bound to view may not read Secrets")
	var s corev1.Secret
	require.NoError(t, admin.Get(ctx, client.ObjectKeyFromObject(theirs), &s))
	assert.Equal(t, "hunter2", string(s.Data["password"]), "the team's Secret is as it was")
	assert.NotContains(t, s.Labels, "lockstep.dev/binding-uid")
	require.NoError(t, admin.Get(ctx, client.ObjectKeyFromObject(otherCRD), &apiextensionsv1.CustomResourceDefinition{}), "another group's CRD is still there")
	require.NoError(t, admin.Get(ctx, client.ObjectKey{Name: "lockstep-adopt"}, &rbacv1.ClusterRole{}))
	require.NoError(t, admin.Get(ctx, client.ObjectKeyFromObject(notLockstepsRole), &rbacv1.ClusterRole{}))
	for _, ns := range []string{"kube-system", rightsNamespace} {
		var secrets corev1.SecretList
		require.NoError(t, admin.List(ctx, &secrets, client.InNamespace(ns)))
		for _, s := range secrets.Items {
			assert.NotEqual(t, corev1.SecretTypeServiceAccountToken, s.Type, "no token Secret was made: %s/%s", ns, s.Name)
		}
	}
}

// TestRightsPoliciesTypeCheck: kube-controller-manager type-checks each
// policy's expressions against the kinds it matches and finds nothing to
// warn about (a misspelt field would be a warning here, and a refusal of
// lockstep's own writes at run time).
func TestRightsPoliciesTypeCheck(t *testing.T) {
	ctx := begin(t)
	var names []string
	for _, u := range env.rendered["base"] {
		if u.GetKind() == "ValidatingAdmissionPolicy" {
			names = append(names, u.GetName())
		}
	}
	require.Len(t, names, 3, "deploy/base installs a policy each on lockstep's Secret, CRD and ClusterRole writes")
	for _, name := range names {
		var p admissionregistrationv1.ValidatingAdmissionPolicy
		eventually(t, "kube-controller-manager type-checked policy "+name, func() bool {
			return env.admin.Get(ctx, client.ObjectKey{Name: name}, &p) == nil && p.Status.ObservedGeneration == p.Generation
		})
		if p.Status.TypeChecking != nil { // none: nothing to warn about
			assert.Empty(t, p.Status.TypeChecking.ExpressionWarnings, name)
		}
		assert.Equal(t, fmt.Sprintf("request.userInfo.username == '%s'", env.serviceAccount), p.Spec.MatchConditions[0].Expression,
			"policy %s applies to lockstep's service account, and to nobody else", name)
	}
}
