package deploy

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"
)

// TestEveryVariantPassesAServerSideDryRun applies each rendered variant with
// a server-side dry-run: the API server validates every object (schemas,
// strict fields, CRDs, admission) and persists nothing. Pod Security
// warnings count as failures: lockstep's namespace enforces "restricted"
// (with the embedded broker, "baseline": a variant whose namespace has
// other Pod Security labels is dry-run into a namespace of its own with
// those labels, for real, since Pod Security reads the live namespace).
func TestEveryVariantPassesAServerSideDryRun(t *testing.T) {
	for _, variant := range variants {
		t.Run(variant, func(t *testing.T) {
			objs := forDryRun(t, inItsOwnNamespace(t, variant, env.rendered[variant]))
			require.NotEmpty(t, objs)
			stdout, stderr, err := run(env.kubectl, encode(t, objs), "--kubeconfig", env.kubeconfig,
				"apply", "--server-side", "--force-conflicts", "--field-manager=lockstep-deploy-test", "--dry-run=server", "-f", "-")
			require.NoError(t, err)
			assert.NotContains(t, stderr, "Warning", "no warning (Pod Security, deprecated API) for a rendered object")
			for _, u := range objs {
				assert.Contains(t, stdout, applied(u)+" serverside-applied (server dry run)\n")
			}
			assert.Equal(t, len(objs), strings.Count(stdout, "(server dry run)"), stdout)
		})
	}
}

// forDryRun copies objs, renaming the webhook configurations: the test
// API server already has lockstep's (installed by envtest, pointing at the
// in-process webhook by URL), and a dry-run apply over them would merge the
// two clientConfigs. Under another name every field is still validated.
func forDryRun(t *testing.T, objs []*unstructured.Unstructured) []*unstructured.Unstructured {
	t.Helper()
	out := make([]*unstructured.Unstructured, 0, len(objs))
	for _, u := range objs {
		u = u.DeepCopy()
		if u.GroupVersionKind().Group == "admissionregistration.k8s.io" {
			u.SetName(u.GetName() + "-dry-run")
		}
		out = append(out, u)
	}
	return out
}

// inItsOwnNamespace moves a variant's objects into a namespace named after
// it, created with the variant's namespace labels, when those differ from
// deploy/base's (which the live lockstep-system has).
func inItsOwnNamespace(t *testing.T, variant string, objs []*unstructured.Unstructured) []*unstructured.Unstructured {
	t.Helper()
	ns := find(t, variant, "Namespace", "lockstep-system")
	if assert.ObjectsAreEqual(ns.GetLabels(), find(t, "base", "Namespace", "lockstep-system").GetLabels()) {
		return objs
	}
	name := "lockstep-" + variant
	live := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: ns.GetLabels()}}
	live.Labels["kubernetes.io/metadata.name"] = name
	require.NoError(t, client.IgnoreAlreadyExists(env.admin.Create(context.Background(), live)))
	out := make([]*unstructured.Unstructured, 0, len(objs))
	for _, u := range objs {
		u = u.DeepCopy()
		switch {
		case u.GetKind() == "Namespace":
			u.SetName(name)
		case u.GetNamespace() == "lockstep-system":
			u.SetNamespace(name)
		}
		out = append(out, u)
	}
	return out
}

// encode writes objects as a stream of YAML documents.
func encode(t *testing.T, objs []*unstructured.Unstructured) string {
	t.Helper()
	var b strings.Builder
	for _, u := range objs {
		raw, err := yaml.Marshal(u.Object)
		require.NoError(t, err)
		b.WriteString("---\n")
		b.Write(raw)
	}
	return b.String()
}

// applied is how kubectl names an object it applied: kind.group/name.
func applied(u *unstructured.Unstructured) string {
	kind := strings.ToLower(u.GetKind())
	if g := u.GroupVersionKind().Group; g != "" {
		kind += "." + g
	}
	return kind + "/" + u.GetName()
}

// find returns the one rendered object of kind and name.
func find(t *testing.T, variant, kind, name string) *unstructured.Unstructured {
	t.Helper()
	for _, u := range env.rendered[variant] {
		if u.GetKind() == kind && u.GetName() == name {
			return u
		}
	}
	require.Failf(t, "missing object", "deploy/%s renders no %s %q", variant, kind, name)
	return nil
}

