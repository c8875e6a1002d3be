package report

import (
	"context"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestMarkdown(t *testing.T) {
	started := time.Date(2026, 3, 4, 5, 6, 0, 0, time.UTC)
	r := Report{
		Title: "results", Started: started, Finished: started.Add(90 * time.Second), Command: "make bench",
		Preface: []string{"Read the ratios."},
		Machine: Machine{CPU: "Test CPU", Cores: 2, GOMAXPROCS: 2, MemoryMiB: 4096, Go: "go1.26", OS: "linux/amd64", Kernel: "6.1", Commit: "abc123"},
		Sections: []Section{{
			Title: "1. Admission", Text: []string{"What was measured."},
			Tables: []Table{{Caption: "**a table**", Header: []string{"a", "b"}, Rows: [][]string{{"1", "x|y"}, {"2"}}}},
			Targets: []Target{
				Check("p99", "<= 1.3x", "1.1x", true),
				Check("calls", "0", "2", false),
				{What: "schema", Want: "< 20 µs", Got: "absent", Status: NotMeasured},
			},
			Notes: []string{"a note\nover two lines"},
		}},
	}
	md := string(r.Markdown())
	for _, want := range []string{
		"# results\n\nRead the ratios.\n\n## Machine\n",
		"| CPU | Test CPU |",
		"| cores | 2 (GOMAXPROCS 2) |",
		"| OS | linux/amd64 6.1 |",
		"| date | 2026-03-04 05:06 UTC |",
		"| duration | 1m30s |",
		"| command | `make bench` |",
		"## Targets\n\n| benchmark | target | wanted | measured | status |\n|---|---|---|---|---|\n",
		"| 1. Admission | p99 | <= 1.3x | 1.1x | met |",
		"| 1. Admission | calls | 0 | 2 | MISSED |",
		"| 1. Admission | schema | < 20 µs | absent | not measured |",
		"## 1. Admission\n\nWhat was measured.\n\n**a table**\n\n| a | b |\n|---|---|\n| 1 | x\\|y |\n| 2 |  |\n",
		"- a note over two lines\n",
	} {
		assert.Contains(t, md, want)
	}
}

func TestMarkdownWithoutTargets(t *testing.T) {
	md := string((&Report{Title: "t", Sections: []Section{{Title: "s"}}}).Markdown())
	assert.NotContains(t, md, "## Targets")
	assert.Contains(t, md, "## s")
}

func TestMachineParsers(t *testing.T) {
	assert.Equal(t, "Intel(R) Xeon(R)", cpuModel([]byte("processor\t: 0\nmodel name\t: Intel(R) Xeon(R)\nflags\t: x\n")))
	assert.Equal(t, "unknown", cpuModel([]byte("processor\t: 0\n")))
	assert.Equal(t, int64(2048), memTotalMiB([]byte("MemTotal:        2097152 kB\nMemFree: 1 kB\n")))
	assert.Zero(t, memTotalMiB([]byte("nothing\n")))
}

func TestDetectMachine(t *testing.T) {
	m := DetectMachine(context.Background(), "", "")
	assert.Equal(t, runtime.NumCPU(), m.Cores)
	assert.Equal(t, runtime.Version(), m.Go)
	require.NotEmpty(t, m.CPU)
	assert.True(t, strings.HasPrefix(m.OS, runtime.GOOS+"/"))
	assert.Empty(t, m.Commit, "no repository given")
}
