package framework

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"
)

// Render runs `kubectl kustomize deploy/<variant>` with the real kubectl
// and decodes the result.
func (cp *ControlPlane) Render(variant string) ([]*unstructured.Unstructured, error) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, cp.Kubectl, "kustomize", filepath.Join(cp.Root, "deploy", variant))
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("kubectl kustomize deploy/%s: %w\n%s", variant, err, stderr.String())
	}
	return Decode(stdout.String())
}

// Decode reads a stream of YAML documents (numbers as int64, as the API
// machinery reads them).
func Decode(manifests string) ([]*unstructured.Unstructured, error) {
	r := utilyaml.NewYAMLReader(bufio.NewReader(strings.NewReader(manifests)))
	var objs []*unstructured.Unstructured
	for {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			return objs, nil
		}
		if err != nil {
			return nil, fmt.Errorf("reading rendered manifests: %w", err)
		}
		raw, err := yaml.YAMLToJSON(doc)
		if err != nil {
			return nil, fmt.Errorf("decoding rendered manifests: %w", err)
		}
		if len(bytes.TrimSpace(raw)) == 0 || string(bytes.TrimSpace(raw)) == "null" {
			continue
		}
		u := &unstructured.Unstructured{}
		if err := u.UnmarshalJSON(raw); err != nil {
			return nil, fmt.Errorf("decoding rendered manifests: %w", err)
		}
		objs = append(objs, u)
	}
}

// InstallRBAC creates what an operator installs before lockstep starts,
// from the rendered manifests of deploy/base: lockstep's Namespace, its
// ServiceAccount and the RBAC of deploy/rbac. It returns the username of
// the service account the Deployment runs as
// (system:serviceaccount:<namespace>:<name>).
func InstallRBAC(ctx context.Context, admin client.Client, rendered []*unstructured.Unstructured) (string, error) {
	var deployment *unstructured.Unstructured
	for _, u := range rendered {
		switch u.GetKind() {
		case "Namespace", "ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding":
			if err := admin.Create(ctx, u.DeepCopy()); err != nil && !apierrors.IsAlreadyExists(err) {
				return "", fmt.Errorf("creating %s %s from deploy/base: %w", u.GetKind(), u.GetName(), err)
			}
		case "Deployment":
			deployment = u
		}
	}
	if deployment == nil {
		return "", errors.New("deploy/base renders no Deployment")
	}
	sa, _, _ := unstructured.NestedString(deployment.Object, "spec", "template", "spec", "serviceAccountName")
	if sa == "" {
		return "", errors.New("the Deployment names no serviceAccountName")
	}
	return "system:serviceaccount:" + deployment.GetNamespace() + ":" + sa, nil
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

// AsServiceAccount is cfg acting as the service account
// (system:serviceaccount:<namespace>:<name>), with the groups the API
// server gives a service account's token.
func AsServiceAccount(cfg *rest.Config, serviceAccount string) *rest.Config {
	c := rest.CopyConfig(cfg)
	parts := strings.Split(serviceAccount, ":")
	groups := []string{"system:serviceaccounts", "system:authenticated"}
	if len(parts) == 4 {
		groups = []string{"system:serviceaccounts", "system:serviceaccounts:" + parts[2], "system:authenticated"}
	}
	c.Impersonate = rest.ImpersonationConfig{UserName: serviceAccount, Groups: groups}
	return c
}
