package osbclient_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/lockstep-dev/lockstep/internal/broker/osbclient"
)

func TestHTTPErrorMessage(t *testing.T) {
	tests := []struct {
		name string
		err  *osbclient.HTTPError
		want string
	}{
		{
			name: "code and description",
			err: &osbclient.HTTPError{Method: "PUT", Path: "/v2/service_instances/x", StatusCode: 422,
				ErrorCode: "ConcurrencyError", Description: "another operation is in progress"},
			want: `broker answered 422 ConcurrencyError: "another operation is in progress" (PUT /v2/service_instances/x)`,
		},
		{
			name: "description only",
			err:  &osbclient.HTTPError{Method: "PATCH", Path: "/v2/service_instances/x", StatusCode: 400, Description: "bad"},
			want: `broker answered 400: "bad" (PATCH /v2/service_instances/x)`,
		},
		{
			name: "code only",
			err:  &osbclient.HTTPError{Method: "PUT", Path: "/p", StatusCode: 422, ErrorCode: "AsyncRequired"},
			want: `broker answered 422 AsyncRequired (PUT /p)`,
		},
		{
			name: "neither: the status text",
			err:  &osbclient.HTTPError{Method: "DELETE", Path: "/p", StatusCode: 503},
			want: `broker answered 503 Service Unavailable (DELETE /p)`,
		},
		{
			name: "a multi-line description stays on one line",
			err:  &osbclient.HTTPError{Method: "PUT", Path: "/p", StatusCode: 400, Description: "line one\nline two"},
			want: `broker answered 400: "line one\nline two" (PUT /p)`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, tt.err.Error())
		})
	}

	long := &osbclient.HTTPError{Method: "PUT", Path: "/p", StatusCode: 400, Description: strings.Repeat("é", 2000)}
	assert.Less(t, len(long.Error()), 1200, "a long description is cut in the message")
	assert.Len(t, long.Description, 4000, "but kept whole in the field")
}

func TestClassification(t *testing.T) {
	provision := func(status int) error {
		return &osbclient.HTTPError{Op: osbclient.OpProvision, StatusCode: status}
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
		{"bind 504", &osbclient.HTTPError{Op: osbclient.OpBind, StatusCode: 504}, true, true},
		{"update 500", &osbclient.HTTPError{Op: osbclient.OpUpdate, StatusCode: 500}, true, false},
		{"deprovision 500", &osbclient.HTTPError{Op: osbclient.OpDeprovision, StatusCode: 500}, true, false},
		{"422 ConcurrencyError", &osbclient.HTTPError{Op: osbclient.OpProvision, StatusCode: 422, ErrorCode: "ConcurrencyError"}, true, false},
		{"provision request never sent", &osbclient.TransportError{Op: osbclient.OpProvision, Err: errors.New("refused")}, true, false},
		{"provision sent, no answer", &osbclient.TransportError{Op: osbclient.OpProvision, RequestSent: true, Timeout: true}, true, true},
		{"bind sent, no answer", &osbclient.TransportError{Op: osbclient.OpBind, RequestSent: true}, true, true},
		{"unbind sent, no answer", &osbclient.TransportError{Op: osbclient.OpUnbind, RequestSent: true}, true, false},
		{"caller gave up", &osbclient.TransportError{Op: osbclient.OpProvision, RequestSent: true, CallerDone: true, Err: context.Canceled}, false, true},
		{"provision 200 malformed", &osbclient.MalformedResponseError{Op: osbclient.OpProvision, StatusCode: 200}, false, false},
		{"provision 201 malformed", &osbclient.MalformedResponseError{Op: osbclient.OpProvision, StatusCode: 201}, false, true},
		{"bind 201 malformed", &osbclient.MalformedResponseError{Op: osbclient.OpBind, StatusCode: 201}, false, true},
		{"provision 206", &osbclient.MalformedResponseError{Op: osbclient.OpProvision, StatusCode: 206}, false, true},
		{"provision 301", &osbclient.MalformedResponseError{Op: osbclient.OpProvision, StatusCode: 301}, false, false},
		{"update 201 malformed", &osbclient.MalformedResponseError{Op: osbclient.OpUpdate, StatusCode: 201}, false, false},
		{"still in progress", &osbclient.StillInProgressError{Polls: 1, Err: context.DeadlineExceeded}, false, false},
		{"other error", errors.New("x"), false, false},
		{"nil", nil, false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.retryable, osbclient.Retryable(tt.err), "Retryable")
			assert.Equal(t, tt.orphan, osbclient.NeedsOrphanMitigation(tt.err), "NeedsOrphanMitigation")
			wrapped := fmt.Errorf("admission: %w", tt.err)
			assert.Equal(t, tt.retryable, osbclient.Retryable(wrapped), "Retryable through wrapping")
			assert.Equal(t, tt.orphan, osbclient.NeedsOrphanMitigation(wrapped), "NeedsOrphanMitigation through wrapping")
		})
	}
}

func TestIsHelpers(t *testing.T) {
	err := fmt.Errorf("wrapped: %w", &osbclient.HTTPError{StatusCode: 410})
	assert.True(t, osbclient.IsGone(err))
	assert.False(t, osbclient.IsNotFound(err))
	assert.True(t, osbclient.IsUnprocessable(&osbclient.HTTPError{StatusCode: 422}))
	assert.False(t, osbclient.IsTimeout(&osbclient.TransportError{}))
	assert.False(t, osbclient.IsTransport(errors.New("x")))
	assert.False(t, osbclient.IsMalformed(&osbclient.HTTPError{StatusCode: 500}))
	assert.True(t, osbclient.IsResponseTooLarge(&osbclient.MalformedResponseError{Err: &osbclient.ResponseTooLargeError{Limit: 1}}))
}

func TestMalformedMessage(t *testing.T) {
	err := &osbclient.MalformedResponseError{
		Method: "GET", Path: "/v2/catalog", StatusCode: 200, Reason: "invalid JSON", Snippet: "<html>",
	}
	assert.Equal(t, `broker's answer was malformed: status 200, invalid JSON (GET /v2/catalog); body begins "<html>"`, err.Error())
	err.Snippet = ""
	assert.Equal(t, `broker's answer was malformed: status 200, invalid JSON (GET /v2/catalog)`, err.Error())
}
