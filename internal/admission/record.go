package admission

import (
	"context"
	"errors"

	"github.com/go-logr/logr"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/lockstep-dev/lockstep/api/v1alpha1"
	"github.com/lockstep-dev/lockstep/internal/broker"
	"github.com/lockstep-dev/lockstep/internal/journal"
)

// followFunc follows an operation still running when admission answered,
// to its end, and returns the final answer for the journal. It may call
// release to free the object's lock before its last step.
type followFunc func(ctx context.Context, release func()) journal.Answer

// finish records the outcome of the admission's broker call: succeeded,
// failed (with the message the user got), or still in progress.
func finish(ctx context.Context, j *journal.Journal, rec *v1alpha1.BrokerOperation, target client.Object,
	ans *journal.Answer, following bool, err error, log logr.Logger) {
	switch {
	case following:
		ans.Phase = v1alpha1.PhaseInProgress
	case err != nil:
		ans.Phase = v1alpha1.PhaseFailed
		var status apierrors.APIStatus
		if errors.As(err, &status) {
			ans.Description = status.Status().Message
		} else {
			ans.Description = err.Error()
		}
	default:
		ans.Phase = v1alpha1.PhaseSucceeded
	}
	record(ctx, j, rec, target, *ans, log)
}

// record writes an answer into the journal. A failure to write is logged:
// the broker already acted, and the user's answer must reflect that.
func record(ctx context.Context, j *journal.Journal, rec *v1alpha1.BrokerOperation, target client.Object, ans journal.Answer, log logr.Logger) {
	if err := j.Record(ctx, rec, target, ans); err != nil {
		log.Info("could not record a broker answer", "operation", rec.Name, "error", err.Error())
	}
}

// finalAnswer turns the end of a followed operation into a journal answer.
func finalAnswer(last *broker.LastOperation, err error, key string) journal.Answer {
	switch {
	case err != nil:
		return journal.Answer{Phase: v1alpha1.PhaseInProgress, OperationKey: key, Description: "stopped following: " + err.Error()}
	case last.State == broker.StateSucceeded:
		return journal.Answer{Phase: v1alpha1.PhaseSucceeded, HTTPStatus: last.HTTPStatus, OperationKey: key, Description: last.Description}
	default:
		return journal.Answer{Phase: v1alpha1.PhaseFailed, HTTPStatus: last.HTTPStatus, OperationKey: key, Description: last.Description}
	}
}

// brokerStatus is the HTTP status of a broker's refusal; 0 when the broker
// never answered.
func brokerStatus(err error) int {
	if h, ok := broker.AsHTTPError(err); ok {
		return h.StatusCode
	}
	return 0
}
