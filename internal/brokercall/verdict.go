package brokercall

import (
	"errors"
	"fmt"
	"net/http"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/lockstep-dev/lockstep/api/v1alpha1"
	"github.com/lockstep-dev/lockstep/internal/broker/osbclient"
	"github.com/lockstep-dev/lockstep/internal/journal"
)

// Verdict is what a broker call came to, the same way for every verb.
type Verdict string

const (
	// Done: the broker carried the change out (200, 201, a 202 that
	// succeeded; 410 Gone for a delete).
	Done Verdict = "done"
	// Refused: nothing changed at the broker. It said no (4xx, or a 202
	// that failed), or the request certainly never reached it (connection
	// refused, DNS, a request lockstep could not build). A change the
	// broker did and lockstep undoes (Result.Undo) is refused too.
	Refused Verdict = "refused"
	// Unknown: the request went out and no answer came back (the broker
	// hung past the per-request timeout, the connection dropped before
	// any answer, 5xx, an answer lockstep cannot read), or, after a 202,
	// lockstep could not learn how it ended. The broker may or may not
	// have carried it out: lockstep asks until it knows.
	Unknown Verdict = "unknown"
	// Running: the broker accepted the change (202) and was still at work
	// when the caller's deadline came.
	Running Verdict = "running"
)

// Result is how a broker call ended.
type Result struct {
	Verdict Verdict
	// Err says why the verdict is not Done: the broker's refusal
	// (*osbclient.HTTPError), the missing answer (*osbclient.TransportError,
	// a 5xx, *osbclient.MalformedResponseError, a poll error), the
	// operation that failed (Failed), the last "in progress"
	// (*osbclient.StillInProgressError), or an error of Store or Adopt.
	Err error
	// Failed is an asynchronous operation that ended failed.
	Failed *osbclient.LastOperation
	// Accepted says that the broker answered 202: the operation has a
	// last_operation to follow (OperationKey, possibly empty).
	Accepted bool
	// Undo, set with Refused, says why lockstep undoes what the broker did
	// (a bind whose credentials could not be stored or read): the
	// operations reconciler removes it (orphan mitigation).
	Undo string
	// Stale, set with Refused, says that the refusal named service or plan
	// ids the broker's catalog no longer has, and what they are now: the
	// catalog was read again.
	Stale string
	// HTTPStatus is the broker's status (0: no answer).
	HTTPStatus   int
	OperationKey string
	DashboardURL string

	// Carry fills in the rest.

	// Told is what the requester was told (Request.Tell).
	Told error
	// Holder is the live operation holding the object's lock: the broker
	// was not called.
	Holder *journal.Operation
	// Identical says that the holder already carried out this very
	// change: allowed without a broker call.
	Identical bool
	// Repeat says that the holder is this very change by the same user,
	// its outcome not known yet (see journal.Outcome.Repeat): the broker
	// was not called again.
	Repeat bool
	// LockErr is why the lock could not be taken: the broker was not
	// called.
	LockErr error
	// Record names the operation's record when the broker was called.
	Record string
	// Stopped says that Carry stopped at a crash point (tests).
	Stopped bool
	// Writes are the API server writes Carry waited for.
	Writes []journal.Write
}

// Called reports whether Carry called the broker.
func (r Result) Called() bool { return r.Record != "" }

// classify says what the error of a request that changes something at
// the broker means: Done when there is none, Running while the broker is
// still at work, Unknown when the request went out and no readable answer
// came back, Refused otherwise.
func classify(err error) Verdict {
	if err == nil {
		return Done
	}
	if errors.Is(err, osbclient.ErrStillInProgress) {
		return Running
	}
	if h, ok := osbclient.AsHTTPError(err); ok {
		if h.StatusCode >= 500 || h.StatusCode == http.StatusRequestTimeout {
			return Unknown
		}
		return Refused
	}
	var t *osbclient.TransportError
	if errors.As(err, &t) {
		if t.RequestSent {
			return Unknown
		}
		return Refused
	}
	if osbclient.IsMalformed(err) {
		return Unknown
	}
	return Refused // never sent: an invalid request, or one that could not be encoded
}

// Unanswered reports whether err is a request that went out without a
// readable answer: the broker may have acted on it.
func Unanswered(err error) bool {
	return err != nil && classify(err) == Unknown
}

// answer is what the journal records of a result: its phase, the broker's
// status and words, and, for an outcome not known yet, the object's InSync.
func (p *Protocol) answer(req Request, record string, res Result) journal.Answer {
	a := journal.Answer{HTTPStatus: res.HTTPStatus, OperationKey: res.OperationKey, DashboardURL: res.DashboardURL}
	told := res.Told
	if told == nil {
		told = res.Err
	}
	switch {
	case res.Verdict == Done:
		a.Phase = v1alpha1.PhaseSucceeded
	case res.Verdict == Running:
		a.Phase = v1alpha1.PhaseInProgress
	case res.Verdict == Refused && res.Undo != "":
		a.Phase = v1alpha1.PhaseOrphaned
		a.Description = message(told) + "; orphan mitigation: lockstep removes what the broker created"
	case res.Verdict == Refused:
		a.Phase = v1alpha1.PhaseFailed
		a.Description = message(told)
	case req.creates() && !res.Accepted:
		// OSB orphan mitigation: a provision or bind that got no answer
		// may have created something; it is removed.
		a.Phase = v1alpha1.PhaseOrphaned
		a.Description = message(told) + "; orphan mitigation: lockstep removes whatever the broker may have created"
	default:
		a.Phase = v1alpha1.PhaseInProgress
		a.Description = message(told)
		a.InSync = UnknownNote(record, req.Verb, res.Err)
	}
	return a
}

// UnknownNote is the InSync of an object whose operation's outcome is not
// known: Unknown, until the broker tells.
func UnknownNote(record string, verb v1alpha1.Verb, err error) *v1alpha1.InSyncNote {
	return &v1alpha1.InSyncNote{Status: metav1.ConditionUnknown, Reason: "OutcomeUnknown",
		Message: fmt.Sprintf("operation %s: the %s was sent to the broker and lockstep could not learn its outcome (%v); it keeps asking the broker", record, verb, err)}
}

// message is what err told a person: the status message of a rejection.
func message(err error) string {
	if err == nil {
		return ""
	}
	var status apierrors.APIStatus
	if errors.As(err, &status) {
		return status.Status().Message
	}
	return err.Error()
}
