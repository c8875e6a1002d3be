// Command webhookns writes lockstep's namespace into the webhook
// configurations and lockstep's Role that controller-gen generated from
// the +kubebuilder:webhook and +kubebuilder:rbac markers: the markers name
// it as v1alpha1.NamespacePlaceholder, since a marker cannot name a
// constant, and this replaces every occurrence with
// v1alpha1.DefaultNamespace (`make generate` runs it after controller-gen):
//
//	go run ./hack/webhookns -file deploy/webhook/manifests.yaml
//	go run ./hack/webhookns -file deploy/rbac/cluster_role.yaml
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/lockstep-dev/lockstep/api/v1alpha1"
)

func main() {
	file := flag.String("file", "deploy/webhook/manifests.yaml", "a file controller-gen wrote from markers that name the placeholder")
	flag.Parse()
	if err := rewrite(*file); err != nil {
		fmt.Fprintln(os.Stderr, "webhookns:", err)
		os.Exit(1)
	}
}

func rewrite(file string) error {
	raw, err := os.ReadFile(file)
	if err != nil {
		return err
	}
	out, n := replace(string(raw))
	if n == 0 {
		return fmt.Errorf("%s names no %s: are the markers still written with it?", file, v1alpha1.NamespacePlaceholder)
	}
	return os.WriteFile(file, []byte(out), 0o644)
}