func field(t *testing.T, u *unstructured.Unstructured, path string) any {
	t.Helper()
	v, found, err := unstructured.NestedFieldNoCopy(u.Object, strings.Split(path, ".")...)
	require.NoError(t, err, path)
	require.True(t, found, "%s %s has no %s", u.GetKind(), u.GetName(), path)
	return v
}

// TestTheDeploymentIsAvailableAndRestricted checks what the README promises
// of lockstep's pods, in every variant.
func TestTheDeploymentIsAvailableAndRestricted(t *testing.T) {
	tests := []struct {
		path string
		want any
	}{
		{"spec.replicas", int64(2)},
		{"spec.strategy.rollingUpdate.maxUnavailable", int64(0)},
		{"spec.template.spec.serviceAccountName", "lockstep"},
		{"spec.template.spec.securityContext.runAsNonRoot", true},
		{"spec.template.spec.securityContext.seccompProfile.type", "RuntimeDefault"},
		{"spec.template.spec.affinity.podAntiAffinity.preferredDuringSchedulingIgnoredDuringExecution.0.podAffinityTerm.topologyKey", "kubernetes.io/hostname"},
		{"spec.template.spec.containers.0.securityContext.allowPrivilegeEscalation", false},
		{"spec.template.spec.containers.0.securityContext.readOnlyRootFilesystem", true},
		{"spec.template.spec.containers.0.securityContext.privileged", false},
		{"spec.template.spec.containers.0.securityContext.capabilities.drop", []any{"ALL"}},
		{"spec.template.spec.containers.0.readinessProbe.httpGet.path", "/readyz"},
		{"spec.template.spec.containers.0.livenessProbe.httpGet.path", "/healthz"},
		{"spec.template.spec.containers.0.resources.requests.cpu", "100m"},
		{"spec.template.spec.containers.0.resources.requests.memory", "128Mi"},
		{"spec.template.spec.containers.0.resources.limits.memory", "512Mi"},
		{"spec.template.spec.containers.0.resources.limits.cpu", "1"},
		{"spec.template.spec.volumes.0.secret.secretName", "lockstep-webhook-tls"},
	}
	for _, variant := range variants {
		d := find(t, variant, "Deployment", "lockstep")
		for _, tt := range tests {
			t.Run(variant+"/"+tt.path, func(t *testing.T) {
				assert.Equal(t, tt.want, lookup(t, d.Object, tt.path))
			})
		}
		pdb := find(t, variant, "PodDisruptionBudget", "lockstep")
		assert.Equal(t, int64(1), field(t, pdb, "spec.minAvailable"))
		assert.Equal(t, field(t, d, "spec.selector.matchLabels"), field(t, pdb, "spec.selector.matchLabels"), "the PDB covers the Deployment's pods")
		svc := find(t, variant, "Service", "lockstep-webhook")
		assert.Equal(t, field(t, d, "spec.selector.matchLabels"), field(t, svc, "spec.selector"), "the Service selects the Deployment's pods")
	}
}

// lookup follows a dotted path through maps and (numeric) slice indexes.
func lookup(t *testing.T, obj any, path string) any {
	t.Helper()
	cur := obj
	for _, p := range strings.Split(path, ".") {
		switch c := cur.(type) {
		case map[string]any:
			v, ok := c[p]
			require.True(t, ok, "%s: no %q", path, p)
			cur = v
		case []any:
			var i int
			_, err := fmt.Sscanf(p, "%d", &i)
			require.NoError(t, err, "%s: %q is not an index", path, p)
			require.Less(t, i, len(c), path)
			cur = c[i]
		default:
			require.Failf(t, "not found", "%s: %q is under a %T", path, p, cur)
		}
	}
	return cur
}

