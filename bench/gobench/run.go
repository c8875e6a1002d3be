package gobench

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"strings"
)

// Options say which benchmarks to run and how long.
type Options struct {
	// GoTool is the go command.
	GoTool string
	// Dir is the module root the packages are relative to.
	Dir string
	// Packages are package patterns (./internal/validate).
	Packages []string
	// Pattern is the -bench regular expression ("." for all).
	Pattern string
	// Benchtime is -benchtime (1s, 100x).
	Benchtime string
	// Count is -count (at least 1).
	Count int
	// Flags are extra go test flags (-race).
	Flags []string
}

// Run runs the benchmarks with -benchmem and returns their results and
// the raw output.
func Run(ctx context.Context, o Options) ([]Result, string, error) {
	count := max(o.Count, 1)
	args := append([]string{"test"}, o.Flags...)
	args = append(args, "-run", "^$", "-bench", o.Pattern, "-benchmem", "-benchtime", o.Benchtime, "-count", fmt.Sprint(count))
	args = append(args, o.Packages...)
	cmd := exec.CommandContext(ctx, o.GoTool, args...)
	cmd.Dir = o.Dir
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return nil, out.String(), fmt.Errorf("go %s: %w\n%s", strings.Join(args, " "), err, tail(out.String(), 40))
	}
	res, err := Parse(&out)
	if err != nil {
		return nil, out.String(), err
	}
	if len(res) == 0 {
		return nil, out.String(), fmt.Errorf("go %s ran no benchmark", strings.Join(args, " "))
	}
	return res, out.String(), nil
}

func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
