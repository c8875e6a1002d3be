package suite

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lockstep-dev/lockstep/bench/env"
	"github.com/lockstep-dev/lockstep/internal/app"
	"github.com/lockstep-dev/lockstep/internal/broker/fakebroker"
)

// The settings reach lockstep as the configuration it reads.
func TestResyncSettingsEnviron(t *testing.T) {
	for _, settings := range []ResyncSettings{Full().Resync, Tiny().Resync} {
		for _, kv := range settings.environ() {
			k, v, ok := strings.Cut(kv, "=")
			require.True(t, ok, kv)
			t.Setenv(k, v)
		}
		c, err := app.LoadConfig()
		require.NoError(t, err)
		assert.Equal(t, settings.Interval, c.ResyncInterval)
		assert.Equal(t, settings.QPS, c.ResyncBrokerQPS)
		assert.Equal(t, settings.Concurrency, c.ResyncBrokerConcurrency)
	}
	k, v, _ := strings.Cut(resyncOff, "=")
	t.Setenv(k, v)
	c, err := app.LoadConfig()
	require.NoError(t, err)
	assert.Zero(t, c.ResyncInterval, "resync off")
}

// A full pass must be bounded by the limit, not by the interval: the
// instances are due faster than they may be fetched.
func TestFullResyncRunsAtTheLimit(t *testing.T) {
	full := Full()
	due := float64(full.ScaleInstances) / full.Resync.Interval.Seconds()
	assert.Greater(t, due, full.Resync.QPS)
	pass := time.Duration(float64(full.ScaleInstances) / full.Resync.QPS * float64(time.Second))
	assert.LessOrEqual(t, pass, time.Minute, "a pass of the full benchmark stays short")
}

func TestWithinLimit(t *testing.T) {
	tests := []struct {
		name   string
		count  int
		window time.Duration
		want   bool
	}{
		{"at the rate", 10000, 20 * time.Second, true},
		{"the rate plus the burst", 10008, 20 * time.Second, true},
		{"one more than the burst", 10009, 20 * time.Second, false},
		{"burst alone in no time", 8, 0, true},
		{"under the rate", 4000, 20 * time.Second, true},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, withinLimit(tt.count, tt.window, 500, 8), tt.name)
	}
}

func TestFetchRate(t *testing.T) {
	assert.InDelta(t, 500.0, fetchRate(10000, 20*time.Second), 1e-9)
	assert.Zero(t, fetchRate(10, 0), "no window, no rate")
}

func TestPeakRate(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(ms, count int) countSample {
		return countSample{at: t0.Add(time.Duration(ms) * time.Millisecond), count: count}
	}
	tests := []struct {
		name    string
		samples []countSample
		want    float64
	}{
		{"no samples", nil, 0},
		{"shorter than a second", []countSample{at(0, 0), at(500, 300)}, 0},
		{"steady", []countSample{at(0, 0), at(500, 250), at(1000, 500), at(1500, 750), at(2000, 1000)}, 500},
		{"a burst in the second second", []countSample{at(0, 0), at(1000, 400), at(1500, 700), at(2000, 1000)}, 600},
		{"late sample: rate over its real span", []countSample{at(0, 0), at(900, 450), at(1250, 625)}, 500},
	}
	for _, tt := range tests {
		assert.InDelta(t, tt.want, peakRate(tt.samples, time.Second), 1e-9, tt.name)
	}
}

func TestCovered(t *testing.T) {
	want := map[string]bool{"a": true, "b": true, "c": true}
	calls := []fakebroker.Call{{InstanceID: "a"}, {InstanceID: "a"}, {InstanceID: "x"}, {InstanceID: "c"}}
	assert.Equal(t, 2, covered(calls, want), "each id once; ids of other objects do not count")
	assert.Equal(t, 3, covered(append(calls, fakebroker.Call{InstanceID: "b"}), want))
}

func TestWritesBetween(t *testing.T) {
	parse := func(text string) env.Metrics {
		m, err := env.ParseMetrics(strings.NewReader(text))
		require.NoError(t, err)
		return m
	}
	before := parse(`
apiserver_request_duration_seconds_count{group="coordination.k8s.io",resource="leases",subresource="",verb="PUT",version="v1"} 40
apiserver_request_duration_seconds_count{group="lockstep.dev",resource="serviceinstances",subresource="status",verb="PUT",version="v1alpha1"} 10000
apiserver_request_duration_seconds_count{group="lockstep.dev",resource="serviceinstances",subresource="",verb="GET",version="v1alpha1"} 5
`)
	after := parse(`
apiserver_request_duration_seconds_count{group="coordination.k8s.io",resource="leases",subresource="",verb="PUT",version="v1"} 53
apiserver_request_duration_seconds_count{group="lockstep.dev",resource="serviceinstances",subresource="status",verb="PUT",version="v1alpha1"} 10000
apiserver_request_duration_seconds_count{group="lockstep.dev",resource="serviceinstances",subresource="status",verb="PATCH",version="v1alpha1"} 2
apiserver_request_duration_seconds_count{group="lockstep.dev",resource="serviceinstances",subresource="",verb="GET",version="v1alpha1"} 9
apiserver_request_duration_seconds_count{group="",resource="events",subresource="",verb="POST",version="v1"} 1
`)
	writes := writesBetween(before, after)
	assert.Equal(t, map[string]float64{"PUT leases": 13, "PATCH serviceinstances/status": 2, "POST events": 1}, writes,
		"reads and unchanged counts left out; a series new since the first scrape counted from zero")
	assert.InDelta(t, 2.0, resyncPass{writes: writes}.statusWrites(), 1e-9)
	assert.Equal(t, "PUT leases 13, PATCH serviceinstances/status 2, POST events 1", counts(writes))
	assert.Equal(t, "none", counts(nil))
	assert.Equal(t, "InSync 9990, GoneAtBroker 5, ParametersDrift 5",
		counts(map[string]float64{"ParametersDrift": 5, "InSync": 9990, "GoneAtBroker": 5}))
}

func TestResyncPassCPU(t *testing.T) {
	p := resyncPass{window: 20 * time.Second, fetches: 10000, cpu: 5 * time.Second}
	assert.Equal(t, "5.00 s (25% of one core), 500 µs per fetch", p.cpuUse())
	assert.Equal(t, dur(0), resyncPass{}.cpuUse(), "no pass, no share")
}
