package osbclient

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/lockstep-dev/lockstep/internal/broker/osbapi"
)

// maxDescriptionInError bounds how much of a broker's description Error()
// repeats; the full text stays in HTTPError.Description.
const maxDescriptionInError = 512

// maxSnippet bounds the part of a malformed body quoted in an error.
const maxSnippet = 120

// HTTPError is a broker's refusal: an answer with a 4xx or 5xx status.
type HTTPError struct {
	Op         Op
	Method     string
	Path       string
	StatusCode int
	// ErrorCode is the OSB "error" field (for example "ConcurrencyError").
	ErrorCode string
	// Description is the broker's own explanation, meant for a person.
	Description string
	// InstanceUsable and UpdateRepeatable are the optional OSB fields of a
	// failed update or deprovision; nil when the broker did not send them.
	InstanceUsable   *bool
	UpdateRepeatable *bool
}

// Error gives one line: status, error code, description and request.
func (e *HTTPError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "broker answered %d", e.StatusCode)
	if e.ErrorCode != "" {
		b.WriteString(" " + e.ErrorCode)
	}
	switch {
	case e.Description != "":
		fmt.Fprintf(&b, ": %q", truncate(e.Description, maxDescriptionInError))
	case e.ErrorCode == "":
		if text := http.StatusText(e.StatusCode); text != "" {
			b.WriteString(" " + text)
		}
	}
	fmt.Fprintf(&b, " (%s %s)", e.Method, e.Path)
	return b.String()
}

// TransportError means the broker could not be reached, or its answer was
// cut off: connection refused, DNS, TLS, timeout, connection reset.
type TransportError struct {
	Op     Op
	Method string
	Path   string
	// Timeout is set when no complete answer came within the per-call
	// timeout or before the caller's deadline.
	Timeout bool
	// CallerDone is set when the caller's own context ended (cancelled or
	// past its deadline) before the answer came.
	CallerDone bool
	// Connected is set when the broker accepted the connection: it was
	// reached, even if the request never got through to it.
	Connected bool
	// RequestSent is set when the whole request had been written: the
	// broker may have acted on it even though no answer came back.
	RequestSent bool
	// Err is the underlying network, TLS or context error.
	Err error
	// timeout is the per-call timeout, for the message.
	timeout string
}

// Error says that the broker could not be reached, or that it was reached
// and its answer never came or was cut off, and why.
func (e *TransportError) Error() string {
	reason := "unknown error"
	switch {
	case e.Timeout && !e.CallerDone:
		reason = "no answer within " + e.timeout + " (the per-request timeout)"
	case e.CallerDone:
		reason = "gave up waiting, the request's deadline passed or it was cancelled"
		if e.Err != nil {
			reason += ": " + e.Err.Error()
		}
	case e.Err != nil:
		reason = e.Err.Error()
		if hint := tlsHint(e.Err); hint != "" {
			reason += "; " + hint
		}
	}
	switch {
	case e.RequestSent && e.Timeout && !e.CallerDone:
		return fmt.Sprintf("broker did not answer (%s %s): the request reached it, then %s", e.Method, e.Path, reason)
	case e.RequestSent && !e.Timeout && !e.CallerDone:
		return fmt.Sprintf("broker's answer was cut off (%s %s): the request reached it, then %s", e.Method, e.Path, reason)
	case e.RequestSent:
		return fmt.Sprintf("broker did not answer (%s %s): the request reached it; %s", e.Method, e.Path, reason)
	}
	if e.Connected {
		return fmt.Sprintf("broker accepted the connection but did not take the request (%s %s): %s", e.Method, e.Path, reason)
	}
	return fmt.Sprintf("broker could not be reached (%s %s): %s", e.Method, e.Path, reason)
}

// Unwrap returns the underlying error.
func (e *TransportError) Unwrap() error { return e.Err }

// ResponseTooLargeError is the cause of a MalformedResponseError for an answer
// larger than Config.MaxResponseBytes.
type ResponseTooLargeError struct {
	Limit int64
}

func (e *ResponseTooLargeError) Error() string {
	return fmt.Sprintf("broker response larger than %d bytes", e.Limit)
}

// MalformedResponseError means the broker answered, but not in a way this
// client understands: invalid JSON, a missing required field, a status the
// OSB spec does not allow for the request, or an answer that is too large.
type MalformedResponseError struct {
	Op         Op
	Method     string
	Path       string
	StatusCode int
	// Reason says what is wrong with the answer.
	Reason string
	// Snippet is the start of the body, sanitised and truncated. It is
	// always empty for answers that may carry binding credentials.
	Snippet string
	// Err is the underlying cause (a JSON error, *ResponseTooLargeError), if any.
	Err error
}

// Error says that the answer was malformed, with status, reason and (when
// allowed) the start of the body.
func (e *MalformedResponseError) Error() string {
	msg := fmt.Sprintf("broker's answer was malformed: status %d, %s (%s %s)", e.StatusCode, e.Reason, e.Method, e.Path)
	if e.Snippet != "" {
		msg += fmt.Sprintf("; body begins %q", e.Snippet)
	}
	return msg
}

// Unwrap returns the underlying cause.
func (e *MalformedResponseError) Unwrap() error { return e.Err }

// AsHTTPError returns the *HTTPError in err's chain.
func AsHTTPError(err error) (*HTTPError, bool) {
	var h *HTTPError
	ok := errors.As(err, &h)
	return h, ok
}

