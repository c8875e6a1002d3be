// Command kubectl-lockstep is `kubectl lockstep`, lockstep's kubectl
// plugin: put it on the PATH and kubectl finds it. See internal/plugin.
package main

import (
	"os"

	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/lockstep-dev/lockstep/internal/plugin"
)

func main() {
	os.Exit(plugin.Run(os.Args[1:], genericiooptions.IOStreams{In: os.Stdin, Out: os.Stdout, ErrOut: os.Stderr}))
}
