package broker_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/lockstep-dev/lockstep/internal/broker"
)

func TestHTTPErrorMessage(t *testing.T) {
	tests := []struct {
		name string
		err  *broker.HTTPError
		want string
	}{
		{
			name: "code and description",
			err: &broker.HTTPError{Method: "PUT", Path: "/v2/service_instances/x", StatusCode: 422,
				ErrorCode: "ConcurrencyError", Description: "another operation is in progress"},
			want: `broker answered 422 ConcurrencyError: "another operation is in progress" (PUT /v2/service_instances/x)`,
		},
		{
			name: "description only",
			err:  &broker.HTTPError{Method: "PATCH", Path: "/v2/service_instances/x", StatusCode: 400, Description: "bad"},
			want: `broker answered 400: "bad" (PATCH /v2/service_instances/x)`,
		},
		{
			name: "code only",
			err:  &broker.HTTPError{Method: "PUT", Path: "/p", StatusCode: 422, ErrorCode: "AsyncRequired"},
			want: `broker answered 422 AsyncRequired (PUT /p)`,
		},
		{
			name: "neither: the status text",
			err:  &broker.HTTPError{Method: "DELETE", Path: "/p", StatusCode: 503},
			want: `broker answered 503 Service Unavailable (DELETE /p)`,
		},
		{
			name: "a multi-line description stays on one line",
			err:  &broker.HTTPError{Method: "PUT", Path: "/p", StatusCode: 400, Description: "line one\nline two"},
			want: `broker answered 400: "line one\nline two" (PUT /p)`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, tt.err.Error())
		})
	}

	long := &broker.HTTPError{Method: "PUT", Path: "/p", StatusCode: 400, Description: strings.Repeat("é", 2000)}
	assert.Less(t, len(long.Error()), 1200, "a long description is cut in the message")
	assert.Len(t, long.Description, 4000, "but kept whole in the field")
}

func TestClassification(t *testing.T) {
	provision := func(status int) error {
		return &broker.HTTPError{Op: broker.OpProvision, StatusCode: status}
	}
	tests := []struct {
		name      string
		err       error
		retryable bool
		orphan    bool
	}{
		{"provision 400", provision(400), false, false},
		{"provision 408", provision(408), true, true},
		{"provision 409", provision(409), false, false},
		{"provision 429", provision(429), true, false},
		{"provision 500", provision(500), true, true},
		{"bind 504", &broker.HTTPError{Op: broker.OpBind, StatusCode: 504}, true, true},
		{"update 500", &broker.HTTPError{Op: broker.OpUpdate, StatusCode: 500}, true, false},
		{"deprovision 500", &broker.HTTPError{Op: broker.OpDeprovision, StatusCode: 500}, true, false},
		{"422 ConcurrencyError", &broker.HTTPError{Op: broker.OpProvision, StatusCode: 422, ErrorCode: "ConcurrencyError"}, true, false},
		{"provision request never sent", &broker.TransportError{Op: broker.OpProvision, Err: errors.New("refused")}, true, false},
		{"provision sent, no answer", &broker.TransportError{Op: broker.OpProvision, RequestSent: true, Timeout: true}, true, true},
		{"bind sent, no answer", &broker.TransportError{Op: broker.OpBind, RequestSent: true}, true, true},
		{"unbind sent, no answer", &broker.TransportError{Op: broker.OpUnbind, RequestSent: true}, true, false},
		{"caller gave up", &broker.TransportError{Op: broker.OpProvision, RequestSent: true, CallerDone: true, Err: context.Canceled}, false, true},
		{"provision 200 malformed", &broker.MalformedResponseError{Op: broker.OpProvision, StatusCode: 200}, false, false},
		{"provision 201 malformed", &broker.MalformedResponseError{Op: broker.OpProvision, StatusCode: 201}, false, true},
		{"bind 201 malformed", &broker.MalformedResponseError{Op: broker.OpBind, StatusCode: 201}, false, true},
		{"provision 206", &broker.MalformedResponseError{Op: broker.OpProvision, StatusCode: 206}, false, true},
		{"provision 301", &broker.MalformedResponseError{Op: broker.OpProvision, StatusCode: 301}, false, false},
		{"update 201 malformed", &broker.MalformedResponseError{Op: broker.OpUpdate, StatusCode: 201}, false, false},
		{"still in progress", &broker.StillInProgressError{Polls: 1, Err: context.DeadlineExceeded}, false, false},
		{"other error", errors.New("x"), false, false},
		{"nil", nil, false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.retryable, broker.Retryable(tt.err), "Retryable")
			assert.Equal(t, tt.orphan, broker.NeedsOrphanMitigation(tt.err), "NeedsOrphanMitigation")
			wrapped := fmt.Errorf("admission: %w", tt.err)
			assert.Equal(t, tt.retryable, broker.Retryable(wrapped), "Retryable through wrapping")
			assert.Equal(t, tt.orphan, broker.NeedsOrphanMitigation(wrapped), "NeedsOrphanMitigation through wrapping")
		})
	}
}

func TestIsHelpers(t *testing.T) {
	err := fmt.Errorf("wrapped: %w", &broker.HTTPError{StatusCode: 410})
	assert.True(t, broker.IsGone(err))
	assert.False(t, broker.IsNotFound(err))
	assert.True(t, broker.IsUnprocessable(&broker.HTTPError{StatusCode: 422}))
	assert.False(t, broker.IsTimeout(&broker.TransportError{}))
	assert.False(t, broker.IsTransport(errors.New("x")))
	assert.False(t, broker.IsMalformed(&broker.HTTPError{StatusCode: 500}))
	assert.True(t, broker.IsResponseTooLarge(&broker.MalformedResponseError{Err: &broker.ResponseTooLargeError{Limit: 1}}))
}

func TestMalformedMessage(t *testing.T) {
	err := &broker.MalformedResponseError{
		Method: "GET", Path: "/v2/catalog", StatusCode: 200, Reason: "invalid JSON", Snippet: "<html>",
	}
	assert.Equal(t, `broker's answer was malformed: status 200, invalid JSON (GET /v2/catalog); body begins "<html>"`, err.Error())
	err.Snippet = ""
	assert.Equal(t, `broker's answer was malformed: status 200, invalid JSON (GET /v2/catalog)`, err.Error())
}
