package helm

import (
	"encoding/base64"
	"fmt"
	"sort"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/lockstep-dev/lockstep/test/framework"
)

// namespace is the release's namespace in these tests: deploy/'s.
const namespace = "lockstep-system"

// kubeVersion is the Kubernetes version a client-only render assumes.
var kubeVersion = &chartutil.KubeVersion{Version: "v1.36.0", Major: "1", Minor: "36"}

// render renders the chart with values as `helm template --include-crds`
// does: no cluster, so the chart makes a new certificate every time.
func render(t *testing.T, values map[string]any) []*unstructured.Unstructured {
	t.Helper()
	objs, err := tryRender(values)
	require.NoError(t, err)
	return objs
}

func tryRender(values map[string]any) ([]*unstructured.Unstructured, error) {
	chrt, err := loader.Load(env.chart)
	if err != nil {
		return nil, err
	}
	install := action.NewInstall(&action.Configuration{Log: func(string, ...any) {}})
	install.ReleaseName, install.Namespace = "lockstep", namespace
	install.DryRun, install.ClientOnly, install.IncludeCRDs = true, true, true
	install.KubeVersion = kubeVersion
	rel, err := install.Run(chrt, values)
	if err != nil {
		return nil, err
	}
	return framework.Decode(rel.Manifest)
}

// helmLabels are the labels the chart adds to deploy/'s objects for Helm's
// own tooling.
var helmLabels = []string{"app.kubernetes.io/instance", "app.kubernetes.io/managed-by", "app.kubernetes.io/version", "helm.sh/chart"}

// key names an object: kind, namespace and name.
func key(u *unstructured.Unstructured) string {
	return fmt.Sprintf("%s %s/%s", u.GetKind(), u.GetNamespace(), u.GetName())
}

// byKey indexes objects by key, without Helm's labels.
func byKey(t *testing.T, objs []*unstructured.Unstructured) map[string]*unstructured.Unstructured {
	t.Helper()
	out := map[string]*unstructured.Unstructured{}
	for _, u := range objs {
		u = u.DeepCopy()
		labels := u.GetLabels()
		for _, l := range helmLabels {
			delete(labels, l)
		}
		if len(labels) == 0 {
			unstructured.RemoveNestedField(u.Object, "metadata", "labels")
		} else {
			u.SetLabels(labels)
		}
		require.NotContains(t, out, key(u), "rendered twice")
		out[key(u)] = u
	}
	return out
}

func keys(m map[string]*unstructured.Unstructured) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// webhookCABundles takes the caBundle out of every webhook of the webhook
// configurations in objs and returns them.
func webhookCABundles(t *testing.T, objs map[string]*unstructured.Unstructured) []string {
	t.Helper()
	var bundles []string
	for _, u := range objs {
		if k := u.GetKind(); k != "MutatingWebhookConfiguration" && k != "ValidatingWebhookConfiguration" {
			continue
		}
		hooks, _, err := unstructured.NestedSlice(u.Object, "webhooks")
		require.NoError(t, err)
		for _, h := range hooks {
			cc := h.(map[string]any)["clientConfig"].(map[string]any)
			bundle, _ := cc["caBundle"].(string)
			bundles = append(bundles, bundle)
			delete(cc, "caBundle")
		}
		require.NoError(t, unstructured.SetNestedSlice(u.Object, hooks, "webhooks"))
	}
	return bundles
}

