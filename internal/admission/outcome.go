package admission

import (
	"errors"
	"fmt"
	"net/http"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/lockstep-dev/lockstep/internal/osbclient"
)

// change names what was asked of the broker, for messages: what (a verb
// phrase) and what stays as it was when it fails.
type change struct {
	broker string
	what   string // e.g. `change plan of instance "db" from "small" to "large"`
	stays  string // e.g. `the instance keeps plan "small"`
	// ifDone is what lockstep does should the broker turn out to have
	// carried the change out after all, e.g. `if the broker created it,
	// lockstep deprovisions it`.
	ifDone string
	// wayOut, on a delete, says how to delete without the broker; it ends
	// every refusal of the change.
	wayOut string
}

// then ends a refusal's message with the way out, if there is one.
func (c change) then(msg string) string {
	if c.wayOut == "" {
		return msg
	}
	return msg + "; " + c.wayOut
}

// refusal turns a broker call's error into the rejection a person reads:
// what was refused, why (the broker's own words), what stays as it was and
// what to do next.
func (c change) refusal(err error) error {
	var (
		httpErr *osbclient.HTTPError
		still   *osbclient.StillInProgressError
	)
	switch {
	case errors.As(err, &httpErr) && httpErr.StatusCode < 500:
		code, reason := int32(httpErr.StatusCode), reasonFor(httpErr.StatusCode)
		if osbclient.IsConcurrencyError(err) {
			code, reason = http.StatusConflict, metav1.StatusReasonConflict
		}
		return statusError(code, reason, "%s", c.then(fmt.Sprintf("broker %q refused to %s: %s (HTTP %d%s); %s",
			c.broker, c.what, describe(httpErr.Description), httpErr.StatusCode, errorCode(httpErr.ErrorCode), c.stays)))
	case errors.As(err, &httpErr):
		return unavailable("%s", c.then(fmt.Sprintf("broker %q failed to %s: %s (HTTP %d%s); %s; retry when the broker has recovered",
			c.broker, c.what, describe(httpErr.Description), httpErr.StatusCode, errorCode(httpErr.ErrorCode), c.stays)))
	case errors.As(err, &still):
		return statusError(http.StatusGatewayTimeout, metav1.StatusReasonTimeout,
			"%s", c.then(fmt.Sprintf("broker %q did not finish in time to %s: %v; %s", c.broker, c.what, err, c.stays)))
	case osbclient.IsTimeout(err):
		return statusError(http.StatusGatewayTimeout, metav1.StatusReasonTimeout,
			"%s", c.then(fmt.Sprintf("broker %q did not answer in time to %s: %v; %s; retry when the broker is responsive", c.broker, c.what, err, c.stays)))
	default:
		return unavailable("%s", c.then(fmt.Sprintf("could not %s at broker %q: %v; %s; retry when the broker is reachable", c.what, c.broker, err, c.stays)))
	}
}

// unknown is the rejection for an operation the broker accepted and whose
// end lockstep could not learn: asking the broker how it went failed
// (connection refused or reset, timeout, 5xx, malformed answer). That is
// not a failure: the broker may still carry the change out. The operation
// stays in progress and the operations reconciler asks on until the
// broker gives a final answer.
func (c change) unknown(err error) error {
	return unavailable("%s", c.then(fmt.Sprintf("broker %q accepted the request to %s, but lockstep could not learn how it ended: %v; the outcome is unknown: %s; "+
		"lockstep keeps asking the broker, and %s (the object's InSync condition and its BrokerOperation show the progress)",
		c.broker, c.what, err, c.stays, c.ifDone)))
}

// failed is the rejection for an asynchronous operation that ended failed.
func (c change) failed(op *osbclient.LastOperation) error {
	return statusError(http.StatusUnprocessableEntity, metav1.StatusReasonBadRequest,
		"%s", c.then(fmt.Sprintf("broker %q failed to %s: %s; %s", c.broker, c.what, describe(op.Description), c.stays)))
}

func describe(d string) string {
	if d == "" {
		return "(the broker gave no description)"
	}
	return fmt.Sprintf("%q", d)
}

func errorCode(code string) string {
	if code == "" {
		return ""
	}
	return " " + code
}

func reasonFor(status int) metav1.StatusReason {
	switch status {
	case http.StatusConflict:
		return metav1.StatusReasonConflict
	case http.StatusGone:
		return metav1.StatusReasonGone
	case http.StatusUnprocessableEntity:
		return metav1.StatusReasonInvalid
	case http.StatusNotFound:
		return metav1.StatusReasonNotFound
	case http.StatusUnauthorized:
		return metav1.StatusReasonUnauthorized
	case http.StatusForbidden:
		return metav1.StatusReasonForbidden
	default:
		return metav1.StatusReasonBadRequest
	}
}

// brokerStatus is the HTTP status of a broker's refusal; 0 when the broker
// never answered.
func brokerStatus(err error) int {
	if h, ok := osbclient.AsHTTPError(err); ok {
		return h.StatusCode
	}
	return 0
}
