package check

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/lockstep-dev/lockstep/api/v1alpha1"
	"github.com/lockstep-dev/lockstep/internal/broker/osbclient"
	"github.com/lockstep-dev/lockstep/test/robustness/faultproxy"
	"github.com/lockstep-dev/lockstep/test/robustness/history"
)

// bindX is an exchange of a binding's request, the n-th second of a run.
func bindX(op osbclient.Op, status int, n int) faultproxy.Exchange {
	return faultproxy.Exchange{Request: faultproxy.Request{Op: op, User: "u1", InstanceID: "id-1", BindingID: "bid-1"},
		Start: time.Unix(int64(n), 0), End: time.Unix(int64(n), 5e8), Forwarded: true, BrokerStatus: status}
}

func TestAnswers(t *testing.T) {
	x := func(op osbclient.Op, fault faultproxy.Kind, status int, key string) faultproxy.Exchange {
		return faultproxy.Exchange{Request: faultproxy.Request{Op: op, User: "u1", Method: "PATCH", Path: "/v2/service_instances/id-1"},
			Fault: faultproxy.Fault{Kind: fault}, Forwarded: fault.Forwards(), BrokerStatus: status, OperationKey: key}
	}
	update := func(a history.Answer) history.Request {
		return history.Request{User: "u1", Kind: history.UpdateParameters, Object: "ServiceInstance ns/db", Verb: v1alpha1.VerbUpdate, Answer: a}
	}
	tests := []struct {
		name      string
		request   history.Request
		exchanges []faultproxy.Exchange
		async     map[string]Async
		records   map[string]v1alpha1.BrokerOperation
		want      string
	}{
		{name: "allowed, carried out", request: update(history.Allowed),
			exchanges: []faultproxy.Exchange{x(osbclient.OpUpdate, faultproxy.Pass, 200, "")}},
		{name: "allowed, never sent", request: update(history.Allowed),
			want: "allowed, but the broker never carried out the update: no such request reached it"},
		{name: "allowed, but only a GET", request: update(history.Allowed),
			exchanges: []faultproxy.Exchange{x(osbclient.OpGetInstance, faultproxy.Pass, 200, "")},
			want:      "never carried out"},
		{name: "allowed, asynchronous and done", request: update(history.Allowed),
			exchanges: []faultproxy.Exchange{x(osbclient.OpUpdate, faultproxy.Pass, 202, "op-1")}, async: map[string]Async{"op-1": {Done: true}}},
		{name: "allowed, asynchronous and failed", request: update(history.Allowed),
			exchanges: []faultproxy.Exchange{x(osbclient.OpUpdate, faultproxy.Pass, 202, "op-1")}, async: map[string]Async{"op-1": {Done: true, Failed: true}},
			want: `never carried out the update: PATCH /v2/service_instances/id-1 (the broker answered 202, operation "op-1" done true failed true)`},
		{name: "allowed in progress, accepted, failed later", request: update(history.AllowedInProgress),
			exchanges: []faultproxy.Exchange{x(osbclient.OpUpdate, faultproxy.Pass, 202, "op-1")}, async: map[string]Async{"op-1": {Done: true, Failed: true}}},
		{name: "refused, never reached the broker", request: update(history.Refused),
			exchanges: []faultproxy.Exchange{x(osbclient.OpUpdate, faultproxy.Unavailable, 0, "")}},
		{name: "refused, the broker refused too", request: update(history.Refused),
			exchanges: []faultproxy.Exchange{x(osbclient.OpUpdate, faultproxy.Pass, 400, "")}},
		{name: "refused, but carried out behind a spoiled answer", request: update(history.Refused),
			exchanges: []faultproxy.Exchange{x(osbclient.OpUpdate, faultproxy.Garbage, 200, "")},
			want:      "refused, so the broker should hold what it held before, but it carried the update out and no record says it was undone: PATCH /v2/service_instances/id-1 (the broker answered 200; lockstep got 0 after fault garbage)"},
		{name: "refused, carried out and compensated", request: update(history.Refused),
			exchanges: []faultproxy.Exchange{x(osbclient.OpUpdate, faultproxy.Garbage, 200, "")},
			records: map[string]v1alpha1.BrokerOperation{"ns/op": {
				Spec:   v1alpha1.BrokerOperationSpec{Verb: v1alpha1.VerbUpdate, Requester: v1alpha1.Requester{Username: "u1"}},
				Status: v1alpha1.BrokerOperationStatus{Phase: v1alpha1.PhaseCompensated}}}},
		{name: "refused bind, carried out and unbound at once, the record says so",
			request:   history.Request{User: "u1", Kind: history.Bind, Object: "ServiceBinding ns/b", Verb: v1alpha1.VerbBind, Answer: history.Refused},
			exchanges: []faultproxy.Exchange{bindX(osbclient.OpBind, 201, 1), bindX(osbclient.OpUnbind, 200, 2)},
			records: map[string]v1alpha1.BrokerOperation{"ns/op": {
				Spec:   v1alpha1.BrokerOperationSpec{Verb: v1alpha1.VerbBind, Requester: v1alpha1.Requester{Username: "u1"}},
				Status: v1alpha1.BrokerOperationStatus{Phase: v1alpha1.PhaseFailed, Description: "lockstep asked the broker to unbind again"}}}},
		{name: "refused bind, carried out, the unbind failed",
			request:   history.Request{User: "u1", Kind: history.Bind, Object: "ServiceBinding ns/b", Verb: v1alpha1.VerbBind, Answer: history.Refused},
			exchanges: []faultproxy.Exchange{bindX(osbclient.OpBind, 201, 1), bindX(osbclient.OpUnbind, 500, 2)},
			records: map[string]v1alpha1.BrokerOperation{"ns/op": {
				Spec:   v1alpha1.BrokerOperationSpec{Verb: v1alpha1.VerbBind, Requester: v1alpha1.Requester{Username: "u1"}},
				Status: v1alpha1.BrokerOperationStatus{Phase: v1alpha1.PhaseFailed}}},
			want: "carried the bind out"},
		{name: "refused, the asynchronous operation succeeded later", request: update(history.Refused),
			exchanges: []faultproxy.Exchange{x(osbclient.OpUpdate, faultproxy.Pass, 202, "op-1")}, async: map[string]Async{"op-1": {Done: true}},
			want: "carried the update out"},
		{name: "unknown: no claim", request: update(history.Unknown),
			exchanges: []faultproxy.Exchange{x(osbclient.OpUpdate, faultproxy.Garbage, 200, "")}},
		{name: "a dry run reached the broker",
			request:   history.Request{User: "u1", Kind: history.DryRun, Object: "ServiceInstance ns/db", Answer: history.Failed},
			exchanges: []faultproxy.Exchange{x(osbclient.OpUpdate, faultproxy.Pass, 200, "")},
			want:      "dry run asks for no change at the broker, yet lockstep sent PATCH"},
		{name: "an adoption reads the broker",
			request:   history.Request{User: "u1", Kind: history.Adopt, Object: "ServiceInstance ns/db", Answer: history.Allowed},
			exchanges: []faultproxy.Exchange{x(osbclient.OpGetInstance, faultproxy.Pass, 200, "")}},
		{name: "a delete of what the broker never held",
			request: history.Request{User: "u1", Kind: history.DeleteInstance, Verb: v1alpha1.VerbDeprovision, Unsure: true, Answer: history.Allowed}},
		// Another user's delete whose answer was lost, which lockstep
		// learned the broker carried out: this delete is allowed without a
		// second broker call, and the broker holds nothing, as it says.
		{name: "allowed delete, carried out before by another user's request",
			request: history.Request{User: "u1", Kind: history.DeleteInstance, Verb: v1alpha1.VerbDeprovision, ExternalID: "id-1",
				Start: time.Unix(3, 0), End: time.Unix(3, 1e8), Answer: history.Allowed},
			exchanges: []faultproxy.Exchange{{Request: faultproxy.Request{Op: osbclient.OpDeprovision, User: "u0", InstanceID: "id-1"},
				Start: time.Unix(1, 0), End: time.Unix(1, 5e8), Fault: faultproxy.Fault{Kind: faultproxy.DropAfter202}, Forwarded: true, BrokerStatus: 200}}},
		{name: "allowed delete, another instance deleted before",
			request: history.Request{User: "u1", Kind: history.DeleteInstance, Verb: v1alpha1.VerbDeprovision, ExternalID: "id-1",
				Start: time.Unix(3, 0), End: time.Unix(3, 1e8), Answer: history.Allowed},
			exchanges: []faultproxy.Exchange{{Request: faultproxy.Request{Op: osbclient.OpDeprovision, User: "u0", InstanceID: "id-2"},
				Start: time.Unix(1, 0), End: time.Unix(1, 5e8), Forwarded: true, BrokerStatus: 200}},
			want: "allowed, but the broker never carried out the deprovision: no such request reached it"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := broker()
			b.Exchanges, b.Async = tt.exchanges, tt.async
			got := Answers(Snapshot{Requests: []history.Request{tt.request}, Brokers: map[string]*Broker{"fake": b}, Seen: tt.records})
			if tt.want == "" {
				assert.Empty(t, got)
				return
			}
			if assert.Len(t, got, 1) {
				assert.Equal(t, TrueAnswers, got[0].Invariant)
				assert.Contains(t, got[0].Message, tt.want)
				assert.Equal(t, "u1", got[0].Request.User)
			}
		})
	}
}