// TestTheChartRendersWhatDeployHas renders the chart with the settings of
// each kustomize variant and compares it with `kubectl kustomize
// deploy/<variant>`, object by object: the same objects, the same fields,
// apart from Helm's labels. Without cert-manager the chart also makes the
// certificate deploy/base leaves to the operator: a Secret
// lockstep-webhook-tls whose CA every webhook trusts. With the embedded
// broker it makes what deploy/embedded-broker leaves to the operator too:
// the broker's credentials and certificate, and the ServiceBroker's
// caBundle (its CA); and it keeps that ServiceBroker on uninstall.
func TestTheChartRendersWhatDeployHas(t *testing.T) {
	tests := []struct {
		variant string
		values  map[string]any
	}{
		{"base", map[string]any{"namespace": map[string]any{"create": true}}},
		{"cert-manager", map[string]any{"namespace": map[string]any{"create": true}, "certManager": map[string]any{"enabled": true}}},
		{"with-embedded-broker", map[string]any{"namespace": map[string]any{"create": true}, "embeddedBroker": map[string]any{"enabled": true}}},
	}
	for _, tt := range tests {
		t.Run(tt.variant, func(t *testing.T) {
			chart := byKey(t, render(t, tt.values))
			deploy := byKey(t, env.deploy[tt.variant])
			if tt.variant == "with-embedded-broker" {
				theChartsEmbeddedBrokerObjects(t, chart)
			}
			if tt.variant != "cert-manager" {
				secret, ok := chart["Secret lockstep-system/lockstep-webhook-tls"]
				require.True(t, ok, "the chart makes the serving certificate")
				delete(chart, key(secret))
				assert.Equal(t, "kubernetes.io/tls", secret.Object["type"])
				ca, _, _ := unstructured.NestedString(secret.Object, "data", "ca.crt")
				pem, err := base64.StdEncoding.DecodeString(ca)
				require.NoError(t, err)
				assert.Contains(t, string(pem), "BEGIN CERTIFICATE")
				bundles := webhookCABundles(t, chart)
				require.NotEmpty(t, bundles)
				for _, b := range bundles {
					assert.Equal(t, ca, b, "every webhook trusts the CA of the chart's certificate")
				}
			} else {
				for _, b := range webhookCABundles(t, chart) {
					assert.Empty(t, b, "cert-manager's CA injector fills the caBundle")
				}
			}
			require.Equal(t, keys(deploy), keys(chart), "the same objects")
			for k, want := range deploy {
				assert.Equal(t, want.Object, chart[k].Object, k)
			}
		})
	}
}

// theChartsEmbeddedBrokerObjects checks and takes out of chart what the
// chart adds to deploy/embedded-broker: the Secrets of the broker's
// credentials and certificate, the ServiceBroker's caBundle (the
// certificate's CA) and its keep annotation.
func theChartsEmbeddedBrokerObjects(t *testing.T, chart map[string]*unstructured.Unstructured) {
	t.Helper()
	tls, ok := chart["Secret lockstep-system/lockstep-embedded-broker-tls"]
	require.True(t, ok, "the chart makes the broker's serving certificate")
	delete(chart, key(tls))
	assert.Equal(t, "kubernetes.io/tls", tls.Object["type"])
	ca, _, _ := unstructured.NestedString(tls.Object, "data", "ca.crt")
	auth, ok := chart["Secret lockstep-system/lockstep-embedded-broker-auth"]
	require.True(t, ok, "the chart makes the broker's credentials")
	delete(chart, key(auth))
	for _, k := range []string{"username", "password"} {
		v, _, _ := unstructured.NestedString(auth.Object, "data", k)
		raw, err := base64.StdEncoding.DecodeString(v)
		require.NoError(t, err)
		assert.NotEmpty(t, raw, k)
		if k == "password" {
			assert.Len(t, raw, 32)
		}
	}
	sb := chart["ServiceBroker /embedded"]
	require.NotNil(t, sb)
	bundle, _, _ := unstructured.NestedString(sb.Object, "spec", "caBundle")
	assert.Equal(t, ca, bundle, "lockstep trusts the CA of the broker's certificate")
	unstructured.RemoveNestedField(sb.Object, "spec", "caBundle")
	assert.Equal(t, map[string]string{"helm.sh/resource-policy": "keep"}, sb.GetAnnotations(), "kept on uninstall")
	sb.SetAnnotations(nil)
}

// TestTheChartsMonitoringIsDeployMonitoring: with monitoring on, the chart
// adds the objects deploy/monitoring has.
func TestTheChartsMonitoringIsDeployMonitoring(t *testing.T) {
	on := func() map[string]any { return map[string]any{"enabled": true} }
	chart := byKey(t, render(t, map[string]any{"monitoring": map[string]any{"serviceMonitor": on(), "prometheusRule": on(), "dashboard": on()}}))
	deploy := byKey(t, env.deploy["monitoring"])
	require.NotEmpty(t, deploy)
	for k, want := range deploy {
		got, ok := chart[k]
		if assert.True(t, ok, "the chart renders %s", k) {
			assert.Equal(t, want.Object, got.Object, k)
		}
	}
	defaults := byKey(t, render(t, nil))
	for k := range deploy {
		assert.NotContains(t, defaults, k, "monitoring is off by default")
	}
}
