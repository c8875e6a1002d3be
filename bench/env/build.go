package env

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/lockstep-dev/lockstep/test/framework"
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
	if err := framework.Build(ctx, root, dir, flags, "./cmd/webhook", "./bench/cmd/allow-all"); err != nil {
		return Binaries{}, err
	}
	return Binaries{Webhook: filepath.Join(dir, "webhook"), AllowAll: filepath.Join(dir, "allow-all")}, nil
}

// Checkout writes the tree of the commit ref of the repository at root
// into a new directory under parent, for a benchmark of an earlier
// lockstep, and returns the directory and the commit's short name.
func Checkout(ctx context.Context, root, ref, parent string) (dir, commit string, err error) {
	out, err := exec.CommandContext(ctx, "git", "-C", root, "rev-parse", "--short", ref+"^{commit}").Output()
	if err != nil {
		return "", "", fmt.Errorf("%q is not a commit of the repository at %s: %w", ref, root, err)
	}
	commit = strings.TrimSpace(string(out))
	if dir, err = os.MkdirTemp(parent, "lockstep-"+commit+"-"); err != nil {
		return "", "", err
	}
	archive := exec.CommandContext(ctx, "git", "-C", root, "archive", "--format=tar", commit)
	extract := exec.CommandContext(ctx, "tar", "-x", "-C", dir)
	if extract.Stdin, err = archive.StdoutPipe(); err != nil {
		return "", "", err
	}
	var stderr strings.Builder
	archive.Stderr, extract.Stderr = &stderr, &stderr
	if err := extract.Start(); err != nil {
		return "", "", fmt.Errorf("extracting commit %s: %w", commit, err)
	}
	if err := archive.Run(); err != nil {
		_ = extract.Wait()
		return "", "", fmt.Errorf("git archive %s: %w: %s", commit, err, stderr.String())
	}
	if err := extract.Wait(); err != nil {
		return "", "", fmt.Errorf("extracting commit %s: %w: %s", commit, err, stderr.String())
	}
	return dir, commit, nil
}
