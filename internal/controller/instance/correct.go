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
	id := uuid.NewString()
	key := journal.Key{Kind: kind, Namespace: si.Namespace, Name: si.Name}
	lock := &journal.Operation{ID: id, Verb: v1alpha1.VerbUpdate, User: r.Identity, Started: r.clock().Now(),
		Record: journal.OperationName(si.Name, v1alpha1.VerbUpdate, id)}
	if _, ok, err := r.Leases.TryAcquire(ctx, key, lock); err != nil {
		return fmt.Errorf("taking the instance's lock: %w", err)
	} else if !ok {
		return errBusy
	}
	in := journal.Intent{
		ID: id, Target: si, Kind: kind, ExternalID: si.Spec.ExternalID, Broker: entry.Broker,
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
	op, err := r.Journal.Begin(ctx, in)
	if err != nil {
		r.release(ctx, key, lock.Record)
		return err
	}

	req := osbclient.UpdateRequest{
		InstanceID: si.Spec.ExternalID, ServiceID: plan.Service.ID,
		Context:        &osbapi.Context{Platform: osbapi.KubernetesPlatform, Namespace: si.Namespace, InstanceName: si.Name, ClusterID: r.ClusterID},
		PreviousValues: &osbapi.PreviousValues{ServiceID: plan.Service.ID, PlanID: heldPlanID},
	}
	if heldPlanID != plan.Plan.ID {
		req.PlanID = plan.Plan.ID
	}
	if req.Parameters, err = plan.Schemas.UpdateParameters(params); err != nil {
		r.fail(ctx, op, si, key, 0, err)
		return err
	}
	meta := osbclient.RequestMeta{RequestID: id, Identity: osbclient.Identity{Username: r.Identity}}
	resp, err := entry.Client.Update(ctx, meta, req)
	if err != nil {
		status := 0
		if h, ok := osbclient.AsHTTPError(err); ok {
			status = h.StatusCode
		}
		r.fail(ctx, op, si, key, status, err)
		return err
	}
	answer := journal.Answer{Phase: v1alpha1.PhaseSucceeded, HTTPStatus: resp.HTTPStatus, DashboardURL: resp.DashboardURL}
	if resp.Async {
		answer.Phase, answer.OperationKey = v1alpha1.PhaseInProgress, resp.Operation
	}
	// The lock stays with the record: the operations reconciler commits
	// or follows it, then releases it.
	return r.Journal.Record(ctx, op, si, answer)
}

// fail records a correction the broker refused and releases the lock.
func (r *Reconciler) fail(ctx context.Context, op *v1alpha1.BrokerOperation, si *v1alpha1.ServiceInstance, key journal.Key, status int, cause error) {
	if err := r.Journal.Record(ctx, op, si, journal.Answer{Phase: v1alpha1.PhaseFailed, HTTPStatus: status, Description: cause.Error()}); err != nil {
		return // the lock stays until the operations reconciler settles the record
	}
	r.release(ctx, key, op.Name)
}

func (r *Reconciler) release(ctx context.Context, key journal.Key, record string) {
	_ = r.Leases.Release(ctx, key, record) // an expired lock frees itself
}
