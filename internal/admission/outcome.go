package admission

import (
	"errors"
	"fmt"
	"net/http"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/lockstep-dev/lockstep/api/v1alpha1"
	"github.com/lockstep-dev/lockstep/internal/broker/osbclient"
	"github.com/lockstep-dev/lockstep/internal/brokercall"
	"github.com/lockstep-dev/lockstep/internal/credentials"
	"github.com/lockstep-dev/lockstep/internal/metrics"
)

// wording is how the messages of one broker call name it: what (a verb
// phrase) and what stays as it was when it fails.
type wording struct {
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
	// kind is the object's kind for messages ("instance", "binding").
	kind string
	// unsure is what the cluster holds while the outcome is unknown,
	// e.g. "the instance is not deleted for now": never that nothing
	// happened, since the broker may have acted.
	unsure string
	// whenDone ends the warning of a create or update the broker is still
	// carrying out, e.g. "lockstep follows the operation to its end".
	whenDone string
}

// then ends a refusal's message with the way out, if there is one.
func (c wording) then(msg string) string {
	if c.wayOut == "" {
		return msg
	}
	return msg + "; " + c.wayOut
}

// refusal turns a broker call's error into the rejection a person reads:
// what was refused, why (the broker's own words), what stays as it was and
// what to do next.
func (c wording) refusal(err error) error {
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

// tell is what the requester is told of a broker call's result, the same
// way for every verb: nothing when it was done; a warning, or for a
// delete a refusal, while the broker is still at work; the broker's
// refusal; or an outcome that is unknown.
func (c wording) tell(verb v1alpha1.Verb, res brokercall.Result) (admission.Warnings, error) {
	switch res.Verdict {
	case brokercall.Done:
		return nil, nil
	case brokercall.Running:
		if verb == v1alpha1.VerbDeprovision || verb == v1alpha1.VerbUnbind {
			return nil, conflict("broker %q is still working to %s (%s); the %s stays until the broker finishes, then lockstep deletes it",
				c.broker, c.what, describeStill(res.Err), c.kind)
		}
		return admission.Warnings{fmt.Sprintf("broker %q is still working to %s (%s); %s", c.broker, c.what, describeStill(res.Err), c.whenDone)}, nil
	case brokercall.Unknown:
		return nil, c.unknown(res)
	}
	var status apierrors.APIStatus
	var transform *credentials.TransformError
	switch {
	case res.Failed != nil:
		return nil, c.failed(res.Failed)
	case res.Undo != "" && errors.As(res.Err, &transform):
		return nil, statusError(http.StatusUnprocessableEntity, metav1.StatusReasonInvalid, "%s", c.then(fmt.Sprintf(
			"broker %q carried out the request to %s, but %s; lockstep undoes it at the broker (orphan mitigation: its BrokerOperation shows the progress); %s: "+
				"correct spec.secretTransforms for the keys the Secret holds, then create the binding again",
			c.broker, c.what, undoReason(res), c.stays)))
	case res.Undo != "":
		return nil, unavailable("%s", c.then(fmt.Sprintf("broker %q carried out the request to %s, but %s; lockstep undoes it at the broker (orphan mitigation: its BrokerOperation shows the progress); %s: retry",
			c.broker, c.what, undoReason(res), c.stays)))
	case verb == v1alpha1.VerbAdopt && errors.As(res.Err, &status):
		return nil, res.Err // the adoption's own refusal, with the broker's values
	case res.Stale != "":
		return nil, c.stale(res)
	}
	return nil, c.refusal(res.Err)
}

// brokerAnswer is a rejection that passes a broker's answer on: the
// Kubernetes status the requester reads, and the reason label of
// lockstep_admission_decisions_total, which tells it apart from lockstep's
// own rejections with the same status reason (a 422 the broker gave on a
// delete is not a user's invalid input).
type brokerAnswer struct {
	error
	reason string
}

// DecisionReason implements metrics.Reasoned.
func (b brokerAnswer) DecisionReason() string { return b.reason }

// Unwrap returns the rejection itself (its status goes to the requester).
func (b brokerAnswer) Unwrap() error { return b.error }

// byBroker marks err, what tell made of res, with the broker's part in it.
// What lockstep itself refuses around a broker call keeps its own reason:
// an adoption whose values differ from the broker's, a request it could
// not build, and what it undoes (credentials it could not write or read).
func byBroker(verb v1alpha1.Verb, res brokercall.Result, err error) error {
	var reason string
	switch {
	case err == nil:
		return nil
	case res.Verdict == brokercall.Unknown:
		reason = metrics.ReasonBrokerOutcomeUnknown
	case res.Verdict == brokercall.Running:
		reason = metrics.ReasonBrokerInProgress
	case res.Verdict != brokercall.Refused || res.Undo != "" || errors.Is(res.Err, osbclient.ErrInvalidRequest):
		return err
	case res.Failed != nil || res.HTTPStatus >= 400:
		reason = metrics.ReasonBrokerRefused
	case verb == v1alpha1.VerbAdopt && res.HTTPStatus != 0:
		return err // the broker answered; the adoption refused what it holds
	default:
		reason = metrics.ReasonBrokerUnavailable
	}
	return brokerAnswer{error: err, reason: reason}
}

// unknown is the rejection for a change whose outcome lockstep could not
// learn: the request went out and no answer came back (the broker hung
// past the per-request timeout, the connection dropped, 5xx, an answer
// lockstep cannot read), or the broker accepted it (202) and asking how it
// went failed. That is not a failure: the broker may have carried the
// change out, or may still. The operation stays in progress and the
// operations reconciler asks until the broker tells.
func (c wording) unknown(res brokercall.Result) error {
	happened := fmt.Sprintf("broker %q got the request to %s, but no answer came back: %v", c.broker, c.what, res.Err)
	if res.Accepted {
		happened = fmt.Sprintf("broker %q accepted the request to %s, but lockstep could not learn how it ended: %v", c.broker, c.what, res.Err)
	}
	return unavailable("%s", c.then(fmt.Sprintf("%s; the outcome is unknown: %s; "+
		"lockstep keeps asking the broker, and %s (the object's InSync condition and its BrokerOperation show the progress)",
		happened, c.unsure, c.ifDone)))
}

// stale is the rejection of a request whose service or plan ids the
// broker's catalog no longer has: the catalog was read again, and the
// same request now uses the new ids.
func (c wording) stale(res brokercall.Result) error {
	h, _ := osbclient.AsHTTPError(res.Err)
	code, reason := int32(http.StatusConflict), metav1.StatusReasonConflict
	return statusError(code, reason, "%s", c.then(fmt.Sprintf("broker %q refused to %s: %s (HTTP %d%s), and %s; %s: retry",
		c.broker, c.what, describe(h.Description), h.StatusCode, errorCode(h.ErrorCode), res.Stale, c.stays)))
}

// undoReason says why what the broker did is undone.
func undoReason(res brokercall.Result) string {
	if errors.Is(res.Err, brokercall.ErrNotRetrievable) {
		return "it answered asynchronously and does not let lockstep fetch bindings (bindings_retrievable is false), so the credentials cannot be read"
	}
	return fmt.Sprintf("lockstep could not write the credentials into the binding's Secret: %v", res.Err)
}

// describeStill is the broker's last word on an operation still running.
func describeStill(err error) string {
	var still *osbclient.StillInProgressError
	if errors.As(err, &still) && still.Description() != "" {
		return fmt.Sprintf("broker: %q", still.Description())
	}
	return "in progress"
}

// failed is the rejection for an asynchronous operation that ended failed.
func (c wording) failed(op *osbclient.LastOperation) error {
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
