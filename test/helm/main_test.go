package helm

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/lockstep-dev/lockstep/test/framework"
)

// env is what every test of the package shares.
var env struct {
	cp         *framework.ControlPlane
	admin      client.Client
	kubeconfig string // cluster admin, for Helm
	chart      string // charts/lockstep
	// deploy holds `kubectl kustomize deploy/<variant>` for base,
	// cert-manager, with-embedded-broker and monitoring.
	deploy map[string][]*unstructured.Unstructured
}

func TestMain(m *testing.M) {
	os.Exit(runMain(m))
}

func runMain(m *testing.M) int {
	fail := func(format string, args ...any) int {
		fmt.Fprintf(os.Stderr, "test/helm: "+format+"\n", args...)
		return 1
	}
	// The API server starts bare: the chart installs lockstep's CRDs and
	// webhook configurations itself. cert-manager's and the Prometheus
	// Operator's CRDs are stubbed, for the objects the chart makes for them.
	stubs := []string{
		filepath.Join("..", "deploy", "testdata", "cert-manager-crds.yaml"),
		filepath.Join("testdata", "prometheus-operator-crds.yaml"),
	}
	cp, err := framework.Start(framework.Options{
		Name:       "helm",
		NoWebhooks: true,
		Configure:  func(e *envtest.Environment) { e.CRDDirectoryPaths = stubs },
	})
	if err != nil {
		return fail("%v", err)
	}
	defer func() { _ = cp.Stop() }()
	env.cp = cp
	if env.admin, err = cp.Client(); err != nil {
		return fail("%v", err)
	}
	env.kubeconfig = filepath.Join(cp.Dir, "kubeconfig")
	if err := os.WriteFile(env.kubeconfig, cp.Env.KubeConfig, 0o600); err != nil {
		return fail("%v", err)
	}
	env.chart = filepath.Join(cp.Root, "charts", "lockstep")
	env.deploy = map[string][]*unstructured.Unstructured{}
	for _, v := range []string{"base", "cert-manager", "with-embedded-broker", "monitoring"} {
		if env.deploy[v], err = cp.Render(v); err != nil {
			return fail("%v", err)
		}
	}
	return m.Run()
}
