package helm

import (
	"context"
	"encoding/base64"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/release"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/lockstep-dev/lockstep/api/v1alpha1"
	"github.com/lockstep-dev/lockstep/test/framework"
)

// helmConfig is Helm's configuration for the test API server, as `helm
// --kubeconfig ... --namespace lockstep-system` builds it (releases in
// Secrets).
func helmConfig(t *testing.T) *action.Configuration {
	t.Helper()
	flags := genericclioptions.NewConfigFlags(true)
	kubeconfig, ns, cache := env.kubeconfig, namespace, t.TempDir()
	flags.KubeConfig, flags.Namespace, flags.CacheDir = &kubeconfig, &ns, &cache
	cfg := &action.Configuration{}
	require.NoError(t, cfg.Init(flags, namespace, "secret", t.Logf))
	return cfg
}

// live reads every object of a release's manifest from the API server;
// a missing one fails the test.
func live(t *testing.T, rel *release.Release) []*unstructured.Unstructured {
	t.Helper()
	objs, err := framework.Decode(rel.Manifest)
	require.NoError(t, err)
	require.NotEmpty(t, objs)
	var out []*unstructured.Unstructured
	for _, u := range objs {
		got := &unstructured.Unstructured{}
		got.SetGroupVersionKind(u.GroupVersionKind())
		err := env.admin.Get(context.Background(), client.ObjectKeyFromObject(u), got)
		require.NoError(t, err, "%s is installed", key(u))
		out = append(out, got)
	}
	return out
}

// gone reports whether an object of the given kind no longer exists.
func gone(t *testing.T, obj client.Object) bool {
	t.Helper()
	err := env.admin.Get(context.Background(), client.ObjectKeyFromObject(obj), obj)
	if apierrors.IsNotFound(err) {
		return true
	}
	require.NoError(t, err)
	return false
}

func crd(name string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetAPIVersion("apiextensions.k8s.io/v1")
	u.SetKind("CustomResourceDefinition")
	u.SetName(name)
	return u
}

