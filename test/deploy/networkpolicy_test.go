package deploy

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// TestNetworkPoliciesOpenOnlyWhatIsServed: in every variant, each pod the
// manifests run is selected by one NetworkPolicy, which opens exactly the
// ports its container serves: lockstep's pods the webhook, metrics and
// health ports to any source (the API server's and the kubelet's addresses
// differ from cluster to cluster), the embedded broker's pod its OSB port
// to lockstep's pods only.
func TestNetworkPoliciesOpenOnlyWhatIsServed(t *testing.T) {
	for _, variant := range variants {
		t.Run(variant, func(t *testing.T) {
			lockstep := find(t, variant, "Deployment", "lockstep")
			policies := map[string]*unstructured.Unstructured{}
			for _, u := range env.rendered[variant] {
				if u.GetKind() == "NetworkPolicy" {
					policies[u.GetName()] = u
				}
			}
			pods := map[string]*unstructured.Unstructured{"lockstep": lockstep}
			if variant == withBroker {
				pods["lockstep-embedded-broker"] = find(t, variant, "Deployment", "lockstep-embedded-broker")
			}
			require.Len(t, policies, len(pods), "a NetworkPolicy for each Deployment, named after it")
			for name, d := range pods {
				for other, np := range policies {
					assert.Equal(t, other == name, selects(t, field(t, np, "spec.podSelector.matchLabels"), d),
						"the NetworkPolicy %s selects the pods of the Deployment %s, and only those", other, name)
				}
				np := policies[name]
				require.NotNil(t, np, "the NetworkPolicy %s", name)
				assert.Equal(t, []any{"Ingress"}, field(t, np, "spec.policyTypes"), "egress stays open")
				ingress := field(t, np, "spec.ingress").([]any)
				require.Len(t, ingress, 1)
				assert.ElementsMatch(t, containerPorts(t, d), policyPorts(t, ingress[0]), "%s: the ports its container serves, no other", name)
				from, narrowed := ingress[0].(map[string]any)["from"]
				if name == "lockstep" {
					assert.False(t, narrowed, "lockstep's ports take any source")
					continue
				}
				require.True(t, narrowed, "the broker's port takes lockstep's pods only")
				require.Len(t, from, 1)
				peer := from.([]any)[0].(map[string]any)
				assert.NotContains(t, peer, "namespaceSelector", "lockstep's pods of the policy's own namespace")
				assert.NotContains(t, peer, "ipBlock")
				selector := lookup(t, peer, "podSelector.matchLabels")
				assert.True(t, selects(t, selector, lockstep), "lockstep's pods reach the broker")
				assert.False(t, selects(t, selector, d), "the broker's own pods are not lockstep's")
			}
		})
	}
}

// selects says whether matchLabels selects the pods of Deployment d.
func selects(t *testing.T, matchLabels any, d *unstructured.Unstructured) bool {
	t.Helper()
	labels := field(t, d, "spec.template.metadata.labels").(map[string]any)
	for k, v := range matchLabels.(map[string]any) {
		if labels[k] != v {
			return false
		}
	}
	return true
}

// containerPorts are the names of the ports Deployment d's containers serve.
func containerPorts(t *testing.T, d *unstructured.Unstructured) []string {
	t.Helper()
	var names []string
	for _, c := range field(t, d, "spec.template.spec.containers").([]any) {
		for _, p := range lookup(t, c, "ports").([]any) {
			names = append(names, lookup(t, p, "name").(string))
		}
	}
	return names
}

// policyPorts are the ports (by name) an ingress rule opens, over TCP.
func policyPorts(t *testing.T, rule any) []string {
	t.Helper()
	var names []string
	for _, p := range lookup(t, rule, "ports").([]any) {
		assert.Equal(t, "TCP", lookup(t, p, "protocol"))
		names = append(names, lookup(t, p, "port").(string))
	}
	return names
}
