package e2e

import (
	"bytes"
	"context"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// result is what a person sees after running kubectl.
type result struct {
	Stdout, Stderr string
	ExitCode       int
}

// Output is stdout and stderr together, as a terminal shows them.
func (r result) Output() string { return r.Stdout + r.Stderr }

// kubectl runs the real kubectl as user alice, with stdin if given.
func kubectl(t *testing.T, stdin string, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, cluster.kubectl, append([]string{"--kubeconfig", cluster.kubeconfig}, args...)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if stdin != "" {
		cmd.Stdin = strings.NewReader(stdin)
	}
	err := cmd.Run()
	r := result{Stdout: stdout.String(), Stderr: stderr.String()}
	if exit, ok := err.(*exec.ExitError); ok {
		r.ExitCode = exit.ExitCode()
	} else if err != nil {
		t.Fatalf("running kubectl %s: %v", strings.Join(args, " "), err)
	}
	t.Logf("$ kubectl %s\n%s", strings.Join(args, " "), r.Output())
	return r
}
