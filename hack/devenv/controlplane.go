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
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// The kubectl user, a cluster admin. Its name is what BrokerOperations and
// the broker's originating identity show.
const (
	kubectlUser    = "dev"
	kubeconfigName = "lockstep"
)

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
}

// startControlPlane starts etcd (data kept in the state directory) and
// kube-apiserver on the remembered ports, installs the CRDs and the webhook
// configurations (a URL on loopback and the CA of the serving certificate
// envtest generates), and writes the kubeconfig.
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
	env := &envtest.Environment{
		BinaryAssetsDirectory:    o.assets,
		CRDDirectoryPaths:        []string{crdPath(o.root)},
		ErrorIfCRDPathMissing:    true,
		ControlPlaneStartTimeout: time.Minute,
		ControlPlaneStopTimeout:  30 * time.Second,
		WebhookInstallOptions: envtest.WebhookInstallOptions{
			Paths:            []string{manifestsPath(o.root)},
			LocalServingHost: "127.0.0.1",
			LocalServingPort: ports.Webhook,
		},
	}
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

	admin, err := env.Start()
	if err != nil {
		_ = env.Stop()
		return nil, fmt.Errorf("starting etcd and kube-apiserver (see %s): %w", s.logDir(), err)
	}
	cp := &controlPlane{env: env, admin: admin, url: strings.TrimSuffix(admin.Host, "/")}
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
	cfg := user.Config()
	kc := clientcmdapi.NewConfig()
	kc.Clusters[kubeconfigName] = &clientcmdapi.Cluster{Server: cfg.Host, CertificateAuthorityData: cfg.CAData}
	kc.AuthInfos[kubectlUser] = &clientcmdapi.AuthInfo{ClientCertificateData: cfg.CertData, ClientKeyData: cfg.KeyData}
	kc.Contexts[kubeconfigName] = &clientcmdapi.Context{Cluster: kubeconfigName, AuthInfo: kubectlUser, Namespace: "default"}
	kc.CurrentContext = kubeconfigName
	raw, err := clientcmd.Write(*kc)
	if err != nil {
		return fmt.Errorf("encoding the kubeconfig: %w", err)
	}
	// Written whole, then renamed: a kubectl running meanwhile never reads
	// half a file.
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, raw, 0o600); err != nil {
		return fmt.Errorf("writing the kubeconfig: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("writing the kubeconfig: %w", err)
	}
	return nil
}

// stop stops kube-apiserver and etcd (SIGTERM, then SIGKILL after the stop
// timeout) and removes envtest's temporary files; etcd's data stays.
func (cp *controlPlane) stop() error {
	if err := cp.env.Stop(); err != nil {
		return fmt.Errorf("stopping kube-apiserver and etcd: %w", err)
	}
	return nil
}
