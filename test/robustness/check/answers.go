package check

import (
	"fmt"
	"net/http"
	"strings"

	"github.com/lockstep-dev/lockstep/api/v1alpha1"
	"github.com/lockstep-dev/lockstep/internal/broker/osbclient"
	"github.com/lockstep-dev/lockstep/test/robustness/faultproxy"
	"github.com/lockstep-dev/lockstep/test/robustness/history"
)

// verbOps are the broker requests of each verb.
var verbOps = map[v1alpha1.Verb]osbclient.Op{
	v1alpha1.VerbProvision: osbclient.OpProvision, v1alpha1.VerbUpdate: osbclient.OpUpdate, v1alpha1.VerbDeprovision: osbclient.OpDeprovision,
	v1alpha1.VerbBind: osbclient.OpBind, v1alpha1.VerbUnbind: osbclient.OpUnbind,
}

func changes(op osbclient.Op) bool {
	switch op {
	case osbclient.OpProvision, osbclient.OpUpdate, osbclient.OpDeprovision, osbclient.OpBind, osbclient.OpUnbind:
		return true
	}
	return false
}

// exchange is an exchange with the broker it went to.
type exchange struct {
	faultproxy.Exchange
	broker *Broker
}

// carriedOut reports whether the broker carried the request out: it
// answered 200 or 201, or 202 and the operation succeeded.
func (x exchange) carriedOut() bool {
	switch {
	case !x.Forwarded:
		return false
	case x.BrokerStatus == http.StatusOK || x.BrokerStatus == http.StatusCreated:
		return true
	case x.BrokerStatus == http.StatusAccepted:
		a := x.broker.Async[x.OperationKey]
		return a.Done && !a.Failed
	}
	return false
}

func (x exchange) String() string {
	s := fmt.Sprintf("%s %s", x.Method, x.Path)
	switch {
	case !x.Forwarded:
		s += fmt.Sprintf(" (never reached the broker: fault %s)", x.Fault.Kind)
	case x.BrokerStatus == 0:
		s += " (the broker did not answer)"
	default:
		s += fmt.Sprintf(" (the broker answered %d", x.BrokerStatus)
		if x.BrokerStatus == http.StatusAccepted {
			a := x.broker.Async[x.OperationKey]
			s += fmt.Sprintf(", operation %q done %v failed %v", x.OperationKey, a.Done, a.Failed)
		}
		if x.Fault.Kind != faultproxy.Pass {
			s += fmt.Sprintf("; lockstep got %d after fault %s", x.Delivered, x.Fault.Kind)
		}
		s += ")"
	}
	return s
}

