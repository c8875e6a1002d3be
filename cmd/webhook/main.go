// Command webhook runs lockstep: the admission webhooks that carry every
// change of ServiceInstances and ServiceBindings out at the broker before
// the API server persists it. Configuration comes from LOCKSTEP_*
// environment variables (see docs/reference/configuration.md); the cluster connection from
// KUBECONFIG or the in-cluster service account.
package main

import (
	"fmt"
	"os"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/lockstep-dev/lockstep/internal/app"
)

func main() {
	cfg, err := app.LoadConfig()
	if err != nil {
		fmt.Fprintln(os.Stderr, "lockstep:", err)
		os.Exit(2)
	}
	ctrl.SetLogger(app.LazyValues(zap.New(app.Logger(cfg))))
	restConfig, err := ctrl.GetConfig()
	if err != nil {
		fmt.Fprintln(os.Stderr, "lockstep: no cluster to talk to (set KUBECONFIG or run in a pod):", err)
		os.Exit(2)
	}
	if err := app.Run(ctrl.SetupSignalHandler(), cfg, restConfig); err != nil {
		fmt.Fprintln(os.Stderr, "lockstep:", err)
		os.Exit(1)
	}
}
