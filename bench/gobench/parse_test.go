package gobench

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const sample = `goos: linux
goarch: amd64
pkg: github.com/lockstep-dev/lockstep/internal/validate
cpu: Intel(R) Xeon(R) Processor
BenchmarkValidateUpdateUnchanged-2             	   39001	      6791 ns/op	       0 B/op	       0 allocs/op
BenchmarkCompileCached-2                       	 6894919	        29.62 ns/op	       0 B/op	       0 allocs/op
PASS
ok  	github.com/lockstep-dev/lockstep/internal/validate	1.235s
pkg: github.com/lockstep-dev/lockstep/internal/broker/embedded
BenchmarkProvisionNoop-2   	     500	   2000000 ns/op	      1234 provisions/s	   50000 B/op	     300 allocs/op
BenchmarkSchemaCheck/quickValid-16        	  101283	      2345 ns/op	       0 B/op	       0 allocs/op
BenchmarkLogs
    bench_test.go:12: some log line
ok  	github.com/lockstep-dev/lockstep/internal/broker/embedded	3.1s
`

func TestParse(t *testing.T) {
	res, err := Parse(strings.NewReader(sample))
	require.NoError(t, err)
	require.Len(t, res, 4)

	tests := []struct {
		i       int
		pkg     string
		name    string
		n       int64
		metrics map[string]float64
	}{
		{0, "github.com/lockstep-dev/lockstep/internal/validate", "BenchmarkValidateUpdateUnchanged", 39001,
			map[string]float64{"ns/op": 6791, "B/op": 0, "allocs/op": 0}},
		{1, "github.com/lockstep-dev/lockstep/internal/validate", "BenchmarkCompileCached", 6894919,
			map[string]float64{"ns/op": 29.62, "B/op": 0, "allocs/op": 0}},
		{2, "github.com/lockstep-dev/lockstep/internal/broker/embedded", "BenchmarkProvisionNoop", 500,
			map[string]float64{"ns/op": 2e6, "provisions/s": 1234, "B/op": 50000, "allocs/op": 300}},
		{3, "github.com/lockstep-dev/lockstep/internal/broker/embedded", "BenchmarkSchemaCheck/quickValid", 101283,
			map[string]float64{"ns/op": 2345, "B/op": 0, "allocs/op": 0}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := res[tt.i]
			assert.Equal(t, tt.pkg, r.Package)
			assert.Equal(t, tt.name, r.Name)
			assert.Equal(t, tt.n, r.Iterations)
			assert.Equal(t, tt.metrics, r.Metrics)
		})
	}
	v, ok := res[2].Metric("provisions/s")
	assert.True(t, ok)
	assert.InDelta(t, 1234, v, 1e-9)
	_, ok = res[2].Metric("binds/s")
	assert.False(t, ok)
}

func TestParseRejectsABrokenValue(t *testing.T) {
	_, err := Parse(strings.NewReader("BenchmarkX-2  10  abc ns/op\n"))
	require.Error(t, err)
	assert.Contains(t, err.Error(), `value "abc"`)
}

func TestTrimProcs(t *testing.T) {
	for in, want := range map[string]string{
		"BenchmarkA-2":          "BenchmarkA",
		"BenchmarkA/sub-case-8": "BenchmarkA/sub-case",
		"BenchmarkA":            "BenchmarkA",
		"BenchmarkA/with-dash":  "BenchmarkA/with-dash",
	} {
		assert.Equal(t, want, trimProcs(in), in)
	}
}
