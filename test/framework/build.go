package framework

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
)

// Build compiles the packages (./cmd/webhook, ...) of the working tree at
// root into dir with extra go build flags (-tags, ...); each binary is
// named after its package's directory.
func Build(ctx context.Context, root, dir string, flags []string, packages ...string) error {
	gobin, err := GoTool()
	if err != nil {
		return err
	}
	args := append([]string{"build"}, flags...)
	args = append(args, "-o", dir+string(filepath.Separator))
	args = append(args, packages...)
	cmd := exec.CommandContext(ctx, gobin, args...)
	cmd.Dir = root
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("building %s: %w\n%s", strings.Join(packages, " and "), err, strings.TrimSpace(string(out)))
	}
	return nil
}

// GoTool finds the go command, to build and to run Go tests and
// benchmarks: on PATH, else in the GOROOT this program was built with.
func GoTool() (string, error) {
	if p, err := exec.LookPath("go"); err == nil {
		return p, nil
	}
	p := filepath.Join(runtime.GOROOT(), "bin", "go")
	if _, err := os.Stat(p); err != nil {
		return "", fmt.Errorf("the go command is neither on PATH nor in %s: install Go or put it on PATH", runtime.GOROOT())
	}
	return p, nil
}
