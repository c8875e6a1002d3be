package brokered

import (
	"context"
	"encoding/json"
	"fmt"

	jsonpatch "github.com/evanphx/json-patch/v5"
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
//
// The patch is the difference of the two statuses alone, answered with
// the object's metadata only (see patch). On success obj holds want and
// the version the write made.
func PatchStatus[S any](ctx context.Context, c client.Client, kind v1alpha1.TargetKind, obj client.Object, current, want *S) (bool, error) {
	if equality.Semantic.DeepEqual(current, want) {
		return false, nil
	}
	data, changed, err := statusPatch(obj.GetResourceVersion(), current, want)
	if err != nil {
		return false, fmt.Errorf("writing the status of %s %s/%s: %w", word(kind), obj.GetNamespace(), obj.GetName(), err)
	}
	if !changed {
		*current = *want
		return false, nil
	}
	log.FromContext(ctx).V(1).Info("writing the status", "kind", kind)
	if err := patch(ctx, c, obj, data, true); err != nil {
		if apierrors.IsConflict(err) {
			log.FromContext(ctx).V(1).Info("object changed while its status was computed; computed again", "kind", kind, "error", err.Error())
			return false, err // requeued with backoff
		}
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		return false, fmt.Errorf("writing the status of %s %s/%s: %w", word(kind), obj.GetNamespace(), obj.GetName(), err)
	}
	*current = *want
	return true, nil
}

// statusPatch is the merge patch that turns the status current into want
// on the object at resourceVersion (a conflict when the object is no
// longer there), and whether it changes anything: two statuses that
// differ only where JSON does not (a nil and an empty list) need no write.
func statusPatch(resourceVersion string, current, want any) ([]byte, bool, error) {
	from, err := json.Marshal(current)
	if err != nil {
		return nil, false, err
	}
	to, err := json.Marshal(want)
	if err != nil {
		return nil, false, err
	}
	diff, err := jsonpatch.CreateMergePatch(from, to)
	if err != nil {
		return nil, false, err
	}
	if string(diff) == "{}" {
		return nil, false, nil
	}
	data, err := json.Marshal(statusWrite{Metadata: writtenAt{resourceVersion}, Status: diff})
	return data, true, err
}

// statusWrite is the body of a status merge patch: the version it
// applies to, and what changes.
type statusWrite struct {
	Metadata writtenAt       `json:"metadata"`
	Status   json.RawMessage `json:"status"`
}

type writtenAt struct {
	ResourceVersion string `json:"resourceVersion"`
}
