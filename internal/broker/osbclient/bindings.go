package osbclient

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/lockstep-dev/lockstep/internal/broker/osbapi"
)

// BindRequest asks the broker to create a binding.
type BindRequest struct {
	InstanceID string
	BindingID  string
	ServiceID  string
	PlanID     string
	// Context says where the binding lives; Platform defaults to
	// "kubernetes".
	Context osbapi.Context
	// Parameters is the user's configuration: a JSON object, or empty.
	Parameters   json.RawMessage
	BindResource *osbapi.BindResource
}

// BindResponse is the broker's acceptance of a bind.
type BindResponse struct {
	// HTTPStatus is 200 (the binding already exists with identical
	// attributes), 201 (created) or 202 (accepted; poll Operation, then
	// GetBinding for the credentials).
	HTTPStatus int
	Async      bool
	Operation  string
	// Binding holds the credentials for 200 and 201.
	Binding osbapi.Binding
}

// String describes the response without credentials.
func (r BindResponse) String() string {
	return fmt.Sprintf("bind answered %d (async %t, operation %q): %s", r.HTTPStatus, r.Async, r.Operation, r.Binding)
}

// GoString is String, so that %#v does not print credentials either.
func (r BindResponse) GoString() string { return r.String() }

// Bind creates a binding (PUT /v2/service_instances/:id/service_bindings/:id,
// accepts_incomplete=true). Its answer is never quoted in an error.
func (c *Client) Bind(ctx context.Context, meta RequestMeta, req BindRequest) (*BindResponse, error) {
	if err := required(OpBind, "an instance ID", req.InstanceID, "a binding ID", req.BindingID,
		"a service ID", req.ServiceID, "a plan ID", req.PlanID); err != nil {
		return nil, err
	}
	params, err := checkParameters(OpBind, req.Parameters)
	if err != nil {
		return nil, err
	}
	body := osbapi.BindRequest{ServiceID: req.ServiceID, PlanID: req.PlanID, Parameters: params}
	if body.Context, err = json.Marshal(req.Context.WithPlatform()); err != nil {
		return nil, err
	}
	if req.BindResource != nil {
		if body.BindResource, err = json.Marshal(req.BindResource); err != nil {
			return nil, err
		}
	}
	cl := call{
		op: OpBind, method: http.MethodPut, path: bindingPath(req.InstanceID, req.BindingID),
		query: query("accepts_incomplete", "true"), body: body,
	}
	a, err := c.do(ctx, meta, cl)
	if err != nil {
		return nil, err
	}
	switch a.status {
	case http.StatusOK, http.StatusCreated:
		out := &BindResponse{HTTPStatus: a.status}
		if err := decode(cl, a, &out.Binding); err != nil {
			return nil, err
		}
		return out, nil
	case http.StatusAccepted:
		var answer osbapi.OperationResponse
		if err := decode(cl, a, &answer); err != nil {
			return nil, err
		}
		return &BindResponse{HTTPStatus: a.status, Async: true, Operation: answer.Operation}, nil
	default:
		return nil, unexpected(cl, a)
	}
}

// UnbindRequest asks the broker to delete a binding.
type UnbindRequest struct {
	InstanceID string
	BindingID  string
	ServiceID  string
	PlanID     string
}

// Unbind deletes a binding (DELETE .../service_bindings/:id,
// accepts_incomplete=true, service_id and plan_id in the query). A 410 is a
// success with Gone set.
func (c *Client) Unbind(ctx context.Context, meta RequestMeta, req UnbindRequest) (*DeleteResponse, error) {
	if err := required(OpUnbind, "an instance ID", req.InstanceID, "a binding ID", req.BindingID,
		"a service ID", req.ServiceID, "a plan ID", req.PlanID); err != nil {
		return nil, err
	}
	cl := call{
		op: OpUnbind, method: http.MethodDelete, path: bindingPath(req.InstanceID, req.BindingID),
		query: query("accepts_incomplete", "true", "service_id", req.ServiceID, "plan_id", req.PlanID),
	}
	return deleteCall(ctx, c, meta, cl)
}

// GetBindingRequest asks for a binding. ServiceID and PlanID are optional
// hints.
type GetBindingRequest struct {
	InstanceID string
	BindingID  string
	ServiceID  string
	PlanID     string
}

// GetBinding reads a binding and its credentials (GET
// .../service_bindings/:id). A 404 (IsNotFound) means the binding does not
// exist or an asynchronous bind is still in progress: keep polling. Its
// answer is never quoted in an error.
func (c *Client) GetBinding(ctx context.Context, meta RequestMeta, req GetBindingRequest) (*osbapi.Binding, error) {
	if err := required(OpGetBinding, "an instance ID", req.InstanceID, "a binding ID", req.BindingID); err != nil {
		return nil, err
	}
	cl := call{
		op: OpGetBinding, method: http.MethodGet, path: bindingPath(req.InstanceID, req.BindingID),
		query: query("service_id", req.ServiceID, "plan_id", req.PlanID),
	}
	a, err := c.do(ctx, meta, cl)
	if err != nil {
		return nil, err
	}
	if a.status != http.StatusOK {
		return nil, unexpected(cl, a)
	}
	var out osbapi.Binding
	if err := decode(cl, a, &out); err != nil {
		return nil, err
	}
	return &out, nil
}
