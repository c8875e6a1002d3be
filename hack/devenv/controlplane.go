package main

import (
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/lockstep-dev/lockstep/test/framework"
)

// kubectlUser is the kubectl user, a cluster admin. Its name is what
// BrokerOperations and the broker's originating identity show; its
// kubeconfig's cluster and context are named "lockstep".
const kubectlUser = "dev"

func manifestsPath(root string) string {
	return filepath.Join(root, "deploy", "webhook", "manifests.yaml")
}
func crdPath(root string) string     { return filepath.Join(root, "deploy", "crds") }
func bundlesPath(root string) string { return filepath.Join(root, "examples", "bundles") }

// controlPlane is a running etcd and kube-apiserver with lockstep's CRDs
// and webhook configurations installed.
type controlPlane struct {
	env *envtest.Environment
	// admin is the configuration lockstep uses (envtest's admin user).
	admin *rest.Config
	url   string
	fw    *framework.ControlPlane
}

// startControlPlane starts etcd (data kept in the state directory) and
// kube-apiserver on the remembered ports with test/framework, as the tests
// do: it installs the CRDs and the webhook configurations (a URL on
// loopback and the CA of the serving certificate envtest generates). Then
// it writes the kubeconfig.
func startControlPlane(o options, s *state, ports Ports, logs *logFiles) (*controlPlane, error) {
	// envtest makes kube-apiserver's certificates (and users' CA) only in
	// a directory without them: the directory starts empty every time.
	if err := os.RemoveAll(s.apiserverDir()); err != nil {
		return nil, fmt.Errorf("clearing %s: %w", s.apiserverDir(), err)
	}
	for _, dir := range []string{s.etcdDir(), s.apiserverDir()} {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return nil, fmt.Errorf("creating %s: %w", dir, err)
		}
	}
	fw, err := framework.Start(framework.Options{
		Name: "run", Root: o.root, Assets: o.assets, Dir: s.dir, WebhookPort: ports.Webhook,
		TracingEndpoint: apiServerTracing(os.Getenv),
		Configure: func(env *envtest.Environment) {
			env.ControlPlaneStartTimeout = time.Minute
			env.ControlPlaneStopTimeout = 30 * time.Second
			env.ControlPlane.Etcd = &envtest.Etcd{
				DataDir: s.etcdDir(),
				URL:     &url.URL{Scheme: "http", Host: "127.0.0.1:" + strconv.Itoa(ports.Etcd)},
				Out:     logs.etcd, Err: logs.etcd,
			}
			api := env.ControlPlane.GetAPIServer()
			api.CertDir = s.apiserverDir()
			api.SecureServing.Address = "127.0.0.1"
			api.SecureServing.Port = strconv.Itoa(ports.APIServer)
			api.Out, api.Err = logs.apiserver, logs.apiserver
		},
	})
	if err != nil {
		return nil, fmt.Errorf("starting etcd and kube-apiserver (see %s): %w", s.logDir(), err)
	}
	cp := &controlPlane{env: fw.Env, admin: fw.Config, url: strings.TrimSuffix(fw.Config.Host, "/"), fw: fw}
	if err := cp.writeKubeconfig(s.kubeconfig()); err != nil {
		_ = cp.stop()
		return nil, err
	}
	return cp, nil
}

// writeKubeconfig provisions the kubectl user and writes a kubeconfig for
// it, with the default namespace.
func (cp *controlPlane) writeKubeconfig(path string) error {
	user, err := cp.env.AddUser(envtest.User{Name: kubectlUser, Groups: []string{"system:masters"}}, nil)
	if err != nil {
		return fmt.Errorf("provisioning the kubectl user %q: %w", kubectlUser, err)
	}
	// Written whole, then renamed: a kubectl running meanwhile never reads
	// half a file.
	tmp := path + ".tmp"
	if err := framework.WriteKubeconfig(user.Config(), kubectlUser, "default", tmp); err != nil {
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("writing the kubeconfig: %w", err)
	}
	return nil
}

// stop stops kube-apiserver and etcd (SIGTERM, then SIGKILL after the stop
// timeout) and removes envtest's temporary files; etcd's data stays.
func (cp *controlPlane) stop() error {
	return cp.fw.Stop()
}
