package marketplace

// Each typed kind has two ClusterRoles, applied with its CRD and deleted
// with it (they are owned by the CRD too, for the garbage collector):
// lockstep:services:<plural>:edit and lockstep:services:<plural>:view.
// Creating a role requires holding what it grants: lockstep holds every
// verb the edit role grants on services.lockstep.dev (crd.go).
//
// +kubebuilder:rbac:groups=rbac.authorization.k8s.io,resources=clusterroles,verbs=get;list;watch;create;patch;update;delete

import (
	"context"
	"fmt"

	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/lockstep-dev/lockstep/internal/typed/render"
)

// The labels that aggregate a ClusterRole into Kubernetes' standard
// user-facing roles.
const (
	aggregateToAdmin = "rbac.authorization.k8s.io/aggregate-to-admin"
	aggregateToEdit  = "rbac.authorization.k8s.io/aggregate-to-edit"
	aggregateToView  = "rbac.authorization.k8s.io/aggregate-to-view"
)

// RoleName is the name of a typed kind's ClusterRole: access is "edit" or
// "view".
func RoleName(plural, access string) string {
	return "lockstep:services:" + plural + ":" + access
}

// kindRoles are the ClusterRoles of the kind of crd: edit (every verb on
// its objects, reading their status) aggregated into edit and admin, and
// view (reading them) aggregated into view; not aggregated unless
// aggregate.
func kindRoles(crd *apiextensionsv1.CustomResourceDefinition, aggregate bool) []*rbacv1.ClusterRole {
	plural := crd.Spec.Names.Plural
	role := func(access string, aggregateTo []string, verbs ...string) *rbacv1.ClusterRole {
		r := &rbacv1.ClusterRole{}
		r.APIVersion, r.Kind = rbacv1.SchemeGroupVersion.String(), "ClusterRole"
		r.Name = RoleName(plural, access)
		r.Labels = map[string]string{render.LabelManagedBy: render.ManagedBy}
		for k, v := range crd.Labels {
			if k == render.LabelBroker || k == render.LabelOfferingID {
				r.Labels[k] = v
			}
		}
		if aggregate {
			for _, l := range aggregateTo {
				r.Labels[l] = "true"
			}
		}
		r.OwnerReferences = ownedBy(crd)
		r.Rules = []rbacv1.PolicyRule{
			{APIGroups: []string{render.Group}, Resources: []string{plural}, Verbs: verbs},
			{APIGroups: []string{render.Group}, Resources: []string{plural + "/status"}, Verbs: []string{"get", "list", "watch"}},
		}
		return r
	}
	return []*rbacv1.ClusterRole{
		role("edit", []string{aggregateToEdit, aggregateToAdmin}, "get", "list", "watch", "create", "update", "patch", "delete", "deletecollection"),
		role("view", []string{aggregateToView}, "get", "list", "watch"),
	}
}

// ownedBy is the owner reference to crd (no controller, and not blocking
// its deletion: lockstep deletes the roles first).
func ownedBy(crd *apiextensionsv1.CustomResourceDefinition) []metav1.OwnerReference {
	if crd.UID == "" {
		return nil
	}
	return []metav1.OwnerReference{{APIVersion: "apiextensions.k8s.io/v1", Kind: "CustomResourceDefinition", Name: crd.Name, UID: crd.UID}}
}

// applyRoles applies the roles of the kind of crd.
func (s *sync) applyRoles(ctx context.Context, crd *apiextensionsv1.CustomResourceDefinition) error {
	for _, r := range kindRoles(crd, s.aggregate) {
		obj, err := runtime.DefaultUnstructuredConverter.ToUnstructured(r)
		if err != nil {
			return fmt.Errorf("converting ClusterRole %s: %w", r.Name, err)
		}
		unstructured.RemoveNestedField(obj, "metadata", "creationTimestamp")
		if err := s.client.Apply(ctx, client.ApplyConfigurationFromUnstructured(&unstructured.Unstructured{Object: obj}),
			client.FieldOwner(FieldManager), client.ForceOwnership); err != nil {
			return fmt.Errorf("applying ClusterRole %s: %w", r.Name, err)
		}
		s.count("ClusterRole", "apply")
	}
	return nil
}

// deleteRoles deletes the roles of the kind of plural; false when one
// could not be (logged).
func (s *sync) deleteRoles(ctx context.Context, plural string) bool {
	ok := true
	for _, access := range []string{"edit", "view"} {
		r := &rbacv1.ClusterRole{}
		r.Name = RoleName(plural, access)
		switch err := s.client.Delete(ctx, r); {
		case apierrors.IsNotFound(err):
		case err != nil:
			log.FromContext(ctx).Error(err, "deleting a typed kind's ClusterRole; lockstep tries again", "clusterRole", r.Name)
			ok = false
		default:
			s.count("ClusterRole", "delete")
		}
	}
	return ok
}
