package main

import (
	"path/filepath"
	"strings"
)

// controlPlaneBinaries are the processes devenv starts (through envtest).
var controlPlaneBinaries = map[string]bool{"etcd": true, "kube-apiserver": true}

// isLeftover reports whether a process's command line is an etcd or
// kube-apiserver that a devenv started for stateDir: one of its arguments
// names a path inside the state directory (etcd's --data-dir,
// kube-apiserver's --cert-dir).
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
