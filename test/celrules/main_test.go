package celrules

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/lockstep-dev/lockstep/internal/app"
)

// env is the control plane every test shares: the CRDs, no webhooks.
var env struct {
	root   string
	config *rest.Config
	client client.Client
}

func TestMain(m *testing.M) {
	os.Exit(runMain(m))
}

func runMain(m *testing.M) int {
	fail := func(format string, args ...any) int {
		fmt.Fprintf(os.Stderr, "test/celrules: "+format+"\n", args...)
		return 1
	}
	var err error
	if env.root, err = filepath.Abs("../.."); err != nil {
		return fail("%v", err)
	}
	assets, err := testBinaries(env.root)
	if err != nil {
		return fail("%v", err)
	}
	testEnv := &envtest.Environment{
		BinaryAssetsDirectory: assets,
		CRDDirectoryPaths:     []string{filepath.Join(env.root, "deploy", "crds")},
		ErrorIfCRDPathMissing: true,
	}
	if env.config, err = testEnv.Start(); err != nil {
		return fail("starting kube-apiserver and etcd with the CRDs: %v", err)
	}
	defer func() { _ = testEnv.Stop() }()
	if env.client, err = client.New(env.config, client.Options{Scheme: app.Scheme()}); err != nil {
		return fail("client: %v", err)
	}
	return m.Run()
}

// testBinaries returns the directory of kube-apiserver and etcd:
// $KUBEBUILDER_ASSETS, else what hack/testbin.sh provides.
func testBinaries(root string) (string, error) {
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
