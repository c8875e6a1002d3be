package executor_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/lockstep-dev/lockstep/internal/broker/embedded/bundle"
	"github.com/lockstep-dev/lockstep/internal/broker/embedded/executor"
)

func manifest(timeout time.Duration, l *bundle.Limits) *bundle.Manifest {
	return &bundle.Manifest{Name: "greedy", Timeout: bundle.Duration(timeout), Limits: l}
}

func quantity(s string) *resource.Quantity {
	q := resource.MustParse(s)
	return &q
}

// TestLimitsOfAManifest: a manifest gets what it asks for within the
// maximum, the maximum for what it leaves out, and asking for more than
// the maximum is refused, every excess named with the setting that raises
// it.
func TestLimitsOfAManifest(t *testing.T) {
	max := executor.Limits{Memory: 1 << 30, CPU: time.Minute, Processes: 64, Time: time.Hour}
	tests := []struct {
		name     string
		manifest *bundle.Manifest
		want     executor.Limits
		wantErr  []string
	}{
		{"nothing asked: the maximum", manifest(0, nil), max, nil},
		{"less than the maximum", manifest(time.Minute, &bundle.Limits{Memory: quantity("256Mi"), CPU: bundle.Duration(30 * time.Second), Processes: 8}),
			executor.Limits{Memory: 256 << 20, CPU: 30 * time.Second, Processes: 8, Time: time.Hour}, nil},
		{"exactly the maximum", manifest(time.Hour, &bundle.Limits{Memory: quantity("1Gi"), CPU: bundle.Duration(time.Minute), Processes: 64}), max, nil},
		{"more than the maximum", manifest(2*time.Hour, &bundle.Limits{Memory: quantity("2Gi"), CPU: bundle.Duration(time.Hour), Processes: 1000}), max, []string{
			`bundle "greedy" asks for more than the broker's maximum`,
			"timeout 2h0m0s is more than this broker allows (1h0m0s, its ACTION_MAX_TIME setting)",
			"limits.memory 2Gi is more than this broker allows (1Gi, its ACTION_MAX_MEMORY setting)",
			"limits.cpu 1h0m0s is more than this broker allows (1m0s, its ACTION_MAX_CPU setting)",
			"limits.processes 1000 is more than this broker allows (64, its ACTION_MAX_PROCESSES setting)",
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := max.Check(tt.manifest)
			if tt.wantErr == nil {
				require.NoError(t, err)
			} else {
				require.Error(t, err)
				for _, w := range tt.wantErr {
					assert.Contains(t, err.Error(), w)
				}
			}
			assert.Equal(t, tt.want, max.For(tt.manifest), "a spec kept from before the maximum was lowered runs within it")
		})
	}
	assert.NoError(t, executor.Limits{}.Check(manifest(100*time.Hour, &bundle.Limits{Processes: 1 << 20})), "no maximum refuses nothing")
}

func TestLimitsString(t *testing.T) {
	assert.Equal(t, "64Mi of memory and 2s of CPU time per process, 8 processes",
		executor.Limits{Memory: 64 << 20, CPU: 1500 * time.Millisecond, Processes: 8, Time: time.Hour}.String(), "CPU time in whole seconds, as the kernel counts it")
	assert.Equal(t, "512Mi of memory per process", executor.Limits{Memory: 512 << 20}.String())
	assert.Equal(t, "no limits", executor.Limits{Time: time.Hour}.String())
}

func TestParseUsers(t *testing.T) {
	tests := []struct {
		in      string
		want    executor.Users
		wantErr string
	}{
		{"", executor.Users{}, ""},
		{"50000-50063", executor.Users{First: 50000, Count: 64}, ""},
		{" 7000 ", executor.Users{First: 7000, Count: 1}, ""},
		{"0-63", executor.Users{}, "user 0 is root"},
		{"50063-50000", executor.Users{}, "first <= last"},
		{"many", executor.Users{}, "want first-last"},
		{"1-4294967295", executor.Users{}, "ids stop at"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := executor.ParseUsers(tt.in)
			if tt.wantErr != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tt.wantErr)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
			assert.Equal(t, tt.in != "", got.Enabled())
		})
	}
}
