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
	"slices"

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
	AggregateToAdmin = "rbac.authorization.k8s.io/aggregate-to-admin"
	AggregateToEdit  = "rbac.authorization.k8s.io/aggregate-to-edit"
	AggregateToView  = "rbac.authorization.k8s.io/aggregate-to-view"
)

// RolePrefix begins the name of every typed kind's ClusterRole.
const RolePrefix = "lockstep:services:"

// RoleName is the name of a typed kind's ClusterRole: access is "edit" or
// "view".
func RoleName(plural, access string) string {
	return RolePrefix + plural + ":" + access
}

// KindRole is one of the two ClusterRoles of every typed kind: what it
// grants on the kind's objects (and get, list and watch on their
// status), and the standard roles it is aggregated into when the
// ServiceBroker asks for it. lockstep's admission policy on its own
// writes (hack/rightspolicy) allows a ClusterRole no more than this.
type KindRole struct {
	Access      string
	Verbs       []string
	AggregateTo []string
}

// StatusVerbs are what both roles grant on the kind's status.
var StatusVerbs = []string{"get", "list", "watch"}

// KindRoles are the edit role (every verb on the kind's objects),
// aggregated into edit and admin, and the view role (reading them),
// aggregated into view.
var KindRoles = []KindRole{
	{Access: "edit", Verbs: []string{"get", "list", "watch", "create", "update", "patch", "delete", "deletecollection"},
		AggregateTo: []string{AggregateToEdit, AggregateToAdmin}},
	{Access: "view", Verbs: []string{"get", "list", "watch"}, AggregateTo: []string{AggregateToView}},
}

// kindRoles are the ClusterRoles of the kind of crd (KindRoles); not
// aggregated unless aggregate.
func kindRoles(crd *apiextensionsv1.CustomResourceDefinition, aggregate bool) []*rbacv1.ClusterRole {
	plural := crd.Spec.Names.Plural
	out := make([]*rbacv1.ClusterRole, 0, len(KindRoles))
	for _, kr := range KindRoles {
		r := &rbacv1.ClusterRole{}
		r.APIVersion, r.Kind = rbacv1.SchemeGroupVersion.String(), "ClusterRole"
		r.Name = RoleName(plural, kr.Access)
		r.Labels = map[string]string{render.LabelManagedBy: render.ManagedBy}
		for k, v := range crd.Labels {
			if k == render.LabelBroker || k == render.LabelOfferingID {
				r.Labels[k] = v
			}
		}
		if aggregate {
			for _, l := range kr.AggregateTo {
				r.Labels[l] = "true"
			}
		}
		r.OwnerReferences = ownedBy(crd)
		r.Rules = []rbacv1.PolicyRule{
			{APIGroups: []string{render.Group}, Resources: []string{plural}, Verbs: slices.Clone(kr.Verbs)},
			{APIGroups: []string{render.Group}, Resources: []string{plural + "/status"}, Verbs: slices.Clone(StatusVerbs)},
		}
		out = append(out, r)
	}
	return out
}

// ownedBy is the owner reference to crd (no controller, and not blocking
// its deletion: lockstep deletes the roles first).
func ownedBy(crd *apiextensionsv1.CustomResourceDefinition) []metav1.OwnerReference {
	if crd.UID == "" {
		return nil
	}
	return []metav1.OwnerReference{{APIVersion: "apiextensions.k8s.io/v1", Kind: "CustomResourceDefinition", Name: crd.Name, UID: crd.UID}}
}

// applyRoles applies the roles of the kind of crd, aggregated into the
// default roles when aggregate.
func (s *sync) applyRoles(ctx context.Context, crd *apiextensionsv1.CustomResourceDefinition, aggregate bool) error {
	for _, r := range kindRoles(crd, aggregate) {
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
	for _, kr := range KindRoles {
		r := &rbacv1.ClusterRole{}
		r.Name = RoleName(plural, kr.Access)
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
