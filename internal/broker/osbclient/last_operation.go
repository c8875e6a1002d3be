package osbclient

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/lockstep-dev/lockstep/internal/broker/osbapi"
)

// LastOperation is the broker's answer to a last_operation poll.
type LastOperation struct {
	// HTTPStatus is 200, or 410 when Gone.
	HTTPStatus int
	// State is empty when Gone; Poll maps Gone to a final state.
	State       osbapi.State
	Description string
	// InstanceUsable and UpdateRepeatable are the optional OSB fields of a
	// failed update or deprovision; nil when absent.
	InstanceUsable   *bool
	UpdateRepeatable *bool
	// RetryAfter is how long the broker asked to wait before the next poll
	// (the Retry-After header); zero when it did not say.
	RetryAfter time.Duration
	// Gone is set for 410 Gone: the broker no longer knows the instance or
	// binding. After a deprovision or unbind that is success; after
	// anything else the resource disappeared.
	Gone bool
}

// InstanceLastOperationRequest polls an instance operation. ServiceID,
// PlanID and Operation are sent when set; Operation is the key the broker
// returned with its 202.
type InstanceLastOperationRequest struct {
	InstanceID string
	ServiceID  string
	PlanID     string
	Operation  string
}

// BindingLastOperationRequest polls a binding operation.
type BindingLastOperationRequest struct {
	InstanceID string
	BindingID  string
	ServiceID  string
	PlanID     string
	Operation  string
}

// InstanceLastOperation polls an instance's last operation (GET
// /v2/service_instances/:id/last_operation). A 410 Gone is returned as a
// LastOperation with Gone set, not as an error.
func (c *Client) InstanceLastOperation(ctx context.Context, meta RequestMeta, req InstanceLastOperationRequest) (*LastOperation, error) {
	if err := required(OpInstanceLastOperation, "an instance ID", req.InstanceID); err != nil {
		return nil, err
	}
	return c.lastOperation(ctx, meta, call{
		op: OpInstanceLastOperation, method: http.MethodGet,
		path:  instancePath(req.InstanceID) + "/last_operation",
		query: query("service_id", req.ServiceID, "plan_id", req.PlanID, "operation", req.Operation),
	})
}

// BindingLastOperation polls a binding's last operation (GET
// .../service_bindings/:id/last_operation). A 410 Gone is returned as a
// LastOperation with Gone set, not as an error.
func (c *Client) BindingLastOperation(ctx context.Context, meta RequestMeta, req BindingLastOperationRequest) (*LastOperation, error) {
	if err := required(OpBindingLastOperation, "an instance ID", req.InstanceID, "a binding ID", req.BindingID); err != nil {
		return nil, err
	}
	return c.lastOperation(ctx, meta, call{
		op: OpBindingLastOperation, method: http.MethodGet,
		path:  bindingPath(req.InstanceID, req.BindingID) + "/last_operation",
		query: query("service_id", req.ServiceID, "plan_id", req.PlanID, "operation", req.Operation),
	})
}

func (c *Client) lastOperation(ctx context.Context, meta RequestMeta, cl call) (*LastOperation, error) {
	a, err := c.do(ctx, meta, cl)
	if err != nil {
		return nil, err
	}
	retryAfter := parseRetryAfter(a.header.Get("Retry-After"), c.now())
	switch a.status {
	case http.StatusOK:
	case http.StatusGone:
		return &LastOperation{HTTPStatus: a.status, Gone: true, RetryAfter: retryAfter}, nil
	default:
		return nil, unexpected(cl, a)
	}
	var body osbapi.LastOperationResponse
	if err := decode(cl, a, &body); err != nil {
		return nil, err
	}
	switch body.State {
	case osbapi.StateInProgress, osbapi.StateSucceeded, osbapi.StateFailed:
	default:
		return nil, malformed(cl, a, fmt.Sprintf("state %q is not one of %q, %q, %q",
			body.State, osbapi.StateInProgress, osbapi.StateSucceeded, osbapi.StateFailed), nil)
	}
	return &LastOperation{
		HTTPStatus: a.status, State: body.State, Description: body.Description,
		InstanceUsable: body.InstanceUsable, UpdateRepeatable: body.UpdateRepeatable,
		RetryAfter: retryAfter,
	}, nil
}

// parseRetryAfter reads a Retry-After header: seconds, or an HTTP date.
// Anything else, or a time in the past, is zero.
func parseRetryAfter(v string, now time.Time) time.Duration {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0
	}
	if secs, err := strconv.ParseInt(v, 10, 64); err == nil {
		if secs <= 0 {
			return 0
		}
		const maxSecs = int64(24 * time.Hour / time.Second)
		return time.Duration(min(secs, maxSecs)) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil && t.After(now) {
		return t.Sub(now)
	}
	return 0
}
