package osbclient

import (
	"context"
	"encoding/json"
	"net/http"

	"github.com/lockstep-dev/lockstep/internal/broker/osbapi"
)

// ProvisionRequest asks the broker to create a service instance.
type ProvisionRequest struct {
	InstanceID string
	ServiceID  string
	PlanID     string
	// Context says where the instance lives; Platform defaults to
	// "kubernetes".
	Context osbapi.Context
	// Parameters is the user's configuration: a JSON object, or empty.
	Parameters      json.RawMessage
	MaintenanceInfo *osbapi.MaintenanceInfo
	// OrganizationGUID and SpaceGUID are required by the specification
	// (deprecated in favour of Context); when empty they are derived from
	// Context (see Context.OrganizationGUID and SpaceGUID).
	OrganizationGUID string
	SpaceGUID        string
}

// ProvisionResponse is the broker's acceptance of a provision.
type ProvisionResponse struct {
	// HTTPStatus is 200 (the instance already exists with identical
	// attributes), 201 (created) or 202 (accepted; poll Operation).
	HTTPStatus int
	// Async is set for 202: the instance is being created.
	Async bool
	// Operation is the broker's operation key for last_operation; it may
	// be empty even for 202.
	Operation    string
	DashboardURL string
	Metadata     *osbapi.InstanceMetadata
}

// AlreadyExisted reports a 200: nothing was created.
func (r *ProvisionResponse) AlreadyExisted() bool { return r.HTTPStatus == http.StatusOK }

// Provision creates a service instance (PUT /v2/service_instances/:id,
// accepts_incomplete=true).
func (c *Client) Provision(ctx context.Context, meta RequestMeta, req ProvisionRequest) (*ProvisionResponse, error) {
	if err := required(OpProvision, "an instance ID", req.InstanceID, "a service ID", req.ServiceID, "a plan ID", req.PlanID); err != nil {
		return nil, err
	}
	params, err := checkParameters(OpProvision, req.Parameters)
	if err != nil {
		return nil, err
	}
	reqContext, err := json.Marshal(req.Context.WithPlatform())
	if err != nil {
		return nil, err
	}
	pb := osbapi.ProvisionRequest{
		ServiceID: req.ServiceID, PlanID: req.PlanID, Context: reqContext,
		OrganizationGUID: req.OrganizationGUID, SpaceGUID: req.SpaceGUID,
		Parameters: params, MaintenanceInfo: req.MaintenanceInfo,
	}
	if pb.OrganizationGUID == "" {
		pb.OrganizationGUID = req.Context.OrganizationGUID()
	}
	if pb.SpaceGUID == "" {
		pb.SpaceGUID = req.Context.SpaceGUID()
	}
	cl := call{
		op: OpProvision, method: http.MethodPut, path: instancePath(req.InstanceID),
		query: query("accepts_incomplete", "true"), body: pb,
	}
	a, err := c.do(ctx, meta, cl)
	if err != nil {
		return nil, err
	}
	switch a.status {
	case http.StatusOK, http.StatusCreated, http.StatusAccepted:
	default:
		return nil, unexpected(cl, a)
	}
	var body osbapi.InstanceResponse
	if err := decode(cl, a, &body); err != nil {
		return nil, err
	}
	return &ProvisionResponse{
		HTTPStatus: a.status, Async: a.status == http.StatusAccepted, Operation: body.Operation,
		DashboardURL: body.DashboardURL, Metadata: body.Metadata,
	}, nil
}

// UpdateRequest asks the broker to change a service instance.
type UpdateRequest struct {
	InstanceID string
	ServiceID  string
	// PlanID is the new plan; empty when the plan does not change.
	PlanID string
	// Context, when set, is sent as the update's context.
	Context *osbapi.Context
	// Parameters is the new configuration: a JSON object, or empty to leave
	// parameters out.
	Parameters json.RawMessage
	// PreviousValues describes the instance before the update. When the
	// update carries a Context, OrganizationID and SpaceID default to the
	// GUIDs derived from it, as for the provision.
	PreviousValues  *osbapi.PreviousValues
	MaintenanceInfo *osbapi.MaintenanceInfo
}

// UpdateResponse is the broker's acceptance of an update.
type UpdateResponse struct {
	// HTTPStatus is 200 (done) or 202 (accepted; poll Operation).
	HTTPStatus   int
	Async        bool
	Operation    string
	DashboardURL string
	Metadata     *osbapi.InstanceMetadata
}

