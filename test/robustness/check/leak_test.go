package check

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/lockstep-dev/lockstep/api/v1alpha1"
	"github.com/lockstep-dev/lockstep/test/robustness/history"
)

func TestLeaks(t *testing.T) {
	tests := []struct {
		name      string
		instances []v1alpha1.ServiceInstance
		bindings  []v1alpha1.ServiceBinding
		requests  []history.Request
		want      []string // objects of the violations
	}{
		{name: "every id claimed",
			instances: []v1alpha1.ServiceInstance{instance("db", "id-1", "small", ``, nil)},
			bindings:  []v1alpha1.ServiceBinding{binding("b", "bid-1", "db", nil)}},
		{name: "nothing claims them",
			want: []string{`instance id-1 at broker "fake"`, `binding bid-1 of instance id-1 at broker "fake"`}},
		{name: "the instance was detached once",
			requests: []history.Request{{ExternalID: "id-1", Policy: v1alpha1.PolicyDetachOnDelete}}},
		{name: "the binding was observed once, the instance was managed",
			requests: []history.Request{{ExternalID: "bid-1", Policy: v1alpha1.PolicyObserve}, {ExternalID: "id-1", Policy: v1alpha1.PolicyManage}},
			want:     []string{`instance id-1 at broker "fake"`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := broker()
			b.Instances["id-1"] = Instance{PlanID: "small-id"}
			b.Bindings["id-1/bid-1"] = Binding{}
			got := Leaks(Snapshot{Instances: tt.instances, Bindings: tt.bindings, Requests: tt.requests, Brokers: map[string]*Broker{"fake": b}})
			var objects []string
			for _, v := range got {
				assert.Equal(t, NoLeak, v.Invariant)
				objects = append(objects, v.Object)
			}
			assert.Equal(t, tt.want, objects)
		})
	}
}

func TestDoubleProvisions(t *testing.T) {
	b := broker()
	b.Creations = map[string]int{"id-1": 1, "id-2": 2, "id-1/bid-1": 3}
	twin := instance("twin", "id-1", "small", ``, nil)
	twin.Namespace = "other"
	got := DoubleProvisions(Snapshot{
		Instances: []v1alpha1.ServiceInstance{instance("db", "id-1", "small", ``, nil), twin},
		Brokers:   map[string]*Broker{"fake": b},
	})
	var messages []string
	for _, v := range got {
		assert.Equal(t, NoDoubleProvision, v.Invariant)
		messages = append(messages, v.Object+": "+v.Message)
	}
	assert.Equal(t, []string{
		`id-1/bid-1 at broker "fake": the broker created it 3 times under the same id`,
		`id-2 at broker "fake": the broker created it 2 times under the same id`,
		"ServiceInstance ns/db: ServiceInstance ns/db and ServiceInstance other/twin claim the same broker id id-1",
	}, messages)
}