// TestWebhooksSkipSystemNamespaces: no webhook is ever called for objects in
// kube-system or lockstep's own namespace.
func TestWebhooksSkipSystemNamespaces(t *testing.T) {
	for _, variant := range variants {
		for _, cfg := range []*unstructured.Unstructured{
			find(t, variant, "MutatingWebhookConfiguration", "lockstep-mutating"),
			find(t, variant, "ValidatingWebhookConfiguration", "lockstep-validating"),
		} {
			hooks, _ := field(t, cfg, "webhooks").([]any)
			require.NotEmpty(t, hooks)
			for i, h := range hooks {
				name := lookup(t, h, "name")
				t.Run(fmt.Sprintf("%s/%v", variant, name), func(t *testing.T) {
					exprs := lookup(t, h, "namespaceSelector.matchExpressions").([]any)
					require.Len(t, exprs, 1, "webhook %d", i)
					assert.Equal(t, "kubernetes.io/metadata.name", lookup(t, exprs[0], "key"))
					assert.Equal(t, "NotIn", lookup(t, exprs[0], "operator"))
					assert.ElementsMatch(t, []any{"kube-system", "lockstep-system"}, lookup(t, exprs[0], "values"))
					assert.Equal(t, "lockstep-system", lookup(t, h, "clientConfig.service.namespace"))
					assert.Equal(t, "lockstep-webhook", lookup(t, h, "clientConfig.service.name"))
				})
			}
		}
	}
}

// TestGuardsSkipOnlyLockstepsOwnWrites: the status and marketplace
// webhooks are not called for lockstep's own writes (a round trip saved per
// write), and their match condition names exactly the service account the
// Deployment runs as, so that nobody else's writes skip the guards. No
// other webhook skips anyone by name.
func TestGuardsSkipOnlyLockstepsOwnWrites(t *testing.T) {
	skipsLockstep := map[string]bool{"status.validate.lockstep.dev": true, "typedstatus.validate.lockstep.dev": true, "marketplace.validate.lockstep.dev": true}
	for _, variant := range variants {
		t.Run(variant, func(t *testing.T) {
			d := find(t, variant, "Deployment", "lockstep")
			self := fmt.Sprintf("system:serviceaccount:%s:%s", d.GetNamespace(), lookup(t, d.Object, "spec.template.spec.serviceAccountName"))
			for _, kind := range []string{"MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"} {
				name := map[string]string{"MutatingWebhookConfiguration": "lockstep-mutating", "ValidatingWebhookConfiguration": "lockstep-validating"}[kind]
				hooks, _ := field(t, find(t, variant, kind, name), "webhooks").([]any)
				for _, h := range hooks {
					conditions, _ := h.(map[string]any)["matchConditions"].([]any)
					if !skipsLockstep[lookup(t, h, "name").(string)] {
						for _, c := range conditions {
							assert.NotContains(t, lookup(t, c, "expression"), "username", "only the guards skip anyone by name")
						}
						continue
					}
					require.Len(t, conditions, 1)
					assert.Equal(t, fmt.Sprintf("request.userInfo.username != %q", self), lookup(t, conditions[0], "expression"))
				}
			}
		})
	}
}

// TestCertManagerIssuesTheServingCertificateAndInjectsItsCA: the overlay's
// Certificate fills the Secret the Deployment mounts, covers the Service's
// DNS name, and both webhook configurations get its CA.
func TestCertManagerIssuesTheServingCertificateAndInjectsItsCA(t *testing.T) {
	const variant = "cert-manager"
	cert := find(t, variant, "Certificate", "lockstep-webhook")
	d := find(t, variant, "Deployment", "lockstep")
	assert.Equal(t, lookup(t, d.Object, "spec.template.spec.volumes.0.secret.secretName"), field(t, cert, "spec.secretName"))
	assert.Contains(t, field(t, cert, "spec.dnsNames"), "lockstep-webhook.lockstep-system.svc")
	issuer := find(t, variant, "Issuer", field(t, cert, "spec.issuerRef.name").(string))
	assert.Equal(t, cert.GetNamespace(), issuer.GetNamespace())
	for _, kind := range []string{"MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"} {
		for _, u := range env.rendered[variant] {
			if u.GetKind() == kind {
				assert.Equal(t, cert.GetNamespace()+"/"+cert.GetName(), u.GetAnnotations()["cert-manager.io/inject-ca-from"], u.GetName())
			}
		}
	}
	for _, u := range env.rendered["base"] {
		assert.NotContains(t, u.GetAnnotations(), "cert-manager.io/inject-ca-from", "deploy/base needs no cert-manager")
		assert.NotEqual(t, "cert-manager.io", u.GroupVersionKind().Group, "deploy/base needs no cert-manager")
	}
}
