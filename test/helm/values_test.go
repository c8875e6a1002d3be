package helm

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/lockstep-dev/lockstep/internal/app"
)

// find returns the one rendered object of kind and name, or nil.
func find(objs []*unstructured.Unstructured, kind, name string) *unstructured.Unstructured {
	for _, u := range objs {
		if u.GetKind() == kind && u.GetName() == name {
			return u
		}
	}
	return nil
}

// container is the Deployment's lockstep container.
func container(t *testing.T, objs []*unstructured.Unstructured) map[string]any {
	t.Helper()
	d := find(objs, "Deployment", "lockstep")
	require.NotNil(t, d)
	containers, _, err := unstructured.NestedSlice(d.Object, "spec", "template", "spec", "containers")
	require.NoError(t, err)
	require.Len(t, containers, 1)
	return containers[0].(map[string]any)
}

// configOf reads lockstep's configuration, and its embedded broker's,
// from the container's environment as lockstep itself does. A variable
// from a Secret gets the value "from-secret".
func configOf(t *testing.T, c map[string]any) (app.Config, map[string]string) {
	t.Helper()
	vars := map[string]string{}
	for _, e := range c["env"].([]any) {
		m := e.(map[string]any)
		value, literal := m["value"].(string)
		if !literal {
			value = "from-secret"
			if _, fromSecret := m["valueFrom"].(map[string]any)["secretKeyRef"]; !fromSecret {
				continue // the pod's namespace
			}
		}
		vars[m["name"].(string)] = value
		t.Setenv(m["name"].(string), value)
	}
	cfg, err := app.LoadConfig()
	require.NoError(t, err, "lockstep starts with these settings")
	return cfg, vars
}

