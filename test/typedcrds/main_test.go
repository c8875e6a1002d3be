package typedcrds

import (
	"fmt"
	"os"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/lockstep-dev/lockstep/test/framework"
)

// env is the control plane every test shares: lockstep's CRDs, no
// webhooks.
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
		fmt.Fprintln(os.Stderr, "test/typedcrds:", err)
		return 1
	}
	cp, err := framework.Start(framework.Options{Name: "typedcrds", NoWebhooks: true})
	if err != nil {
		return fail(err)
	}
	defer func() { _ = cp.Stop() }()
	env.root, env.config = cp.Root, cp.Config
	scheme := runtime.NewScheme()
	if err := apiextensionsv1.AddToScheme(scheme); err != nil {
		return fail(err)
	}
	if err := corev1.AddToScheme(scheme); err != nil {
		return fail(err)
	}
	if env.client, err = client.New(cp.Config, client.Options{Scheme: scheme}); err != nil {
		return fail(err)
	}
	return m.Run()
}
