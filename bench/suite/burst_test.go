package suite

import (
	"errors"
	"fmt"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/lockstep-dev/lockstep/bench/env"
	"github.com/lockstep-dev/lockstep/bench/loadgen"
	"github.com/lockstep-dev/lockstep/bench/report"
)

func TestBurstObjectsComeApplicationByApplication(t *testing.T) {
	a := burstArms[0]
	objs := burstObjects(a, "ns", 3)
	names := objectsOf(a, "ns", 3)
	require.Len(t, objs, 6)
	require.Len(t, names, 6)
	ids := map[string]bool{}
	for k, u := range objs {
		want := []schema.GroupVersionKind{a.instance, a.binding}[k%2]
		assert.Equal(t, want, u.GroupVersionKind(), "object %d", k)
		assert.Equal(t, burstName(k/2), u.GetName())
		assert.Equal(t, "ns", u.GetNamespace())
		assert.Equal(t, u.GroupVersionKind(), names[k].GroupVersionKind())
		assert.Equal(t, u.GetName(), names[k].GetName())
		id, _, _ := unstructured.NestedString(u.Object, "spec", "externalID")
		assert.False(t, ids[id], "every object has an external id of its own")
		ids[id] = true
	}
	instance, _, _ := unstructured.NestedString(objs[1].Object, "spec", "instanceName")
	assert.Equal(t, objs[0].GetName(), instance, "the binding names its application's instance")
	broker, _, _ := unstructured.NestedString(objs[0].Object, "spec", "brokerName")
	assert.Equal(t, env.EmbeddedBrokerName, broker)
}

func TestRefusal(t *testing.T) {
	gr := schema.GroupResource{Group: "lockstep.dev", Resource: "serviceinstances"}
	assert.Equal(t, "409", refusal(apierrors.NewConflict(gr, "a", errors.New("lock held"))))
	assert.Equal(t, "422", refusal(fmt.Errorf("applying: %w", apierrors.NewInvalid(schema.GroupKind{Kind: "ServiceBinding"}, "a", nil))))
	assert.Equal(t, "503", refusal(apierrors.NewGenericServerResponse(http.StatusServiceUnavailable, "PATCH", gr, "a", "", 0, false)))
	assert.Equal(t, "no answer", refusal(errors.New("connection reset")))
}

// phase is a burst of objects whose items were each refused with a 409
// conflicts[i] times before they were done, settled after settled.
func phase(arm int, settled time.Duration, conflicts ...int) burstPhase {
	p := burstPhase{arm: burstArms[arm], settled: settled}
	for _, n := range conflicts {
		o := loadgen.Outcome{Done: true, At: settled}
		if n > 0 {
			o.Refusals = map[string]int{"409": n}
		}
		p.sent.Items = append(p.sent.Items, o)
	}
	return p
}

func TestBurstTargets(t *testing.T) {
	tests := []struct {
		name   string
		phases []burstPhase
		want   []report.Status
		got    []string
	}{
		{
			name:   "within the targets",
			phases: []burstPhase{phase(0, 3*time.Second, 0, 3), phase(1, time.Second, 0, 0), phase(2, 2*time.Second, 0, 0)},
			want:   []report.Status{report.Met, report.Met, report.Met},
			got:    []string{"1.50x (lockstep 3.00 s, floor 2.00 s)", "0 failed, 0 stuck of 2", "most 3 (3 in all)"},
		},
		{
			name:   "slower than twice the floor, conflicts retried too often",
			phases: []burstPhase{phase(0, 5*time.Second, 4, 1), phase(1, time.Second, 0, 0), phase(2, 2*time.Second, 0, 0)},
			want:   []report.Status{report.Missed, report.Met, report.Missed},
			got:    []string{"2.50x (lockstep 5.00 s, floor 2.00 s)", "0 failed, 0 stuck of 2", "most 4 (5 in all)"},
		},
		{
			name: "did not finish: stuck objects",
			phases: func() []burstPhase {
				l := phase(0, 0, 0, 0)
				l.unsettled = 1
				return []burstPhase{l, phase(1, time.Second, 0, 0), phase(2, 2*time.Second, 0, 0)}
			}(),
			want: []report.Status{report.Missed, report.Missed, report.Met},
			got:  []string{"did not finish: 1 of 2 Ready", "0 failed, 1 stuck of 2", "most 0 (0 in all)"},
		},
		{
			name:   "the floor did not finish",
			phases: []burstPhase{phase(0, time.Second, 0), phase(1, time.Second, 0), phase(2, 0, 0)},
			want:   []report.Status{report.NotMeasured, report.Met, report.Met},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			targets := burstTargets("apply", "Ready", tt.phases)
			require.Len(t, targets, len(tt.want))
			for i, target := range targets {
				assert.Equal(t, tt.want[i], target.Status, "%s: %s", target.What, target.Got)
				if tt.got != nil {
					assert.Equal(t, tt.got[i], target.Got, target.What)
				}
			}
		})
	}
}

