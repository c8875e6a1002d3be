package broker

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
)

// BindRequest asks the broker to create a binding.
type BindRequest struct {
	InstanceID string
	BindingID  string
	ServiceID  string
	PlanID     string
	// Context says where the binding lives; Platform defaults to
	// "kubernetes".
	Context Context
	// Parameters is the user's configuration: a JSON object, or empty.
	Parameters   json.RawMessage
	BindResource *BindResource
}

// BindResource is the OSB "bind_resource" object.
type BindResource struct {
	AppGUID string `json:"app_guid,omitempty"`
	Route   string `json:"route,omitempty"`
}

type bindBody struct {
	ServiceID    string          `json:"service_id"`
	PlanID       string          `json:"plan_id"`
	Context      Context         `json:"context"`
	BindResource *BindResource   `json:"bind_resource,omitempty"`
	Parameters   json.RawMessage `json:"parameters,omitempty"`
}

// Endpoint is a network endpoint a binding gives access to.
type Endpoint struct {
	Host     string   `json:"host"`
	Ports    []string `json:"ports"`
	Protocol string   `json:"protocol,omitempty"`
}

// Binding is what a broker returns for a binding. Credentials are secret:
// String and GoString never show them.
type Binding struct {
	Credentials     map[string]any   `json:"credentials,omitempty"`
	SyslogDrainURL  string           `json:"syslog_drain_url,omitempty"`
	RouteServiceURL string           `json:"route_service_url,omitempty"`
	VolumeMounts    json.RawMessage  `json:"volume_mounts,omitempty"`
	Endpoints       []Endpoint       `json:"endpoints,omitempty"`
	Metadata        *BindingMetadata `json:"metadata,omitempty"`
	// Parameters is only returned by GetBinding.
	Parameters json.RawMessage `json:"parameters,omitempty"`
}

// String describes the binding without its credentials.
func (b Binding) String() string {
	return fmt.Sprintf("binding with %d credential key(s) (values hidden), %d endpoint(s)", len(b.Credentials), len(b.Endpoints))
}

// GoString is String, so that %#v does not print credentials either.
func (b Binding) GoString() string { return b.String() }

// BindResponse is the broker's acceptance of a bind.
type BindResponse struct {
	// HTTPStatus is 200 (the binding already exists with identical
	// attributes), 201 (created) or 202 (accepted; poll Operation, then
	// GetBinding for the credentials).
	HTTPStatus int
	Async      bool
	Operation  string
	// Binding holds the credentials for 200 and 201.
	Binding Binding
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
	cl := call{
		op: OpBind, method: http.MethodPut, path: bindingPath(req.InstanceID, req.BindingID),
		query: query("accepts_incomplete", "true"),
		body: bindBody{
			ServiceID: req.ServiceID, PlanID: req.PlanID, Context: req.Context.withPlatform(),
			BindResource: req.BindResource, Parameters: params,
		},
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
		var body struct {
			Operation string `json:"operation"`
		}
		if err := decode(cl, a, &body); err != nil {
			return nil, err
		}
		return &BindResponse{HTTPStatus: a.status, Async: true, Operation: body.Operation}, nil
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
func (c *Client) GetBinding(ctx context.Context, meta RequestMeta, req GetBindingRequest) (*Binding, error) {
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
	var out Binding
	if err := decode(cl, a, &out); err != nil {
		return nil, err
	}
	return &out, nil
}
