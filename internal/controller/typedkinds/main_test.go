package typedkinds_test

import (
	"fmt"
	"os"
	"testing"

	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/lockstep-dev/lockstep/test/framework"
)

// env is the control plane the tests share: a real kube-apiserver and
// etcd with lockstep's CRDs and no webhooks, and kube-controller-manager,
// so that deleted namespaces go.
var env struct {
	config *rest.Config
	client client.Client
}

func TestMain(m *testing.M) {
	os.Exit(runMain(m))
}

func runMain(m *testing.M) int {
	fail := func(err error) int {
		fmt.Fprintln(os.Stderr, "typedkinds:", err)
		return 1
	}
	cp, err := framework.Start(framework.Options{Name: "typedkinds", NoWebhooks: true, ControllerManager: true})
	if err != nil {
		return fail(err)
	}
	defer func() { _ = cp.Stop() }()
	env.config = cp.Config
	if env.client, err = cp.Client(); err != nil {
		return fail(err)
	}
	return m.Run()
}
