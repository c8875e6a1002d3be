package helm

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/lint/support"
)

// TestLint runs `helm lint --strict` on the chart, with its defaults and
// with every feature on: nothing above information is reported.
func TestLint(t *testing.T) {
	on := func() map[string]any { return map[string]any{"enabled": true} }
	for name, values := range map[string]map[string]any{
		"defaults": nil,
		"everything on": {
			"namespace":      map[string]any{"create": true},
			"certManager":    on(),
			"embeddedBroker": map[string]any{"enabled": true, "store": map[string]any{"type": "etcd", "etcd": map[string]any{"endpoints": "https://etcd.example:2379"}}},
			"serviceBrokers": []any{map[string]any{"name": "acme", "url": "https://broker.example"}},
			"monitoring":     map[string]any{"serviceMonitor": on(), "prometheusRule": on(), "dashboard": on()},
		},
	} {
		t.Run(name, func(t *testing.T) {
			lint := action.NewLint()
			lint.Strict, lint.Namespace, lint.KubeVersion = true, namespace, kubeVersion
			result := lint.Run([]string{env.chart}, values)
			assert.Equal(t, 1, result.TotalChartsLinted)
			assert.Empty(t, result.Errors)
			for _, m := range result.Messages {
				assert.LessOrEqual(t, m.Severity, support.InfoSev, "%s", m)
			}
		})
	}
}