// Answers checks that every answer a client got was true. Each request
// was made as a user of its own, so the broker requests it caused carry
// that user (the originating identity), and so do its records:
//
//   - a request that asks for no change at a broker (a dry run, a
//     metadata change, a delete that detaches, an adoption) caused no
//     change request to one, whatever it was answered;
//   - an allowed change was carried out by the broker (or, with a warning
//     that it goes on, at least accepted);
//   - a refused change was not carried out by the broker, or was undone
//     since and its record says so (Compensated).
func Answers(s Snapshot) []Violation {
	byUser := map[string][]exchange{}
	var all []exchange
	for _, name := range sortedKeys(s.Brokers) {
		b := s.Brokers[name]
		for _, x := range b.Exchanges {
			if x.User != "" && changes(x.Op) {
				byUser[x.User] = append(byUser[x.User], exchange{x, b})
				all = append(all, exchange{x, b})
			}
		}
	}
	undone, journaled := map[string]bool{}, map[string]bool{}
	for _, rec := range s.Seen {
		journaled[rec.Spec.Requester.Username] = true
		if rec.Status.Phase == v1alpha1.PhaseCompensated {
			undone[rec.Spec.Requester.Username+"/"+string(rec.Spec.Verb)] = true
		}
	}
	var out []Violation
	for _, r := range s.Requests {
		sent := byUser[r.User]
		v := Violation{Invariant: TrueAnswers, Object: r.Object, ExternalID: r.ExternalID, Request: &r, At: r.Start}
		if r.Verb == "" {
			if len(sent) > 0 {
				v.Message = fmt.Sprintf("%s asks for no change at the broker, yet lockstep sent %s", r.Kind, list(sent))
				out = append(out, v)
			}
			continue
		}
		var matching, carried []exchange
		for _, x := range sent {
			if x.Op == verbOps[r.Verb] {
				matching = append(matching, x)
				if x.carriedOut() || (x.Forwarded && x.BrokerStatus == http.StatusGone && deletes(r.Verb)) {
					carried = append(carried, x)
				}
			}
		}
		switch r.Answer {
		case history.Allowed:
			if len(carried) == 0 && !r.Unsure && !deletedBefore(all, r) {
				v.Message = fmt.Sprintf("allowed, but the broker never carried out the %s: %s", r.Verb, list(matching))
				out = append(out, v)
			}
		case history.AllowedInProgress:
			accepted := false
			for _, x := range matching {
				accepted = accepted || (x.Forwarded && x.BrokerStatus >= 200 && x.BrokerStatus < 300)
			}
			if !accepted && !r.Unsure {
				v.Message = fmt.Sprintf("allowed as still in progress, but the broker never accepted the %s: %s", r.Verb, list(matching))
				out = append(out, v)
			}
		case history.Refused:
			var done []exchange
			for _, x := range carried {
				if x.BrokerStatus != http.StatusGone && !(journaled[r.User] && undoneLater(x)) {
					done = append(done, x)
				}
			}
			if len(done) > 0 && !undone[r.User+"/"+string(r.Verb)] {
				v.Message = fmt.Sprintf("refused, so the broker should hold what it held before, but it carried the %s out and no record says it was undone: %s", r.Verb, list(done))
				out = append(out, v)
			}
		}
	}
	return out
}

// undoneLater reports whether a provision or bind the broker carried out
// was deleted at the broker afterwards (lockstep undoes one whose object
// it could not complete, and says so in its record).
func undoneLater(x exchange) bool {
	inverse := map[osbclient.Op]osbclient.Op{osbclient.OpProvision: osbclient.OpDeprovision, osbclient.OpBind: osbclient.OpUnbind}[x.Op]
	if inverse == "" {
		return false
	}
	for _, y := range x.broker.Exchanges {
		undo := exchange{y, x.broker}
		if y.Op == inverse && y.InstanceID == x.InstanceID && y.BindingID == x.BindingID && !y.Start.Before(x.Start) &&
			(undo.carriedOut() || (y.Forwarded && y.BrokerStatus == http.StatusGone)) {
			return true
		}
	}
	return false
}

// deletedBefore reports whether r is a delete whose object the broker had
// already deleted, at the request of anyone, before r was answered: lockstep
// then allows it without asking the broker again (the change is already
// carried out), which is a true answer.
func deletedBefore(all []exchange, r history.Request) bool {
	if !deletes(r.Verb) || r.ExternalID == "" {
		return false
	}
	for _, x := range all {
		if x.Op != verbOps[r.Verb] || x.Start.After(r.End) {
			continue
		}
		same := x.InstanceID == r.ExternalID && x.BindingID == ""
		if r.Verb == v1alpha1.VerbUnbind {
			same = x.BindingID == r.ExternalID
		}
		if same && (x.carriedOut() || (x.Forwarded && x.BrokerStatus == http.StatusGone)) {
			return true
		}
	}
	return false
}

func deletes(v v1alpha1.Verb) bool { return v == v1alpha1.VerbDeprovision || v == v1alpha1.VerbUnbind }

func list(xs []exchange) string {
	if len(xs) == 0 {
		return "no such request reached it"
	}
	parts := make([]string, len(xs))
	for i, x := range xs {
		parts[i] = x.String()
	}
	return strings.Join(parts, "; ")
}
