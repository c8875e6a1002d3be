package brokered

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/lockstep-dev/lockstep/api/v1alpha1"
)

// PatchStatus writes want as the status of obj (current points at the
// status obj holds) when the two differ, as a merge patch carrying the
// version obj was read at: when the object changed in between, the
// conflict is returned and the next pass computes the status again. An
// object that is gone needs no status. It reports whether it wrote one.
func PatchStatus[S any](ctx context.Context, c client.Client, kind v1alpha1.TargetKind, obj client.Object, current, want *S) (bool, error) {
	if equality.Semantic.DeepEqual(current, want) {
		return false, nil
	}
	log.FromContext(ctx).V(1).Info("writing the status", "kind", kind)
	patch := client.MergeFromWithOptions(obj.DeepCopyObject().(client.Object), client.MergeFromWithOptimisticLock{})
	*current = *want
	if err := c.Status().Patch(ctx, obj, patch); err != nil {
		if apierrors.IsConflict(err) {
			log.FromContext(ctx).V(1).Info("object changed while its status was computed; computed again", "kind", kind, "error", err.Error())
			return false, err // requeued with backoff
		}
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		return false, fmt.Errorf("writing the status of %s %s/%s: %w", word(kind), obj.GetNamespace(), obj.GetName(), err)
	}
	return true, nil
}
