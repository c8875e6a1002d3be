package main

import (
	"path/filepath"
	"strings"
)

// controlPlaneBinaries are the processes devenv starts (etcd and
// kube-apiserver through envtest, kube-controller-manager itself).
var controlPlaneBinaries = map[string]bool{"etcd": true, "kube-apiserver": true, "kube-controller-manager": true}

// isLeftover reports whether a process's command line is an etcd,
// kube-apiserver or kube-controller-manager that a devenv started for
// stateDir: one of its arguments names a path inside the state directory
// (etcd's --data-dir, kube-apiserver's --cert-dir,
// kube-controller-manager's --kubeconfig).
func isLeftover(argv []string, stateDir string) bool {
	if len(argv) == 0 || !controlPlaneBinaries[filepath.Base(argv[0])] {
		return false
	}
	prefix := filepath.Clean(stateDir) + string(filepath.Separator)
	for _, arg := range argv[1:] {
		if _, value, ok := strings.Cut(arg, "="); ok && strings.HasPrefix(value, prefix) {
			return true
		}
	}
	return false
}