func TestNamespaceTarget(t *testing.T) {
	gone := []namespaceDeletion{{arm: burstArms[0], gone: 4 * time.Second}, {arm: burstArms[1], gone: 2 * time.Second}}
	assert.Equal(t, report.Target{What: "namespace deletion of a burst's objects", Want: "gone, nothing stuck",
		Got: "gone in 4.00 s (2.00x no webhooks)", Status: report.Met}, namespaceTarget(gone, time.Minute))
	stuck := []namespaceDeletion{{arm: burstArms[0], left: 3}, gone[1]}
	assert.Equal(t, report.Missed, namespaceTarget(stuck, time.Minute).Status)
	assert.Equal(t, "not gone after 1m0s: 3 objects left", namespaceTarget(stuck, time.Minute).Got)
	assert.Equal(t, report.NotMeasured, namespaceTarget(nil, time.Minute).Status)
}

func TestMostCounts(t *testing.T) {
	m := map[string]float64{"APPLY serviceinstances": 4, "POST leases": 3, "GET secrets": 2, "LIST pods": 1}
	assert.Equal(t, "APPLY serviceinstances 4, POST leases 3; 2 other kinds; 10 in all", mostCounts(m, 2))
	assert.Equal(t, counts(m), mostCounts(m, 4))
}

func TestBurstTableSetsLockstepBesideEachFloor(t *testing.T) {
	phases := []burstPhase{phase(0, 12*time.Second, 0), phase(1, 2*time.Second, 0), phase(2, 3*time.Second, 0), phase(3, 6*time.Second, 0)}
	table := burstTable("apply", phases)
	require.Len(t, table.Rows, len(burstArms))
	col := func(name string) int {
		i := slices.Index(table.Header, name)
		require.NotEqual(t, -1, i, name)
		return i
	}
	lockstep, admission := table.Rows[0], table.Rows[burstAdmission]
	assert.Equal(t, "4.00x", lockstep[col("vs floor")])
	assert.Equal(t, "2.00x", lockstep[col("vs admission floor")])
	assert.Equal(t, "6.00x", lockstep[col("vs no webhooks")])
	assert.Equal(t, "2.00x", admission[col("vs floor")], "what webhooks and a status cost beyond the write-ahead floor")
	assert.Equal(t, "1.00x", admission[col("vs admission floor")])
}

func TestOnlyTheAdmissionFloorWritesStatusAndTakesTheLock(t *testing.T) {
	a := burstArms[burstAdmission]
	assert.True(t, a.floor, "the admission floor takes the write-ahead floor's lock")
	assert.True(t, a.writesStatus)
	assert.Equal(t, env.AllowedInstance, a.instance)
	assert.Equal(t, env.AllowedBinding, a.binding)
	for k, other := range burstArms {
		if k != burstAdmission {
			assert.False(t, other.writesStatus, other.name)
		}
	}
	assert.True(t, apply.readies)
	assert.False(t, remove.readies, "a delete leaves no status to write")
}
