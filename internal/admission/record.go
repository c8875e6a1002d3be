package admission

import (
	"context"
	"errors"

	"github.com/go-logr/logr"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/lockstep-dev/lockstep/api/v1alpha1"
	"github.com/lockstep-dev/lockstep/internal/journal"
	"github.com/lockstep-dev/lockstep/internal/osbclient"
)

// finish records the outcome of the admission's broker call: succeeded,
// failed (with the message the user got), or still in progress. It reports
// whether the answer was written.
func finish(ctx context.Context, j *journal.Journal, rec *v1alpha1.BrokerOperation, target client.Object,
	ans *journal.Answer, inProgress bool, err error, log logr.Logger) bool {
	switch {
	case inProgress:
		// Still running at the end of the budget, or (with err) its
		// outcome unknown: the operations reconciler follows it.
		ans.Phase = v1alpha1.PhaseInProgress
		if err != nil {
			ans.Description = message(err)
		}
	case err != nil && ans.Mitigate:
		// The broker may hold what it was asked to create: the operations
		// reconciler deprovisions or unbinds it (OSB orphan mitigation).
		ans.Phase = v1alpha1.PhaseOrphaned
		ans.Description = message(err) + "; orphan mitigation: lockstep removes whatever the broker may have created"
	case err != nil:
		ans.Phase = v1alpha1.PhaseFailed
		ans.Description = message(err)
	default:
		ans.Phase = v1alpha1.PhaseSucceeded
	}
	return record(ctx, j, rec, target, *ans, log)
}

// message is what the user was told: the status message of a rejection.
func message(err error) string {
	var status apierrors.APIStatus
	if errors.As(err, &status) {
		return status.Status().Message
	}
	return err.Error()
}

// record writes an answer into the journal. A failure to write is logged:
// the broker already acted, and the user's answer must reflect that; the
// operations reconciler settles a record left Pending. It reports whether
// the answer was written.
func record(ctx context.Context, j *journal.Journal, rec *v1alpha1.BrokerOperation, target client.Object, ans journal.Answer, log logr.Logger) bool {
	if err := j.Record(ctx, rec, target, ans); err != nil {
		log.Info("could not record a broker answer", "operation", rec.Name, "error", err.Error())
		return false
	}
	return true
}

// brokerStatus is the HTTP status of a broker's refusal; 0 when the broker
// never answered.
func brokerStatus(err error) int {
	if h, ok := osbclient.AsHTTPError(err); ok {
		return h.StatusCode
	}
	return 0
}
