package framework

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// Kubeconfig provisions a user with the groups and writes a kubeconfig for
// it into the working directory; it returns the file's path and the user's
// configuration.
func (cp *ControlPlane) Kubeconfig(name string, groups ...string) (string, *rest.Config, error) {
	user, err := cp.Env.AddUser(envtest.User{Name: name, Groups: groups}, nil)
	if err != nil {
		return "", nil, fmt.Errorf("adding user %q: %w", name, err)
	}
	raw, err := user.KubeConfig()
	if err != nil {
		return "", nil, fmt.Errorf("encoding the kubeconfig of %q: %w", name, err)
	}
	path := filepath.Join(cp.Dir, name+".kubeconfig")
	if err := os.WriteFile(path, raw, 0o600); err != nil {
		return "", nil, fmt.Errorf("writing the kubeconfig of %q: %w", name, err)
	}
	return path, user.Config(), nil
}

// WriteKubeconfig writes a kubeconfig for cfg's user, named user, whose
// context's namespace is namespace (none when empty).
func WriteKubeconfig(cfg *rest.Config, user, namespace, path string) error {
	kc := clientcmdapi.NewConfig()
	kc.Clusters["lockstep"] = &clientcmdapi.Cluster{Server: cfg.Host, CertificateAuthorityData: cfg.CAData}
	kc.AuthInfos[user] = &clientcmdapi.AuthInfo{ClientCertificateData: cfg.CertData, ClientKeyData: cfg.KeyData, Token: cfg.BearerToken}
	kc.Contexts["lockstep"] = &clientcmdapi.Context{Cluster: "lockstep", AuthInfo: user, Namespace: namespace}
	kc.CurrentContext = "lockstep"
	if err := clientcmd.WriteToFile(*kc, path); err != nil {
		return fmt.Errorf("writing the kubeconfig of %q: %w", user, err)
	}
	return nil
}

// ServiceAccountKubeconfig writes a kubeconfig into the working directory
// that reaches the API server with a token of the service account
// (system:serviceaccount:<namespace>:<name>), and returns its path: a
// process that uses it acts with exactly that account's permissions, under
// the username its requests carry in a cluster.
func (cp *ControlPlane) ServiceAccountKubeconfig(ctx context.Context, serviceAccount string) (string, error) {
	parts := strings.Split(serviceAccount, ":")
	if len(parts) != 4 || parts[0] != "system" || parts[1] != "serviceaccount" {
		return "", fmt.Errorf("%q is not a service account's username (system:serviceaccount:<namespace>:<name>)", serviceAccount)
	}
	namespace, name := parts[2], parts[3]
	cs, err := kubernetes.NewForConfig(cp.Config)
	if err != nil {
		return "", fmt.Errorf("creating a clientset: %w", err)
	}
	req := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To(int64(24 * 3600))}}
	tok, err := cs.CoreV1().ServiceAccounts(namespace).CreateToken(ctx, name, req, metav1.CreateOptions{})
	if err != nil {
		return "", fmt.Errorf("requesting a token of service account %s/%s: %w", namespace, name, err)
	}
	cfg := rest.AnonymousClientConfig(cp.Config)
	cfg.BearerToken = tok.Status.Token
	path := filepath.Join(cp.Dir, name+"-serviceaccount.kubeconfig")
	if err := WriteKubeconfig(cfg, name, namespace, path); err != nil {
		return "", err
	}
	return path, nil
}
