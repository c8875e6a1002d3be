package brokercall

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/lockstep-dev/lockstep/internal/broker/osbapi"
	"github.com/lockstep-dev/lockstep/internal/broker/osbclient"
)

// One classification for every verb: what a broker call's error says
// about the change it asked for.
func TestClassify(t *testing.T) {
	tests := []struct {
		name string
		err  error
		want Verdict
	}{
		{"no error", nil, Done},
		{"4xx refusal", &osbclient.HTTPError{StatusCode: 400}, Refused},
		{"422 ConcurrencyError", &osbclient.HTTPError{StatusCode: 422, ErrorCode: osbapi.ErrorCodeConcurrency}, Refused},
		{"409 conflict", &osbclient.HTTPError{StatusCode: 409}, Refused},
		{"410 gone (not a delete)", &osbclient.HTTPError{StatusCode: 410}, Refused},
		{"5xx", &osbclient.HTTPError{StatusCode: 503}, Unknown},
		{"408", &osbclient.HTTPError{StatusCode: 408}, Unknown},
		{"hung past the per-request timeout", &osbclient.TransportError{Connected: true, RequestSent: true, Timeout: true}, Unknown},
		{"connection dropped before any answer", &osbclient.TransportError{Connected: true, RequestSent: true, Err: errors.New("EOF")}, Unknown},
		{"the caller's deadline, after the request went out", &osbclient.TransportError{RequestSent: true, CallerDone: true, Err: context.DeadlineExceeded}, Unknown},
		{"connection refused", &osbclient.TransportError{Err: errors.New("connection refused")}, Refused},
		{"accepted the connection, never took the request", &osbclient.TransportError{Connected: true, Err: errors.New("reset")}, Refused},
		{"garbage", &osbclient.MalformedResponseError{StatusCode: 201, Reason: "invalid JSON"}, Unknown},
		{"never built", fmt.Errorf("%w: parameters must be a JSON object", osbclient.ErrInvalidRequest), Refused},
		{"still in progress", &osbclient.StillInProgressError{Reason: "deadline"}, Running},
		{"wrapped", fmt.Errorf("provisioning: %w", &osbclient.HTTPError{StatusCode: 502}), Unknown},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, classify(tt.err))
			assert.Equal(t, tt.want == Unknown, Unanswered(tt.err))
		})
	}
}
