package env

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/lockstep-dev/lockstep/internal/admission"
)

func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs("../..")
	require.NoError(t, err)
	return root
}

func TestBaselineCRDs(t *testing.T) {
	crds, err := baselineCRDs(repoRoot(t))
	require.NoError(t, err)
	require.Len(t, crds, 5)
	tests := []struct {
		group, kind, plural string
		withCEL             bool
	}{
		{PlainInstance.Group, "ServiceInstance", "serviceinstances", false},
		{CELInstance.Group, "ServiceInstance", "serviceinstances", true},
		{PlainBinding.Group, "ServiceBinding", "servicebindings", false},
		{AllowedInstance.Group, "ServiceInstance", "serviceinstances", false},
		{AllowedBinding.Group, "ServiceBinding", "servicebindings", false},
	}
	for i, tt := range tests {
		t.Run(tt.group+"/"+tt.kind, func(t *testing.T) {
			crd := crds[i]
			assert.Equal(t, tt.plural+"."+tt.group, crd.Name)
			assert.Equal(t, tt.group, crd.Spec.Group)
			assert.Equal(t, tt.kind, crd.Spec.Names.Kind)
			assert.Empty(t, crd.Spec.Names.ShortNames, "short names stay lockstep's")
			require.NotEmpty(t, crd.Spec.Versions)
			spec := crd.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"]
			assert.Empty(t, spec.XValidations, "the rules generated into lockstep's CRD are not copied")
			for name, prop := range spec.Properties {
				rules := prop.XValidations
				if tt.withCEL && (name == "brokerName" || name == "serviceName" || name == "externalID") {
					require.Len(t, rules, 1, name)
					assert.Equal(t, "self == oldSelf", rules[0].Rule)
					assert.Equal(t, CELMessage, rules[0].Message)
					continue
				}
				assert.Empty(t, rules, "spec.%s has no rule", name)
			}
		})
	}
}

func TestWebhookConfigsSkipLabelledNamespacesForInstancesOnly(t *testing.T) {
	mutating, validating, err := webhookConfigs(repoRoot(t))
	require.NoError(t, err)
	skip := metav1.LabelSelectorRequirement{Key: SkipAdmissionLabel, Operator: metav1.LabelSelectorOpNotIn, Values: []string{"true"}}
	seen := map[string]bool{}
	check := func(name string, sel *metav1.LabelSelector) {
		seen[name] = true
		if strings.HasPrefix(name, "serviceinstances.") || strings.HasPrefix(name, "serviceinstances-update.") || strings.HasPrefix(name, "serviceinstances-check.") {
			require.NotNil(t, sel, name)
			assert.Contains(t, sel.MatchExpressions, skip, name)
			return
		}
		if sel != nil {
			assert.NotContains(t, sel.MatchExpressions, skip, "%s keeps applying everywhere", name)
		}
	}
	for _, c := range mutating {
		for _, w := range c.Webhooks {
			check(w.Name, w.NamespaceSelector)
		}
	}
	for _, c := range validating {
		for _, w := range c.Webhooks {
			check(w.Name, w.NamespaceSelector)
		}
	}
	for _, name := range []string{"serviceinstances.mutate.lockstep.dev", "serviceinstances-update.mutate.lockstep.dev", "serviceinstances.validate.lockstep.dev", "status.validate.lockstep.dev"} {
		assert.True(t, seen[name], "webhook %s is in deploy/webhook", name)
	}
}

func TestAllowAllWebhooksMatchTheAllowedGroupAsLockstepsMatchItsOwn(t *testing.T) {
	url := func(path string) string { return "https://127.0.0.1:1" + path }
	mutating, validating := allowAllWebhooks(url, []byte("ca"))
	require.Len(t, mutating.Webhooks, 1)
	require.Len(t, validating.Webhooks, 1)
	m, v := mutating.Webhooks[0], validating.Webhooks[0]
	assert.Equal(t, url(admission.MutateInstancePath), *m.ClientConfig.URL)
	assert.Equal(t, url(admission.ValidateBindingPath), *v.ClientConfig.URL, "a path the allow-all server allows in every mode")
	assert.Equal(t, []byte("ca"), v.ClientConfig.CABundle)
	ops := func(rules []admissionregistrationv1.RuleWithOperations) []admissionregistrationv1.OperationType {
		require.Len(t, rules, 1)
		assert.Equal(t, []string{AllowedInstance.Group}, rules[0].APIGroups, "no other group is called")
		assert.ElementsMatch(t, []string{"serviceinstances", "servicebindings"}, rules[0].Resources)
		return rules[0].Operations
	}
	assert.Equal(t, []admissionregistrationv1.OperationType{admissionregistrationv1.Create}, ops(m.Rules),
		"one mutating call per create, as lockstep's defaulting")
	assert.Equal(t, []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update, admissionregistrationv1.Delete},
		ops(v.Rules), "one validating call per create, update and delete, as lockstep's")
}
