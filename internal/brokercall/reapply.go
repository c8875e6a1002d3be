package brokercall

import (
	"context"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/lockstep-dev/lockstep/api/v1alpha1"
	"github.com/lockstep-dev/lockstep/internal/catalog"
	"github.com/lockstep-dev/lockstep/internal/parametersfrom"
)

// Reapply is the update that applies instance si's persisted spec again
// at its broker (plan of entry), for who: lockstep on its own, correcting
// drift or settling an update the API server did not persist. heldPlanID
// is the plan the broker holds, or may hold ("" when it holds plan): it is
// sent as the previous plan, and plan_id is sent when it differs. The
// Secrets of spec.parametersFrom are read again through secrets (their
// current values are what the spec says now); create-only parameters are
// never sent, so those the broker was given stay what they were.
func Reapply(ctx context.Context, secrets client.Reader, si *v1alpha1.ServiceInstance, entry *catalog.Entry, plan catalog.Plan, heldPlanID string, who Who) (Request, error) {
	params, digest, err := parametersfrom.Current(ctx, secrets, si.Namespace, si.Spec.Parameters, si.Spec.ParametersFrom)
	if err != nil {
		return Request{}, err
	}
	req := ForInstance(v1alpha1.VerbUpdate, si, entry, plan, who)
	if req.Parameters, err = plan.Schemas.UpdateParameters(params); err != nil {
		return Request{}, err
	}
	req.ParametersDigest = digest
	if si.Status.LastApplied != nil && digest != "" {
		req.CreateOnlyDigest = si.Status.LastApplied.CreateOnlyDigest
	}
	if heldPlanID == "" {
		heldPlanID = plan.Plan.ID
	}
	req.PreviousPlanID, req.NewPlan = heldPlanID, heldPlanID != plan.Plan.ID
	return req, nil
}
