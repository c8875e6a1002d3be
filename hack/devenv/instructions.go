package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"text/template"
)

// instructions is what make run prints once everything is ready.
type instructions struct {
	Root, Kubeconfig, Assets, Logs, State, APIServer string
	Metrics, Broker                                  int
	Services                                         []string
}

var nextSteps = template.Must(template.New("next").Funcs(template.FuncMap{
	"join":  strings.Join,
	"rel":   relativeTo,
	"shown": shown,
	"typed": typed,
}).Parse(`
lockstep is running.
  kube-apiserver   {{.APIServer}}
  controllers      namespace, garbage collector, ClusterRole aggregation (kube-controller-manager)
  webhooks         lockstep-mutating, lockstep-validating (deploy/webhook/manifests.yaml)
  broker           ServiceBroker "embedded" at http://127.0.0.1:{{.Broker}}, services: {{join .Services ", "}}
  metrics          http://127.0.0.1:{{.Metrics}}/metrics
  logs             {{shown .Root .Logs}}/
  state            {{shown .Root .State}}/ (kept across restarts; delete it to start afresh)

In another terminal, at the repository root:

  export KUBECONFIG={{typed .Root .Kubeconfig}}
  export PATH={{typed .Root .Assets}}:$PATH
  kubectl get servicebrokers
  kubectl apply -f {{rel .Root "examples/instance.yaml"}}

The README's walkthrough goes on from there. Ctrl-C here stops everything.
`))

// printNext prints the instructions.
func printNext(w io.Writer, in instructions) error {
	if err := nextSteps.Execute(w, in); err != nil {
		return fmt.Errorf("printing the instructions: %w", err)
	}
	return nil
}

// shown names a path as a person reads it: relative to the repository
// root when it is inside it, with ~ for the home directory, otherwise as
// it is; so the instructions read the same on every machine.
func shown(root, path string) string {
	if rel, ok := inside(root, path); ok {
		return rel
	}
	if home, err := os.UserHomeDir(); err == nil {
		if rel, ok := inside(home, path); ok {
			return "~/" + rel
		}
	}
	return path
}

// typed names a path as a person types it into a shell at the repository
// root: $PWD/ for a path inside the repository, $HOME/ for one in the home
// directory, otherwise as it is.
func typed(root, path string) string {
	if rel, ok := inside(root, path); ok {
		return "$PWD/" + rel
	}
	if home, err := os.UserHomeDir(); err == nil {
		if rel, ok := inside(home, path); ok {
			return "$HOME/" + rel
		}
	}
	return path
}

// inside returns path relative to dir, if it is below dir.
func inside(dir, path string) (string, bool) {
	if dir == "" || !filepath.IsAbs(path) {
		return "", false
	}
	rel, err := filepath.Rel(dir, path)
	if err != nil || rel == "." || rel == ".." || strings.HasPrefix(rel, "../") {
		return "", false
	}
	return filepath.ToSlash(rel), true
}

// relativeTo names a file of the repository as the user types it from root,
// checking that it is there.
func relativeTo(root, path string) (string, error) {
	if _, err := os.Stat(filepath.Join(root, path)); err != nil {
		return "", fmt.Errorf("%s is missing from the repository: %w", path, err)
	}
	return path, nil
}