// TestInstallUpgradeUninstall installs the chart on a bare API server,
// upgrades it with changed values and uninstalls it, as `helm install`,
// `helm upgrade` and `helm uninstall` do. The API server validates every
// object; the CRDs come first, from the chart's crds/. An upgrade keeps
// the certificate the chart made. Uninstalling removes lockstep and leaves
// the CRDs and what users made, as the chart's notes say. The embedded
// broker comes with credentials and a certificate the chart makes and
// keeps across upgrades, and a ServiceBroker that names them.
func TestInstallUpgradeUninstall(t *testing.T) {
	ctx := context.Background()
	chrt, err := loader.Load(env.chart)
	require.NoError(t, err)
	on := func() map[string]any { return map[string]any{"enabled": true} }

	// helm install lockstep charts/lockstep -n lockstep-system --create-namespace --set ...
	install := action.NewInstall(helmConfig(t))
	install.ReleaseName, install.Namespace, install.CreateNamespace = "lockstep", namespace, true
	install.Timeout = time.Minute
	rel, err := install.Run(chrt, map[string]any{
		"serviceBrokers": []any{map[string]any{"name": "acme", "url": "https://broker.example"}},
		"monitoring":     map[string]any{"serviceMonitor": on(), "prometheusRule": on(), "dashboard": on()},
		"embeddedBroker": on(),
	})
	require.NoError(t, err)
	assert.Equal(t, release.StatusDeployed, rel.Info.Status)
	assert.Contains(t, rel.Info.Notes, "What `helm uninstall lockstep` keeps: lockstep's CRDs")
	assert.Contains(t, rel.Info.Notes, "Nothing is deprovisioned at any broker")

	for _, c := range chrt.CRDObjects() {
		u, err := framework.Decode(string(c.File.Data))
		require.NoError(t, err)
		require.Len(t, u, 1)
		assert.False(t, gone(t, crd(u[0].GetName())), "CRD %s is installed", u[0].GetName())
	}
	installed := live(t, rel)
	var secret corev1.Secret
	require.NoError(t, env.admin.Get(ctx, client.ObjectKey{Namespace: namespace, Name: "lockstep-webhook-tls"}, &secret))
	require.NotEmpty(t, secret.Data["ca.crt"])
	for _, u := range installed {
		if u.GetKind() == "ValidatingWebhookConfiguration" || u.GetKind() == "MutatingWebhookConfiguration" {
			hooks, _, _ := unstructured.NestedSlice(u.Object, "webhooks")
			for _, h := range hooks {
				bundle, _, _ := unstructured.NestedString(h.(map[string]any), "clientConfig", "caBundle")
				ca, err := base64.StdEncoding.DecodeString(bundle)
				require.NoError(t, err)
				assert.Equal(t, string(secret.Data["ca.crt"]), string(ca), "%s trusts the chart's CA", u.GetName())
			}
		}
	}

	// The embedded broker's credentials and certificate, made by the chart,
	// reach lockstep through its ServiceBroker.
	var brokerAuth, brokerTLS corev1.Secret
	require.NoError(t, env.admin.Get(ctx, client.ObjectKey{Namespace: namespace, Name: "lockstep-embedded-broker-auth"}, &brokerAuth))
	require.Len(t, brokerAuth.Data["password"], 32)
	require.NoError(t, env.admin.Get(ctx, client.ObjectKey{Namespace: namespace, Name: "lockstep-embedded-broker-tls"}, &brokerTLS))
	var embedded v1alpha1.ServiceBroker
	require.NoError(t, env.admin.Get(ctx, client.ObjectKey{Name: "embedded"}, &embedded))
	assert.Equal(t, &v1alpha1.SecretReference{Namespace: namespace, Name: "lockstep-embedded-broker-auth", Type: v1alpha1.AuthBasic}, embedded.Spec.AuthSecretRef)
	assert.Equal(t, brokerTLS.Data["ca.crt"], embedded.Spec.CABundle)
	assert.Equal(t, "https://lockstep-embedded-broker."+namespace+".svc", embedded.Spec.URL)

	// What a user makes meanwhile: a ServiceBroker of their own.
	users := &v1alpha1.ServiceBroker{ObjectMeta: metav1.ObjectMeta{Name: "users-broker"}, Spec: v1alpha1.ServiceBrokerSpec{URL: "https://users.example"}}
	require.NoError(t, env.admin.Create(ctx, users))

	// helm upgrade lockstep charts/lockstep --set replicas=3,...
	upgrade := action.NewUpgrade(helmConfig(t))
	upgrade.Namespace, upgrade.Timeout = namespace, time.Minute
	rel, err = upgrade.Run("lockstep", chrt, map[string]any{
		"replicas":       3,
		"image":          map[string]any{"tag": "v0.2.0"},
		"logLevel":       "debug",
		"resync":         map[string]any{"interval": "5m"},
		"embeddedBroker": map[string]any{"enabled": true, "replicas": 2, "store": map[string]any{"type": "etcd", "etcd": map[string]any{"endpoints": "https://etcd.example:2379"}}},
		"serviceBrokers": []any{map[string]any{"name": "acme", "url": "https://broker.example"}},
	})
	require.NoError(t, err)
	assert.Equal(t, 2, rel.Version)
	live(t, rel)
	var d appsv1.Deployment
	require.NoError(t, env.admin.Get(ctx, client.ObjectKey{Namespace: namespace, Name: "lockstep"}, &d))
	assert.Equal(t, int32(3), *d.Spec.Replicas)
	assert.Equal(t, "ghcr.io/lockstep-dev/lockstep:v0.2.0", d.Spec.Template.Spec.Containers[0].Image)
	vars := map[string]string{}
	for _, e := range d.Spec.Template.Spec.Containers[0].Env {
		vars[e.Name] = e.Value
	}
	assert.Equal(t, "debug", vars["LOCKSTEP_LOG_LEVEL"])
	assert.Equal(t, "5m", vars["LOCKSTEP_RESYNC_INTERVAL"])
	assert.NotContains(t, vars, "LOCKSTEP_EMBEDDED_BROKER", "lockstep's pod runs no broker")
	var brokerDeployment appsv1.Deployment
	require.NoError(t, env.admin.Get(ctx, client.ObjectKey{Namespace: namespace, Name: "lockstep-embedded-broker"}, &brokerDeployment))
	assert.Equal(t, int32(2), *brokerDeployment.Spec.Replicas)
	assert.False(t, *brokerDeployment.Spec.Template.Spec.AutomountServiceAccountToken, "no token mounted")
	var renewed corev1.Secret
	require.NoError(t, env.admin.Get(ctx, client.ObjectKeyFromObject(&secret), &renewed))
	assert.Equal(t, secret.Data, renewed.Data, "an upgrade keeps the certificate the chart made")
	for _, s := range []*corev1.Secret{&brokerAuth, &brokerTLS} {
		var kept corev1.Secret
		require.NoError(t, env.admin.Get(ctx, client.ObjectKeyFromObject(s), &kept))
		assert.Equal(t, s.Data, kept.Data, "an upgrade keeps the embedded broker's %s", s.Name)
	}
	for _, kind := range []string{"ServiceMonitor", "PrometheusRule"} {
		u := &unstructured.Unstructured{}
		u.SetAPIVersion("monitoring.coreos.com/v1")
		u.SetKind(kind)
		u.SetNamespace(namespace)
		u.SetName("lockstep")
		assert.True(t, gone(t, u), "monitoring turned off: the %s goes", kind)
	}

	// helm uninstall lockstep
	res, err := action.NewUninstall(helmConfig(t)).Run("lockstep")
	require.NoError(t, err)
	require.NotNil(t, res.Release)
	for _, obj := range []client.Object{
		&appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "lockstep"}},
		&corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "lockstep-webhook"}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "lockstep-webhook-tls"}},
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "lockstep"}},
		&appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "lockstep-embedded-broker"}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "lockstep-embedded-broker-auth"}},
	} {
		assert.True(t, gone(t, obj), "%T %s is uninstalled", obj, obj.GetName())
	}
	for kind, name := range map[string]string{"MutatingWebhookConfiguration": "lockstep-mutating", "ValidatingWebhookConfiguration": "lockstep-validating"} {
		u := &unstructured.Unstructured{}
		u.SetAPIVersion("admissionregistration.k8s.io/v1")
		u.SetKind(kind)
		u.SetName(name)
		assert.True(t, gone(t, u), "%s %s is uninstalled: the API server calls no webhook that is gone", kind, name)
	}
	u := &unstructured.Unstructured{}
	u.SetAPIVersion("rbac.authorization.k8s.io/v1")
	u.SetKind("ClusterRole")
	u.SetName("lockstep")
	assert.True(t, gone(t, u), "lockstep's ClusterRole is uninstalled")

	// Kept: the CRDs, the chart's ServiceBroker (resource-policy keep) and the user's.
	for _, c := range chrt.CRDObjects() {
		objs, err := framework.Decode(string(c.File.Data))
		require.NoError(t, err)
		assert.False(t, gone(t, crd(objs[0].GetName())), "CRD %s is kept", objs[0].GetName())
	}
	for _, name := range []string{"acme", "users-broker", "embedded"} {
		assert.False(t, gone(t, &v1alpha1.ServiceBroker{ObjectMeta: metav1.ObjectMeta{Name: name}}), "ServiceBroker %s is kept", name)
	}
	list, err := action.NewList(helmConfig(t)).Run()
	require.NoError(t, err)
	assert.Empty(t, list, "no release is left")
}
