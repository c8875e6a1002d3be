package framework

import (
	"context"
	"errors"
	"fmt"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// InstallRBAC creates what an operator installs before lockstep starts,
// from the rendered manifests of deploy/base: lockstep's Namespace, its
// ServiceAccount, the RBAC of deploy/rbac and the admission policies that
// bound what the service account may write. It returns the username of
// the service account the Deployment runs as
// (system:serviceaccount:<namespace>:<name>). The API server enforces
// the policies a moment after they are created: a test that relies on
// them waits until they refuse.
func InstallRBAC(ctx context.Context, admin client.Client, rendered []*unstructured.Unstructured) (string, error) {
	var deployment *unstructured.Unstructured
	for _, u := range rendered {
		switch u.GetKind() {
		case "Namespace", "ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding",
			"ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding":
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
