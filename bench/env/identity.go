package env

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	authenticationv1 "k8s.io/api/authentication/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"
)

// The identity deploy/ gives lockstep: its service account, bound to the
// ClusterRole of deploy/rbac.
const (
	serviceAccount = "lockstep"
	// ServiceAccountUser is the username the API server sees for lockstep.
	ServiceAccountUser = "system:serviceaccount:" + LockstepNamespace + ":" + serviceAccount
)

// rbacFiles are the manifests of deploy/ under root that give lockstep its
// identity and permissions: its namespace, then every manifest of
// deploy/rbac (the service account, the ClusterRoles and their bindings).
func rbacFiles(root string) ([]string, error) {
	files := []string{filepath.Join(root, "deploy", "manager", "namespace.yaml")}
	rbac, err := filepath.Glob(filepath.Join(root, "deploy", "rbac", "*.yaml"))
	if err != nil {
		return nil, err
	}
	for _, f := range rbac {
		if filepath.Base(f) != "kustomization.yaml" {
			files = append(files, f)
		}
	}
	if len(files) == 1 {
		return nil, fmt.Errorf("no manifests in %s", filepath.Join(root, "deploy", "rbac"))
	}
	return files, nil
}

// serviceAccountKubeconfig installs deploy/'s namespace, service account,
// ClusterRole and ClusterRoleBinding from root, and returns a kubeconfig
// that reaches the API server with a token of that service account: lockstep
// then runs with exactly the permissions a deployment gives it, and the API
// server sees the username a deployment's requests carry (which the webhook
// configurations' matchConditions compare against).
func serviceAccountKubeconfig(ctx context.Context, cfg *rest.Config, c client.Client, root string) ([]byte, error) {
	files, err := rbacFiles(root)
	if err != nil {
		return nil, err
	}
	for _, file := range files {
		if err := applyFile(ctx, c, file); err != nil {
			return nil, err
		}
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("creating a clientset: %w", err)
	}
	req := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To(int64(24 * 3600))}}
	tok, err := cs.CoreV1().ServiceAccounts(LockstepNamespace).CreateToken(ctx, serviceAccount, req, metav1.CreateOptions{})
	if err != nil {
		return nil, fmt.Errorf("requesting a token of service account %s/%s: %w", LockstepNamespace, serviceAccount, err)
	}
	kc := clientcmdapi.NewConfig()
	kc.Clusters["bench"] = &clientcmdapi.Cluster{Server: cfg.Host, CertificateAuthorityData: cfg.CAData}
	kc.AuthInfos["lockstep"] = &clientcmdapi.AuthInfo{Token: tok.Status.Token}
	kc.Contexts["bench"] = &clientcmdapi.Context{Cluster: "bench", AuthInfo: "lockstep"}
	kc.CurrentContext = "bench"
	raw, err := clientcmd.Write(*kc)
	if err != nil {
		return nil, fmt.Errorf("writing the service account's kubeconfig: %w", err)
	}
	return raw, nil
}

// applyFile creates every object of a YAML file (those that exist already
// are left as they are).
func applyFile(ctx context.Context, c client.Client, path string) error {
	raw, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("reading %s: %w", path, err)
	}
	reader := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(raw)))
	for {
		doc, err := reader.Read()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("reading %s: %w", path, err)
		}
		var obj unstructured.Unstructured
		if err := yaml.Unmarshal(doc, &obj.Object); err != nil {
			return fmt.Errorf("decoding %s: %w", path, err)
		}
		if len(obj.Object) == 0 {
			continue
		}
		if err := c.Create(ctx, &obj); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("creating %s %q from %s: %w", obj.GetKind(), obj.GetName(), path, err)
		}
	}
}
