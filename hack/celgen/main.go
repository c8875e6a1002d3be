// Command celgen adds CEL validation rules, derived from the field-policy
// tags of lockstep's API types, to the CRD manifests controller-gen wrote
// (see internal/validate/celrules). `make generate` runs it after
// controller-gen; running it again changes nothing.
//
//	go run ./hack/celgen -dir deploy/crds
package main

import (
	"flag"
	"fmt"
	"os"

	"k8s.io/apimachinery/pkg/runtime"

	"github.com/lockstep-dev/lockstep/api/v1alpha1"
	"github.com/lockstep-dev/lockstep/internal/validate/celrules"
)

func main() {
	dir := flag.String("dir", "deploy/crds", "directory of the CRD manifests to add the rules to")
	flag.Parse()
	if err := run(*dir); err != nil {
		fmt.Fprintln(os.Stderr, "celgen:", err)
		os.Exit(1)
	}
}

func run(dir string) error {
	scheme := runtime.NewScheme()
	if err := v1alpha1.AddToScheme(scheme); err != nil {
		return err
	}
	return celrules.ApplyDir(dir, scheme.AllKnownTypes())
}
