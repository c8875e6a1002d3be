package celrules

import (
	"fmt"
	"os"
	"testing"

	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/lockstep-dev/lockstep/test/framework"
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
	fail := func(err error) int {
		fmt.Fprintln(os.Stderr, "test/celrules:", err)
		return 1
	}
	cp, err := framework.Start(framework.Options{Name: "celrules", NoWebhooks: true})
	if err != nil {
		return fail(err)
	}
	defer func() { _ = cp.Stop() }()
	env.root, env.config = cp.Root, cp.Config
	if env.client, err = cp.Client(); err != nil {
		return fail(err)
	}
	return m.Run()
}
