package helm

import (
	"context"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/kelseyhightower/envconfig"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/lockstep-dev/lockstep/internal/app"
	"github.com/lockstep-dev/lockstep/internal/broker/embedded"
	"github.com/lockstep-dev/lockstep/internal/broker/embedded/executor"
	"github.com/lockstep-dev/lockstep/internal/tracing"
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
			assert.True(t, cfg.MetricsSecure, "metrics over HTTPS to authorized clients")
			assert.False(t, cfg.EnableHTTP2)
			assert.Equal(t, "1.2", cfg.TLSMinVersion)
			assert.NotNil(t, find(objs, "NetworkPolicy", "lockstep"), "a NetworkPolicy by default")
			assert.Nil(t, find(objs, "NetworkPolicy", "lockstep-embedded-broker"), "none for a broker that is not there")
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
		{"image by digest", map[string]any{"image": map[string]any{"tag": "v0.2.0", "digest": "sha256:" + strings.Repeat("ab", 32)},
			"embeddedBroker": map[string]any{"enabled": true}},
			func(t *testing.T, objs []*unstructured.Unstructured, _ app.Config, _ map[string]string) {
				pinned := "ghcr.io/lockstep-dev/lockstep:v0.2.0@sha256:" + strings.Repeat("ab", 32)
				assert.Equal(t, pinned, container(t, objs)["image"])
				d := find(objs, "Deployment", "lockstep-embedded-broker")
				require.NotNil(t, d)
				containers, _, _ := unstructured.NestedSlice(d.Object, "spec", "template", "spec", "containers")
				assert.Equal(t, pinned, containers[0].(map[string]any)["image"], "the embedded broker's pod runs the same image")
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
		{"embedded broker on bbolt", map[string]any{"embeddedBroker": map[string]any{
			"enabled": true, "name": "local", "registries": "remote=oci:registry.example/bundles",
			"store":   map[string]any{"bbolt": map[string]any{"existingClaim": "broker-state"}},
			"actions": map[string]any{"users": "60000-60015", "maxConcurrent": 16, "maxMemory": "256Mi", "maxCPU": "1m", "maxProcesses": 32, "maxTime": "20m"},
			"env":     []any{map[string]any{"name": "LOCKSTEP_BROKER_JOB_TIMEOUT", "value": "5m"}},
		}}, func(t *testing.T, objs []*unstructured.Unstructured, cfg app.Config, vars map[string]string) {
			assert.False(t, cfg.EmbeddedBroker, "lockstep's pod runs no broker")
			for k := range vars {
				assert.NotContains(t, k, "EMBEDDED_BROKER", "lockstep's pod runs no broker")
			}
			settings := brokerSettings(t, objs)
			assert.Equal(t, "bbolt", settings.Store)
			assert.Equal(t, "remote=oci:registry.example/bundles", settings.Registries)
			assert.Equal(t, "/var/lib/lockstep-broker/broker.db", settings.BboltPath)
			assert.Equal(t, "60000-60015", settings.ActionUsers)
			assert.Equal(t, 16, settings.MaxConcurrentJobs)
			assert.Equal(t, "256Mi", settings.ActionMaxMemory)
			assert.Equal(t, time.Minute, settings.ActionMaxCPU)
			assert.Equal(t, 32, settings.ActionMaxProcesses)
			assert.Equal(t, 20*time.Minute, settings.ActionMaxTime)
			assert.Equal(t, 5*time.Minute, settings.JobTimeout)
			d := find(objs, "Deployment", "lockstep-embedded-broker")
			strategy, _, _ := unstructured.NestedString(d.Object, "spec", "strategy", "type")
			assert.Equal(t, "Recreate", strategy, "one writer of the bbolt file at a time")
			volumes, _, _ := unstructured.NestedSlice(d.Object, "spec", "template", "spec", "volumes")
			assert.Contains(t, volumes, map[string]any{"name": "state", "persistentVolumeClaim": map[string]any{"claimName": "broker-state"}})
			sb := find(objs, "ServiceBroker", "local")
			require.NotNil(t, sb)
			url, _, _ := unstructured.NestedString(sb.Object, "spec", "url")
			assert.Equal(t, "https://lockstep-embedded-broker.lockstep-system.svc", url)
		}},
		{"embedded broker on etcd, with credentials of the administrator's", map[string]any{"embeddedBroker": map[string]any{"enabled": true, "replicas": 3,
			"auth":  map[string]any{"existingSecret": "broker-auth"},
			"store": map[string]any{"type": "etcd", "etcd": map[string]any{"endpoints": "https://etcd-0.example:2379,https://etcd-1.example:2379", "credentialsSecret": "etcd-auth"}},
		}}, func(t *testing.T, objs []*unstructured.Unstructured, _ app.Config, _ map[string]string) {
			settings := brokerSettings(t, objs)
			assert.Equal(t, "etcd", settings.Store)
			assert.Equal(t, []string{"https://etcd-0.example:2379", "https://etcd-1.example:2379"}, settings.EtcdEndpoints)
			assert.Equal(t, "/lockstep-broker/", settings.EtcdPrefix)
			assert.Equal(t, "from-secret etcd-auth", settings.EtcdUsername)
			assert.Equal(t, "from-secret etcd-auth", settings.EtcdPassword)
			assert.Equal(t, "from-secret broker-auth", settings.Username, "the administrator's Secret")
			assert.Equal(t, "from-secret broker-auth", settings.Password)
			assert.Nil(t, find(objs, "Secret", "lockstep-embedded-broker-auth"), "the chart makes no credentials of its own")
			sb := find(objs, "ServiceBroker", "embedded")
			require.NotNil(t, sb)
			ref, _, _ := unstructured.NestedMap(sb.Object, "spec", "authSecretRef")
			assert.Equal(t, map[string]any{"namespace": "lockstep-system", "name": "broker-auth", "type": "basic"}, ref)
			d := find(objs, "Deployment", "lockstep-embedded-broker")
			replicas, _, _ := unstructured.NestedInt64(d.Object, "spec", "replicas")
			assert.Equal(t, int64(3), replicas)
			strategy, _, _ := unstructured.NestedString(d.Object, "spec", "strategy", "type")
			assert.Equal(t, "RollingUpdate", strategy)
		}},
		{"the embedded broker's pod", map[string]any{"embeddedBroker": map[string]any{"enabled": true}},
			func(t *testing.T, objs []*unstructured.Unstructured, _ app.Config, _ map[string]string) {
				d := find(objs, "Deployment", "lockstep-embedded-broker")
				require.NotNil(t, d)
				pod, _, _ := unstructured.NestedMap(d.Object, "spec", "template", "spec")
				assert.Equal(t, false, pod["automountServiceAccountToken"], "no token mounted")
				sa := find(objs, "ServiceAccount", pod["serviceAccountName"].(string))
				require.NotNil(t, sa)
				assert.Equal(t, false, sa.Object["automountServiceAccountToken"])
				for _, u := range objs {
					if strings.HasSuffix(u.GetKind(), "RoleBinding") {
						subjects, _, _ := unstructured.NestedSlice(u.Object, "subjects")
						for _, s := range subjects {
							assert.NotEqual(t, sa.GetName(), s.(map[string]any)["name"], "no role is bound to the broker")
						}
					}
				}
				c := pod["containers"].([]any)[0].(map[string]any)
				caps, _, _ := unstructured.NestedMap(c, "securityContext", "capabilities")
				assert.Equal(t, map[string]any{"drop": []any{"ALL"}, "add": []any{"SETUID", "SETGID"}}, caps)
				settings := brokerSettings(t, objs)
				assert.Equal(t, "from-secret lockstep-embedded-broker-auth", settings.Username, "basic auth on")
				assert.Equal(t, "50000-50063", settings.ActionUsers)
				assert.Equal(t, 64, settings.MaxConcurrentJobs)
				assert.Equal(t, ":8443", brokerEnv(t, objs)["LOCKSTEP_BROKER_LISTEN"])
				assert.NotEmpty(t, brokerEnv(t, objs)["LOCKSTEP_BROKER_TLS_CERT_FILE"], "HTTPS")
				np := find(objs, "NetworkPolicy", "lockstep-embedded-broker")
				require.NotNil(t, np, "a NetworkPolicy for the broker's pods")
				selector, _, _ := unstructured.NestedMap(np.Object, "spec", "podSelector", "matchLabels")
				brokerPods, _, _ := unstructured.NestedMap(d.Object, "spec", "selector", "matchLabels")
				assert.Equal(t, brokerPods, selector)
				lockstepPods, _, _ := unstructured.NestedMap(find(objs, "Deployment", "lockstep").Object, "spec", "selector", "matchLabels")
				rules, _, _ := unstructured.NestedSlice(np.Object, "spec", "ingress")
				assert.Equal(t, []any{map[string]any{"from": []any{map[string]any{"podSelector": map[string]any{"matchLabels": lockstepPods}}}, "ports": []any{port("osb")}}},
					rules, "only lockstep's pods reach the broker, on its OSB port")
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
				"authSecretRef": map[string]any{"name": "acme-auth", "type": "bearer"}, "caBundle": "-----BEGIN CERTIFICATE-----"},
			map[string]any{"name": "plain", "url": "http://plain.example"},
		}}, func(t *testing.T, objs []*unstructured.Unstructured, _ app.Config, _ map[string]string) {
			acme := find(objs, "ServiceBroker", "acme")
			require.NotNil(t, acme)
			assert.Equal(t, map[string]any{"url": "https://broker.example", "relistInterval": "5m", "caBundle": "LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0t",
				"authSecretRef": map[string]any{"namespace": namespace, "name": "acme-auth", "type": "bearer"}}, acme.Object["spec"], "the Secret is in the release's namespace")
			assert.Equal(t, "keep", acme.GetAnnotations()["helm.sh/resource-policy"], "kept on uninstall")
			plain := find(objs, "ServiceBroker", "plain")
			require.NotNil(t, plain)
			assert.Equal(t, map[string]any{"url": "http://plain.example"}, plain.Object["spec"])
		}},
		{"monitoring's scrape job and runbooks", map[string]any{"monitoring": map[string]any{"job": "lockstep-metrics",
			"prometheusRule": map[string]any{"enabled": true, "runbookURL": "https://runbooks.example/lockstep/"}, "dashboard": map[string]any{"enabled": true}}},
			func(t *testing.T, objs []*unstructured.Unstructured, _ app.Config, _ map[string]string) {
				rule := find(objs, "PrometheusRule", "lockstep")
				require.NotNil(t, rule)
				groups, _, _ := unstructured.NestedSlice(rule.Object, "spec", "groups")
				require.NotEmpty(t, groups)
				exprs := map[string]string{}
				for _, r := range groups[0].(map[string]any)["rules"].([]any) {
					r := r.(map[string]any)
					exprs[r["alert"].(string)] = r["expr"].(string)
					url := r["annotations"].(map[string]any)["runbook_url"]
					assert.Equal(t, "https://runbooks.example/lockstep/"+r["alert"].(string)+".md", url)
				}
				assert.Equal(t, `absent(up{job="lockstep-metrics"} == 1)`, exprs["LockstepDown"])
				dashboard := find(objs, "ConfigMap", "lockstep-grafana-dashboard")
				require.NotNil(t, dashboard)
				raw := dashboard.Object["data"].(map[string]any)["grafana-dashboard.json"].(string)
				assert.Contains(t, raw, `up{job=\"lockstep-metrics\"}`)
				assert.NotContains(t, raw, "lockstep-webhook")
			}},
		{"tracing", map[string]any{"tracing": map[string]any{"enabled": true, "endpoint": "http://otel-collector.observability:4317", "samplerArg": "0.25"}},
			func(t *testing.T, _ []*unstructured.Unstructured, _ app.Config, vars map[string]string) {
				assert.Equal(t, map[string]string{"OTEL_TRACES_EXPORTER": "otlp", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://otel-collector.observability:4317",
					"OTEL_EXPORTER_OTLP_PROTOCOL": "grpc", "OTEL_TRACES_SAMPLER": "parentbased_traceidratio", "OTEL_TRACES_SAMPLER_ARG": "0.25"}, otel(vars))
				// lockstep turns tracing on with them (configOf set them).
				shutdown, err := tracing.Setup(context.Background(), io.Discard)
				require.NoError(t, err)
				assert.True(t, tracing.On())
				require.NoError(t, shutdown(context.Background()))
			}},
		{"tracing off by default", nil, func(t *testing.T, _ []*unstructured.Unstructured, _ app.Config, vars map[string]string) {
			assert.Empty(t, otel(vars))
		}},
		{"serving: HTTP/2 and TLS 1.3", map[string]any{"serving": map[string]any{"enableHTTP2": true, "tlsMinVersion": "1.3"}},
			func(t *testing.T, _ []*unstructured.Unstructured, cfg app.Config, _ map[string]string) {
				assert.True(t, cfg.EnableHTTP2)
				assert.Equal(t, "1.3", cfg.TLSMinVersion)
			}},
		{"network policy off", map[string]any{"networkPolicy": map[string]any{"enabled": false}, "embeddedBroker": map[string]any{"enabled": true}},
			func(t *testing.T, objs []*unstructured.Unstructured, _ app.Config, _ map[string]string) {
				assert.Nil(t, find(objs, "NetworkPolicy", "lockstep"))
				assert.Nil(t, find(objs, "NetworkPolicy", "lockstep-embedded-broker"))
			}},
		{"network policy: metrics from the monitoring namespace", map[string]any{"networkPolicy": map[string]any{"metricsFrom": []any{monitoringNamespace}}},
			func(t *testing.T, objs []*unstructured.Unstructured, _ app.Config, _ map[string]string) {
				assert.Equal(t, []any{
					map[string]any{"ports": []any{port("webhook"), port("health")}},
					map[string]any{"from": []any{monitoringNamespace}, "ports": []any{port("metrics")}},
				}, ingress(t, objs), "the webhook and health ports from anywhere, the metrics port from the monitoring namespace only")
			}},
		{"network policy: the webhook from the control plane, metrics from monitoring", map[string]any{"networkPolicy": map[string]any{
			"webhookFrom": []any{controlPlane}, "metricsFrom": []any{monitoringNamespace}}},
			func(t *testing.T, objs []*unstructured.Unstructured, _ app.Config, _ map[string]string) {
				assert.Equal(t, []any{
					map[string]any{"ports": []any{port("health")}},
					map[string]any{"from": []any{monitoringNamespace}, "ports": []any{port("metrics")}},
					map[string]any{"from": []any{controlPlane}, "ports": []any{port("webhook")}},
				}, ingress(t, objs))
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

// brokerEnv is the embedded broker's container's environment; a variable
// from a Secret has the value "from-secret <name>".
func brokerEnv(t *testing.T, objs []*unstructured.Unstructured) map[string]string {
	t.Helper()
	d := find(objs, "Deployment", "lockstep-embedded-broker")
	require.NotNil(t, d)
	containers, _, err := unstructured.NestedSlice(d.Object, "spec", "template", "spec", "containers")
	require.NoError(t, err)
	require.Len(t, containers, 1)
	vars := map[string]string{}
	for _, e := range containers[0].(map[string]any)["env"].([]any) {
		m := e.(map[string]any)
		value, literal := m["value"].(string)
		if !literal {
			name, _, _ := unstructured.NestedString(m, "valueFrom", "secretKeyRef", "name")
			value = "from-secret " + name
		}
		vars[m["name"].(string)] = value
	}
	return vars
}

// brokerSettings reads the embedded broker's settings from its container's
// environment as the broker does, and checks that it can start with them.
func brokerSettings(t *testing.T, objs []*unstructured.Unstructured) embedded.Settings {
	t.Helper()
	for k, v := range brokerEnv(t, objs) {
		t.Setenv(k, v)
	}
	var s embedded.Settings
	require.NoError(t, envconfig.Process("LOCKSTEP_BROKER", &s), "the broker reads its settings")
	users, err := executor.ParseUsers(s.ActionUsers)
	require.NoError(t, err)
	assert.GreaterOrEqual(t, users.Count, s.MaxConcurrentJobs, "a user for every running action")
	return s
}

// otel are the OTEL_* variables among vars.
func otel(vars map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range vars {
		if strings.HasPrefix(k, "OTEL_") {
			out[k] = v
		}
	}
	return out
}

// Sources of a NetworkPolicy in the tests: a namespace, addresses.
var (
	monitoringNamespace = map[string]any{"namespaceSelector": map[string]any{"matchLabels": map[string]any{"kubernetes.io/metadata.name": "monitoring"}}}
	controlPlane        = map[string]any{"ipBlock": map[string]any{"cidr": "10.0.0.0/24"}}
)

// port is a NetworkPolicy's port of that name.
func port(name string) map[string]any { return map[string]any{"port": name, "protocol": "TCP"} }

// ingress is the rendered NetworkPolicy's ingress rules.
func ingress(t *testing.T, objs []*unstructured.Unstructured) []any {
	t.Helper()
	np := find(objs, "NetworkPolicy", "lockstep")
	require.NotNil(t, np)
	rules, _, err := unstructured.NestedSlice(np.Object, "spec", "ingress")
	require.NoError(t, err)
	return rules
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
		{"bbolt with two replicas", map[string]any{"embeddedBroker": map[string]any{"enabled": true, "replicas": 2}},
			"embeddedBroker.store.type=bbolt keeps the embedded broker's state in one file for one replica: set embeddedBroker.replicas=1"},
		{"fewer action users than running actions", map[string]any{"embeddedBroker": map[string]any{"enabled": true, "actions": map[string]any{"users": "50000-50009"}}},
			"embeddedBroker.actions.users 50000-50009 are 10 users, fewer than embeddedBroker.actions.maxConcurrent (64)"},
		{"action users that are no range", map[string]any{"embeddedBroker": map[string]any{"enabled": true, "actions": map[string]any{"users": "nobody"}}}, "users"},
		{"a digest that is none", map[string]any{"image": map[string]any{"digest": "latest"}}, "digest"},
		{"a misspelt action limit", map[string]any{"embeddedBroker": map[string]any{"actions": map[string]any{"maxMemroy": "1Gi"}}}, "maxMemroy"},
		{"etcd without endpoints", map[string]any{"embeddedBroker": map[string]any{"enabled": true, "store": map[string]any{"type": "etcd"}}},
			"embeddedBroker.store.type=etcd needs embeddedBroker.store.etcd.endpoints"},
		{"a log level lockstep does not know", map[string]any{"logLevel": "verbose"}, "logLevel"},
		{"a misspelt value", map[string]any{"replica": 3}, "replica"},
		{"a ServiceBroker without URL", map[string]any{"serviceBrokers": []any{map[string]any{"name": "x"}}}, "url"},
		{"tracing without an endpoint", map[string]any{"tracing": map[string]any{"enabled": true}}, "tracing.enabled needs tracing.endpoint"},
		{"a sampler OpenTelemetry does not have", map[string]any{"tracing": map[string]any{"enabled": true, "endpoint": "http://c:4317", "sampler": "sometimes"}}, "sampler"},
		{"a TLS version lockstep does not take", map[string]any{"serving": map[string]any{"tlsMinVersion": "1.1"}}, "tlsMinVersion"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := tryRender(tt.values)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tt.want)
		})
	}
}
