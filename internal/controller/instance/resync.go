package instance

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/runtime"

	"github.com/lockstep-dev/lockstep/api/v1alpha1"
	"github.com/lockstep-dev/lockstep/internal/brokercall"
	"github.com/lockstep-dev/lockstep/internal/controller/brokered"
	"github.com/lockstep-dev/lockstep/internal/controller/resync"
	"github.com/lockstep-dev/lockstep/internal/metrics"
	"github.com/lockstep-dev/lockstep/internal/parametersfrom"
)

// Applied is what lockstep last applied at the broker: as recorded in
// status, or, for an instance committed before that was recorded, its
// spec (a committed spec is one the broker accepted).
func (Kind) Applied(si *v1alpha1.ServiceInstance, status *v1alpha1.ServiceInstanceStatus, t brokered.Target) brokered.Applied {
	last := v1alpha1.AppliedInstance{PlanName: si.Spec.PlanName, PlanID: t.Plan.Plan.ID, Parameters: si.Spec.Parameters}
	if status.LastApplied != nil {
		last = *status.LastApplied
	}
	return brokered.Applied{
		State:    resync.State{PlanID: last.PlanID, Parameters: resync.Parameters(last.Parameters), ParametersDigest: last.ParametersDigest},
		PlanName: last.PlanName, FromSecrets: len(si.Spec.ParametersFrom) > 0,
	}
}

// Rekey writes the digests of the parameters the broker holds under the
// current key, in place of those (in status.lastApplied) that verify
// against them under an older one: the parameters' digest, and the
// create-only parameters' where the broker reports them as they were
// given.
func (Kind) Rekey(status *v1alpha1.ServiceInstanceStatus, t brokered.Target, held resync.State) {
	last := status.LastApplied
	if last == nil {
		return
	}
	last.ParametersDigest = parametersfrom.Rekey(last.ParametersDigest, held.Parameters)
	if last.CreateOnlyDigest != "" && t.Plan.Schemas != nil {
		if values, err := t.Plan.Schemas.CreateOnlyValues(&runtime.RawExtension{Raw: held.Parameters}); err == nil {
			last.CreateOnlyDigest = parametersfrom.Rekey(last.CreateOnlyDigest, values)
		}
	}
}

// Held is the plan and parameters the broker holds; the dashboard URL it
// reports goes into status.
func (Kind) Held(status *v1alpha1.ServiceInstanceStatus, held brokercall.Held) resync.State {
	got := held.Instance
	if got.DashboardURL != "" {
		status.DashboardURL = got.DashboardURL
	}
	return resync.State{PlanID: got.PlanID, Parameters: got.Parameters}
}

// Drifted corrects drift under the manage policy, by re-applying the
// persisted spec (see correct). Create-only parameters the broker no
// longer reports are no drift; those it holds with other values no update
// can change, and are reported only, as is any drift under observe.
func (k Kind) Drifted(ctx context.Context, si *v1alpha1.ServiceInstance, t brokered.Target, applied brokered.Applied, held resync.State, d resync.Drift) (resync.Drift, string) {
	d, correctable := createOnlyDrift(t.Plan.Schemas, applied.State, held, d)
	if d.None() {
		return d, ""
	}
	policy, _ := v1alpha1.PolicyOf(si)
	switch {
	case policy == v1alpha1.PolicyObserve:
		return d, fmt.Sprintf("; reconcile policy %s: lockstep reports it and changes nothing", policy)
	case !correctable:
		return d, "; these are create-only parameters, which no update can change: lockstep reports it and changes nothing " +
			"(to have them as this object says, delete the instance and create it again)"
	}
	if err := k.correct(ctx, si, t, held.PlanID); err != nil {
		metrics.ResyncCorrection(string(k.Kind()), "refused")
		return d, fmt.Sprintf("; lockstep could not re-apply this object's spec: %v", err)
	}
	metrics.ResyncCorrection(string(k.Kind()), "started")
	return d, "; lockstep re-applies this object's spec at the broker (kubectl get brokeroperations shows it)"
}