// TestEveryValueReachesLockstep renders the chart with each value changed
// and reads lockstep's configuration from the rendered Deployment as
// lockstep does (app.LoadConfig, the embedded broker's settings), so that
// a value whose variable lockstep does not read, or reads differently,
// fails here.
func TestEveryValueReachesLockstep(t *testing.T) {
	tests := []struct {
		name   string
		values map[string]any
		check  func(t *testing.T, objs []*unstructured.Unstructured, cfg app.Config, vars map[string]string)
	}{
		{"defaults", nil, func(t *testing.T, objs []*unstructured.Unstructured, cfg app.Config, vars map[string]string) {
			assert.Equal(t, "info", cfg.LogLevel)
			assert.Equal(t, 10*time.Minute, cfg.ResyncInterval, "lockstep's own default")
			assert.False(t, cfg.EmbeddedBroker)
			assert.Equal(t, "/etc/lockstep/certs", cfg.CertDir)
			assert.NotNil(t, find(objs, "PodDisruptionBudget", "lockstep"))
		}},
		{"image, replicas, resources, logs", map[string]any{
			"image":     map[string]any{"repository": "registry.example/lockstep", "tag": "v0.2.0", "pullPolicy": "Always"},
			"replicas":  3,
			"resources": map[string]any{"requests": map[string]any{"cpu": "200m", "memory": "256Mi"}, "limits": map[string]any{"memory": "1Gi"}},
			"logLevel":  "debug", "logFormat": "console",
			"goRuntime": map[string]any{"gogc": "200", "memoryLimit": "768MiB"},
		}, func(t *testing.T, objs []*unstructured.Unstructured, cfg app.Config, vars map[string]string) {
			c := container(t, objs)
			assert.Equal(t, "registry.example/lockstep:v0.2.0", c["image"])
			assert.Equal(t, "Always", c["imagePullPolicy"])
			// Helm merges a map of values with the chart's: the CPU limit stays.
			assert.Equal(t, map[string]any{"requests": map[string]any{"cpu": "200m", "memory": "256Mi"}, "limits": map[string]any{"cpu": "1", "memory": "1Gi"}}, c["resources"])
			replicas, _, _ := unstructured.NestedInt64(find(objs, "Deployment", "lockstep").Object, "spec", "replicas")
			assert.Equal(t, int64(3), replicas)
			assert.Equal(t, "debug", cfg.LogLevel)
			assert.Equal(t, "console", cfg.LogFormat)
			assert.Equal(t, "200", vars["GOGC"])
			assert.Equal(t, "768MiB", vars["GOMEMLIMIT"])
		}},
		{"one replica: no disruption budget", map[string]any{"replicas": 1}, func(t *testing.T, objs []*unstructured.Unstructured, _ app.Config, _ map[string]string) {
			assert.Nil(t, find(objs, "PodDisruptionBudget", "lockstep"), "a budget of one replica would block every drain")
		}},
		{"resync", map[string]any{"resync": map[string]any{"interval": "5m", "brokerConcurrency": 8, "brokerQPS": "2.5"}},
			func(t *testing.T, _ []*unstructured.Unstructured, cfg app.Config, _ map[string]string) {
				assert.Equal(t, 5*time.Minute, cfg.ResyncInterval)
				assert.Equal(t, 8, cfg.ResyncBrokerConcurrency)
				assert.InDelta(t, 2.5, cfg.ResyncBrokerQPS, 1e-9)
			}},
		{"extra settings", map[string]any{"env": []any{map[string]any{"name": "LOCKSTEP_KEEP_OPERATIONS", "value": "3"}}},
			func(t *testing.T, _ []*unstructured.Unstructured, cfg app.Config, _ map[string]string) {
				assert.Equal(t, 3, cfg.KeepOperations)
			}},
		{"embedded broker on bbolt", map[string]any{"replicas": 1, "embeddedBroker": map[string]any{
			"enabled": true, "name": "local", "registries": "remote=oci:registry.example/bundles",
			"store": map[string]any{"bbolt": map[string]any{"existingClaim": "broker-state"}},
		}}, func(t *testing.T, objs []*unstructured.Unstructured, cfg app.Config, _ map[string]string) {
			assert.True(t, cfg.EmbeddedBroker)
			assert.Equal(t, "local", cfg.EmbeddedBrokerName)
			settings, err := app.LoadEmbeddedSettings()
			require.NoError(t, err)
			assert.Equal(t, "bbolt", settings.Store)
			assert.Equal(t, "remote=oci:registry.example/bundles", settings.Registries)
			assert.Equal(t, "/var/lib/lockstep-broker/broker.db", settings.BboltPath)
			d := find(objs, "Deployment", "lockstep")
			strategy, _, _ := unstructured.NestedString(d.Object, "spec", "strategy", "type")
			assert.Equal(t, "Recreate", strategy, "one writer of the bbolt file at a time")
			assert.Contains(t, mounts(t, objs), "/var/lib/lockstep-broker")
			volumes, _, _ := unstructured.NestedSlice(d.Object, "spec", "template", "spec", "volumes")
			assert.Contains(t, volumes, map[string]any{"name": "broker-state", "persistentVolumeClaim": map[string]any{"claimName": "broker-state"}})
		}},
		{"embedded broker on etcd", map[string]any{"embeddedBroker": map[string]any{"enabled": true, "store": map[string]any{
			"type": "etcd", "etcd": map[string]any{"endpoints": "https://etcd-0.example:2379,https://etcd-1.example:2379", "credentialsSecret": "etcd-auth"},
		}}}, func(t *testing.T, _ []*unstructured.Unstructured, cfg app.Config, _ map[string]string) {
			assert.True(t, cfg.EmbeddedBroker)
			assert.Equal(t, "embedded", cfg.EmbeddedBrokerName)
			settings, err := app.LoadEmbeddedSettings()
			require.NoError(t, err)
			assert.Equal(t, "etcd", settings.Store)
			assert.Equal(t, []string{"https://etcd-0.example:2379", "https://etcd-1.example:2379"}, settings.EtcdEndpoints)
			assert.Equal(t, "/lockstep-broker/", settings.EtcdPrefix)
			assert.Equal(t, "from-secret", settings.EtcdUsername)
			assert.Equal(t, "from-secret", settings.EtcdPassword)
		}},
		{"cert-manager", map[string]any{"certManager": map[string]any{"enabled": true, "duration": "720h", "renewBefore": "240h"}},
			func(t *testing.T, objs []*unstructured.Unstructured, _ app.Config, _ map[string]string) {
				cert := find(objs, "Certificate", "lockstep-webhook")
				require.NotNil(t, cert)
				assert.Equal(t, map[string]any{"secretName": "lockstep-webhook-tls", "duration": "720h", "renewBefore": "240h"},
					map[string]any{"secretName": cert.Object["spec"].(map[string]any)["secretName"],
						"duration": cert.Object["spec"].(map[string]any)["duration"], "renewBefore": cert.Object["spec"].(map[string]any)["renewBefore"]})
				assert.Nil(t, find(objs, "Secret", "lockstep-webhook-tls"), "cert-manager writes the Secret")
			}},
		{"ServiceBrokers", map[string]any{"serviceBrokers": []any{
			map[string]any{"name": "acme", "url": "https://broker.example", "relistInterval": "5m",
				"authSecretRef": map[string]any{"namespace": "brokers", "name": "acme-auth", "type": "bearer"}, "caBundle": "-----BEGIN CERTIFICATE-----"},
			map[string]any{"name": "plain", "url": "http://plain.example"},
		}}, func(t *testing.T, objs []*unstructured.Unstructured, _ app.Config, _ map[string]string) {
			acme := find(objs, "ServiceBroker", "acme")
			require.NotNil(t, acme)
			assert.Equal(t, map[string]any{"url": "https://broker.example", "relistInterval": "5m", "caBundle": "LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0t",
				"authSecretRef": map[string]any{"namespace": "brokers", "name": "acme-auth", "type": "bearer"}}, acme.Object["spec"])
			assert.Equal(t, "keep", acme.GetAnnotations()["helm.sh/resource-policy"], "kept on uninstall")
			plain := find(objs, "ServiceBroker", "plain")
			require.NotNil(t, plain)
			assert.Equal(t, map[string]any{"url": "http://plain.example"}, plain.Object["spec"])
		}},
		{"scheduling", map[string]any{"nodeSelector": map[string]any{"pool": "system"},
			"tolerations": []any{map[string]any{"key": "dedicated", "operator": "Exists"}}},
			func(t *testing.T, objs []*unstructured.Unstructured, _ app.Config, _ map[string]string) {
				spec := find(objs, "Deployment", "lockstep").Object["spec"].(map[string]any)["template"].(map[string]any)["spec"].(map[string]any)
				assert.Equal(t, map[string]any{"pool": "system"}, spec["nodeSelector"])
				assert.Equal(t, []any{map[string]any{"key": "dedicated", "operator": "Exists"}}, spec["tolerations"])
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			objs := render(t, tt.values)
			cfg, vars := configOf(t, container(t, objs))
			tt.check(t, objs, cfg, vars)
		})
	}
}

