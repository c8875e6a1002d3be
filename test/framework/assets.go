package framework

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// Root returns the repository root: the nearest directory at or above the
// working directory that holds go.mod (a test runs in its package's
// directory).
func Root() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", fmt.Errorf("finding the repository root: %w", err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("finding the repository root: no go.mod above the working directory")
		}
		dir = parent
	}
}

// Assets returns the directory with kube-apiserver,
// kube-controller-manager, etcd and kubectl: KUBEBUILDER_ASSETS when set
// (make test sets it), else what hack/testbin.sh under root provides
// (cached after the first build).
func Assets(root string) (string, error) {
	if dir := os.Getenv("KUBEBUILDER_ASSETS"); dir != "" {
		return dir, nil
	}
	cmd := exec.Command("bash", filepath.Join(root, "hack", "testbin.sh"))
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("hack/testbin.sh could not provide the control plane: %w", err)
	}
	return strings.TrimSpace(string(out)), nil
}