func hasStatus(err error, status int) bool {
	h, ok := AsHTTPError(err)
	return ok && h.StatusCode == status
}

func hasCode(err error, code string) bool {
	h, ok := AsHTTPError(err)
	return ok && h.ErrorCode == code
}

// IsAsyncRequired reports a 422 AsyncRequired refusal: the broker only
// serves the request asynchronously.
func IsAsyncRequired(err error) bool { return hasCode(err, osbapi.ErrorCodeAsyncRequired) }

// IsConcurrencyError reports a 422 ConcurrencyError refusal: another
// operation on the same resource is in progress at the broker.
func IsConcurrencyError(err error) bool { return hasCode(err, osbapi.ErrorCodeConcurrency) }

// IsRequiresApp reports a 422 RequiresApp refusal of a bind.
func IsRequiresApp(err error) bool { return hasCode(err, osbapi.ErrorCodeRequiresApp) }

// IsMaintenanceInfoConflict reports a 422 MaintenanceInfoConflict refusal.
func IsMaintenanceInfoConflict(err error) bool {
	return hasCode(err, osbapi.ErrorCodeMaintenanceInfoConflict)
}

// IsBadRequest reports a 400 answer.
func IsBadRequest(err error) bool { return hasStatus(err, http.StatusBadRequest) }

// IsNotFound reports a 404 answer. A GET of a binding answers 404 while an
// asynchronous bind is still in progress, so a caller may keep polling.
func IsNotFound(err error) bool { return hasStatus(err, http.StatusNotFound) }

// IsConflict reports a 409 answer: the instance or binding exists with
// different attributes.
func IsConflict(err error) bool { return hasStatus(err, http.StatusConflict) }

// IsGone reports a 410 answer. Deprovision, Unbind and the last_operation
// calls turn 410 into a result (Gone) instead of an error.
func IsGone(err error) bool { return hasStatus(err, http.StatusGone) }

// IsUnprocessable reports any 422 answer.
func IsUnprocessable(err error) bool { return hasStatus(err, http.StatusUnprocessableEntity) }

// IsTransport reports that the broker could not be reached or its answer was
// cut off.
func IsTransport(err error) bool {
	var t *TransportError
	return errors.As(err, &t)
}

// IsTimeout reports a transport error caused by a timeout or deadline.
func IsTimeout(err error) bool {
	var t *TransportError
	return errors.As(err, &t) && t.Timeout
}

// IsMalformed reports that the broker's answer could not be understood.
func IsMalformed(err error) bool {
	var m *MalformedResponseError
	return errors.As(err, &m)
}

// IsResponseTooLarge reports an answer larger than Config.MaxResponseBytes.
func IsResponseTooLarge(err error) bool {
	var r *ResponseTooLargeError
	return errors.As(err, &r)
}

// Retryable reports whether the same request may succeed if sent again
// later: transport failures (unless the caller's own context ended), 5xx,
// 408, 429 and 422 ConcurrencyError. Other refusals and malformed answers
// will not change by retrying.
func Retryable(err error) bool {
	var t *TransportError
	if errors.As(err, &t) {
		return !t.CallerDone
	}
	h, ok := AsHTTPError(err)
	if !ok {
		return false
	}
	switch {
	case h.StatusCode >= 500,
		h.StatusCode == http.StatusRequestTimeout,
		h.StatusCode == http.StatusTooManyRequests,
		h.ErrorCode == osbapi.ErrorCodeConcurrency:
		return true
	}
	return false
}

// NeedsOrphanMitigation reports whether the OSB spec asks the platform to
// clean up after err (section "Orphan Mitigation"): a provision or bind whose
// outcome is unclear may have left a resource at the broker, which the
// platform must deprovision or unbind. That is the case for a 5xx or 408
// answer, a timeout or a connection lost after the request was sent, a 201
// with a malformed body, and any other 2xx the spec does not allow. A
// malformed 202 is counted too: the broker accepted work whose operation
// cannot be followed. A malformed 200 is not ("already exists": nothing new
// was created).
func NeedsOrphanMitigation(err error) bool {
	if h, ok := AsHTTPError(err); ok {
		return h.Op.createsResource() && (h.StatusCode >= 500 || h.StatusCode == http.StatusRequestTimeout)
	}
	var t *TransportError
	if errors.As(err, &t) {
		return t.Op.createsResource() && t.RequestSent
	}
	var m *MalformedResponseError
	if errors.As(err, &m) {
		return m.Op.createsResource() && m.StatusCode >= 200 && m.StatusCode < 300 && m.StatusCode != http.StatusOK
	}
	return false
}

// snippet returns the start of body as printable one-line text.
func snippet(body []byte) string {
	var b strings.Builder
	i := 0
	for n := 0; i < len(body) && n < maxSnippet; n++ {
		r, size := utf8.DecodeRune(body[i:])
		i += size
		switch {
		case r == utf8.RuneError && size <= 1, !unicode.IsPrint(r) && !unicode.IsSpace(r):
			b.WriteRune('?')
		case unicode.IsSpace(r):
			b.WriteRune(' ')
		default:
			b.WriteRune(r)
		}
	}
	s := strings.TrimSpace(b.String())
	if i < len(body) {
		s += "…"
	}
	return s
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}