// mounts are the paths the container mounts.
func mounts(t *testing.T, objs []*unstructured.Unstructured) []string {
	t.Helper()
	var out []string
	for _, m := range container(t, objs)["volumeMounts"].([]any) {
		out = append(out, m.(map[string]any)["mountPath"].(string))
	}
	return out
}

// TestSettingsThatCannotWorkAreRefused: the chart refuses, before anything
// is applied, what lockstep could not run with, and says what to change.
func TestSettingsThatCannotWorkAreRefused(t *testing.T) {
	tests := []struct {
		name   string
		values map[string]any
		want   string
	}{
		{"bbolt with two replicas", map[string]any{"embeddedBroker": map[string]any{"enabled": true}},
			"embeddedBroker.store.type=bbolt keeps the embedded broker's state in one file for one replica: set replicas=1"},
		{"etcd without endpoints", map[string]any{"embeddedBroker": map[string]any{"enabled": true, "store": map[string]any{"type": "etcd"}}},
			"embeddedBroker.store.type=etcd needs embeddedBroker.store.etcd.endpoints"},
		{"a log level lockstep does not know", map[string]any{"logLevel": "verbose"}, "logLevel"},
		{"a misspelt value", map[string]any{"replica": 3}, "replica"},
		{"a ServiceBroker without URL", map[string]any{"serviceBrokers": []any{map[string]any{"name": "x"}}}, "url"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := tryRender(tt.values)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tt.want)
		})
	}
}
