package instance

import (
	"context"
	"errors"
	"fmt"

	"github.com/google/uuid"
	authenticationv1 "k8s.io/api/authentication/v1"

	"github.com/lockstep-dev/lockstep/api/v1alpha1"
	"github.com/lockstep-dev/lockstep/internal/catalog"
	"github.com/lockstep-dev/lockstep/internal/journal"
	"github.com/lockstep-dev/lockstep/internal/osbapi"
	"github.com/lockstep-dev/lockstep/internal/osbclient"
	"github.com/lockstep-dev/lockstep/internal/parametersfrom"
)

// errBusy: another operation took the object's lock first.
var errBusy = errors.New("another operation holds the instance's lock; lockstep compares again next time")

// correct re-applies the persisted spec of an instance whose broker holds
// something else, as an update asked by lockstep itself: it takes the
// object's lock and writes the operation's record first, as admission
// does, so that `kubectl get brokeroperations` shows who changed what. The
// operations reconciler then commits it (or follows it while the broker
// works), which sets InSync again.
func (r *Reconciler) correct(ctx context.Context, si *v1alpha1.ServiceInstance, entry *catalog.Entry, plan catalog.Plan, heldPlanID string) error {
	if heldPlanID == "" {
		heldPlanID = plan.Plan.ID
	}
	// The Secrets of spec.parametersFrom are read again: their current
	// values are what this object's spec says now.
	params, digest, err := parametersfrom.Current(ctx, r.APIReader, si.Namespace, si.Spec.Parameters, si.Spec.ParametersFrom)
	if err != nil {
		return err
	}
	in := journal.Intent{
		ID: uuid.NewString(), Target: si, Kind: kind, ExternalID: si.Spec.ExternalID, Broker: entry.Broker,
		Verb: v1alpha1.VerbUpdate, User: authenticationv1.UserInfo{Username: r.Identity}, SpecHash: journal.SpecHash(si.Spec),
		ServiceID: plan.Service.ID, PlanID: plan.Plan.ID, ParametersDigest: digest,
	}
	if si.Status.LastApplied != nil && digest != "" {
		// An update never sends create-only parameters: those the broker
		// was given stay what they were.
		in.CreateOnlyDigest = si.Status.LastApplied.CreateOnlyDigest
	}
	if heldPlanID != plan.Plan.ID {
		in.PreviousPlanID = heldPlanID
	}
	// A correction never waits for a lock: another operation in flight
	// is the operations reconciler's to follow.
	leases := *r.Leases
	leases.Wait = 0
	carrier := &journal.Carrier{Leases: &leases, Journal: r.Journal}
	out := carrier.Run(ctx, in, func(meta osbclient.RequestMeta, ans *journal.Answer) (bool, error) {
		req := osbclient.UpdateRequest{
			InstanceID: si.Spec.ExternalID, ServiceID: plan.Service.ID,
			Context:        &osbapi.Context{Platform: osbapi.KubernetesPlatform, Namespace: si.Namespace, InstanceName: si.Name, ClusterID: r.ClusterID},
			PreviousValues: &osbapi.PreviousValues{ServiceID: plan.Service.ID, PlanID: heldPlanID},
		}
		if heldPlanID != plan.Plan.ID {
			req.PlanID = plan.Plan.ID
		}
		var err error
		if req.Parameters, err = plan.Schemas.UpdateParameters(params); err != nil {
			return false, err
		}
		resp, err := entry.Client.Update(ctx, meta, req)
		if err != nil {
			if h, ok := osbclient.AsHTTPError(err); ok {
				ans.HTTPStatus = h.StatusCode
			}
			return false, err
		}
		ans.HTTPStatus, ans.DashboardURL = resp.HTTPStatus, resp.DashboardURL
		if resp.Async {
			ans.OperationKey = resp.Operation
		}
		return resp.Async, nil
	})
	switch {
	case out.LockErr != nil:
		return fmt.Errorf("taking the instance's lock: %w", out.LockErr)
	case !out.Called():
		return errBusy
	}
	// A success or an operation in progress keeps the lock: the operations
	// reconciler commits or follows it, then releases it. A refusal's
	// lock is released once its record is written.
	return out.Err
}
