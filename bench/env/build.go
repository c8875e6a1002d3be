package env

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
)

// Binaries are the programs a benchmark run starts.
type Binaries struct {
	// Webhook is lockstep's cmd/webhook.
	Webhook string
	// AllowAll is the baseline, bench/cmd/allow-all.
	AllowAll string
}

// Build compiles lockstep's webhook binary and the allow-all baseline from
// the working tree at root into dir, with extra go build flags.
func Build(ctx context.Context, root, dir string, flags []string) (Binaries, error) {
	gobin, err := GoTool()
	if err != nil {
		return Binaries{}, err
	}
	args := append([]string{"build"}, flags...)
	args = append(args, "-o", dir+string(filepath.Separator), "./cmd/webhook", "./bench/cmd/allow-all")
	cmd := exec.CommandContext(ctx, gobin, args...)
	cmd.Dir = root
	out, err := cmd.CombinedOutput()
	if err != nil {
		return Binaries{}, fmt.Errorf("building ./cmd/webhook and ./bench/cmd/allow-all: %w\n%s", err, strings.TrimSpace(string(out)))
	}
	return Binaries{Webhook: filepath.Join(dir, "webhook"), AllowAll: filepath.Join(dir, "allow-all")}, nil
}

// GoTool finds the go command, to build and to run Go benchmarks: on PATH,
// else in the GOROOT this program was built with.
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
