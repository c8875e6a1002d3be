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
	"join": strings.Join,
	"rel":  relativeTo,
}).Parse(`
lockstep is running.
  kube-apiserver   {{.APIServer}}
  controllers      namespace, garbage collector (kube-controller-manager)
  webhooks         lockstep-mutating, lockstep-validating (deploy/webhook/manifests.yaml)
  broker           ServiceBroker "embedded" at http://127.0.0.1:{{.Broker}}, services: {{join .Services ", "}}
  metrics          http://127.0.0.1:{{.Metrics}}/metrics
  logs             {{.Logs}}/
  state            {{.State}}/ (kept across restarts; delete it to start afresh)

In another terminal, from {{.Root}}:

  export KUBECONFIG={{.Kubeconfig}}
  export PATH={{.Assets}}:$PATH
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

// relativeTo names a file of the repository as the user types it from root,
// checking that it is there.
func relativeTo(root, path string) (string, error) {
	if _, err := os.Stat(filepath.Join(root, path)); err != nil {
		return "", fmt.Errorf("%s is missing from the repository: %w", path, err)
	}
	return path, nil
}