// Update changes a service instance (PATCH /v2/service_instances/:id,
// accepts_incomplete=true).
func (c *Client) Update(ctx context.Context, meta RequestMeta, req UpdateRequest) (*UpdateResponse, error) {
	if err := required(OpUpdate, "an instance ID", req.InstanceID, "a service ID", req.ServiceID); err != nil {
		return nil, err
	}
	params, err := checkParameters(OpUpdate, req.Parameters)
	if err != nil {
		return nil, err
	}
	body := osbapi.UpdateRequest{
		ServiceID: req.ServiceID, PlanID: req.PlanID, Parameters: params,
		PreviousValues: req.PreviousValues, MaintenanceInfo: req.MaintenanceInfo,
	}
	if req.Context != nil {
		ctxObj := req.Context.WithPlatform()
		if body.Context, err = json.Marshal(ctxObj); err != nil {
			return nil, err
		}
		if prev := req.PreviousValues; prev != nil {
			withIDs := *prev
			if withIDs.OrganizationID == "" {
				withIDs.OrganizationID = ctxObj.OrganizationGUID()
			}
			if withIDs.SpaceID == "" {
				withIDs.SpaceID = ctxObj.SpaceGUID()
			}
			body.PreviousValues = &withIDs
		}
	}
	cl := call{
		op: OpUpdate, method: http.MethodPatch, path: instancePath(req.InstanceID),
		query: query("accepts_incomplete", "true"), body: body,
	}
	a, err := c.do(ctx, meta, cl)
	if err != nil {
		return nil, err
	}
	switch a.status {
	case http.StatusOK, http.StatusAccepted:
	default:
		return nil, unexpected(cl, a)
	}
	var answer osbapi.InstanceResponse
	if err := decode(cl, a, &answer); err != nil {
		return nil, err
	}
	return &UpdateResponse{
		HTTPStatus: a.status, Async: a.status == http.StatusAccepted, Operation: answer.Operation,
		DashboardURL: answer.DashboardURL, Metadata: answer.Metadata,
	}, nil
}

// DeprovisionRequest asks the broker to delete a service instance.
type DeprovisionRequest struct {
	InstanceID string
	ServiceID  string
	PlanID     string
}

// Deprovision deletes a service instance (DELETE /v2/service_instances/:id,
// accepts_incomplete=true, service_id and plan_id in the query).
func (c *Client) Deprovision(ctx context.Context, meta RequestMeta, req DeprovisionRequest) (*DeleteResponse, error) {
	if err := required(OpDeprovision, "an instance ID", req.InstanceID, "a service ID", req.ServiceID, "a plan ID", req.PlanID); err != nil {
		return nil, err
	}
	cl := call{
		op: OpDeprovision, method: http.MethodDelete, path: instancePath(req.InstanceID),
		query: query("accepts_incomplete", "true", "service_id", req.ServiceID, "plan_id", req.PlanID),
	}
	return deleteCall(ctx, c, meta, cl)
}

// GetInstanceRequest asks for a service instance's current state. ServiceID
// and PlanID are optional hints.
type GetInstanceRequest struct {
	InstanceID string
	ServiceID  string
	PlanID     string
}

// GetInstance reads a service instance (GET /v2/service_instances/:id). A
// 404 (IsNotFound) means it does not exist or is still being provisioned; a
// 422 ConcurrencyError that it is being updated.
func (c *Client) GetInstance(ctx context.Context, meta RequestMeta, req GetInstanceRequest) (*osbapi.GetInstanceResponse, error) {
	if err := required(OpGetInstance, "an instance ID", req.InstanceID); err != nil {
		return nil, err
	}
	cl := call{
		op: OpGetInstance, method: http.MethodGet, path: instancePath(req.InstanceID),
		query: query("service_id", req.ServiceID, "plan_id", req.PlanID),
	}
	a, err := c.do(ctx, meta, cl)
	if err != nil {
		return nil, err
	}
	if a.status != http.StatusOK {
		return nil, unexpected(cl, a)
	}
	var out osbapi.GetInstanceResponse
	if err := decode(cl, a, &out); err != nil {
		return nil, err
	}
	return &out, nil
}
