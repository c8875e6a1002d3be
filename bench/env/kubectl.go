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

// Kubectl runs the real kubectl of the control plane's binaries as the
// benchmark's administrator and returns what it printed. Its discovery
// cache is the control plane's own, as for every kubectl of the tests.
func (e *Env) Kubectl(ctx context.Context, args ...string) ([]byte, error) {
	kubeconfig := filepath.Join(e.Dir, "admin.kubeconfig")
	if _, err := os.Stat(kubeconfig); err != nil {
		if err := framework.WriteKubeconfig(e.Config, "admin", "", kubeconfig); err != nil {
			return nil, err
		}
	}
	cmd := exec.CommandContext(ctx, filepath.Join(e.opts.Assets, "kubectl"), append([]string{"--kubeconfig", kubeconfig}, args...)...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return out, fmt.Errorf("kubectl %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return out, nil
}
