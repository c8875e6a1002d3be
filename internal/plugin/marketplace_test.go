package plugin

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/lockstep-dev/lockstep/api/v1alpha1"
)

func TestPrice(t *testing.T) {
	plan := func(free bool, metadata string) v1alpha1.ServicePlan {
		p := v1alpha1.ServicePlan{Spec: v1alpha1.ServicePlanSpec{Free: free}}
		if metadata != "" {
			p.Spec.Metadata = &runtime.RawExtension{Raw: []byte(metadata)}
		}
		return p
	}
	tests := []struct {
		name string
		plan v1alpha1.ServicePlan
		want string
	}{
		{"free", plan(true, `{"costs":[{"amount":{"usd":1},"unit":"MONTHLY"}]}`), "free"},
		{"costs", plan(false, `{"costs":[{"amount":{"usd":99,"eur":91.5},"unit":"MONTHLY"},{"amount":{"usd":0.01},"unit":"1GB of messages"}]}`),
			"91.50 EUR/monthly + 99.00 USD/monthly + 0.01 USD/1gb of messages"},
		{"no costs", plan(false, `{"displayName":"Large"}`), "not free"},
		{"no metadata", plan(false, ""), "not free"},
		{"metadata not as OSB says", plan(false, `{"costs":"a lot"}`), "not free"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, price(tt.plan))
		})
	}
}
