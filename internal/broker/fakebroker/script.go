package fakebroker

import (
	"net/http"
	"time"

	"github.com/lockstep-dev/lockstep/internal/broker/osbclient"
)

// Op is the kind of an OSB request; the same names as the client's.
type Op = osbclient.Op

// The kinds of request the broker serves.
const (
	OpCatalog               = osbclient.OpCatalog
	OpProvision             = osbclient.OpProvision
	OpUpdate                = osbclient.OpUpdate
	OpDeprovision           = osbclient.OpDeprovision
	OpGetInstance           = osbclient.OpGetInstance
	OpInstanceLastOperation = osbclient.OpInstanceLastOperation
	OpBind                  = osbclient.OpBind
	OpUnbind                = osbclient.OpUnbind
	OpGetBinding            = osbclient.OpGetBinding
	OpBindingLastOperation  = osbclient.OpBindingLastOperation
	// OpUnknown is a request to a path that is not part of the OSB API.
	OpUnknown Op = "unknown"
)

// Respond scripts one answer.
//
// A Respond that sets only Delay and/or Header keeps the default behaviour:
// the state changes at once, and the answer goes out after Delay (or never,
// when the client gives up first - the classic orphan). Any other Respond
// replaces the default answer, and the broker's state changes only when
// Apply is set (at once) or when an Async operation succeeds.
type Respond struct {
	// Status is the HTTP status. Zero means 400 when Error or Description
	// is set, 202 for Async, and otherwise the status the default behaviour
	// would answer.
	Status int
	// Error and Description build an OSB error body {"error", "description"}.
	Error       string
	Description string
	// Body, when set, is the body: a string, []byte or json.RawMessage as
	// is, anything else encoded as JSON. Otherwise the body is the error
	// body, or "{}".
	Body any
	// Header is added to the answer (for example Retry-After).
	Header http.Header
	// Delay holds the answer back; it ends early when the client gives up.
	Delay time.Duration
	// Async answers 202 with an operation that last_operation reports in
	// progress for a number of polls, then succeeded or failed. A request
	// without accepts_incomplete=true gets 422 AsyncRequired instead.
	Async *Async
	// Malformed sends a body that is not JSON.
	Malformed bool
	// Hang never answers: the request blocks until the client gives up or
	// the broker is closed.
	Hang bool
	// CloseConnection closes the connection without answering.
	CloseConnection bool
	// Apply carries out the default state change although the answer is
	// scripted (a broker that did the work and then failed to say so).
	Apply bool
}

// keepsDefault reports whether r only delays or decorates the default answer.
func (r Respond) keepsDefault() bool {
	return r.Status == 0 && r.Error == "" && r.Description == "" && r.Body == nil && r.Async == nil &&
		!r.Malformed && !r.Hang && !r.CloseConnection && !r.Apply
}

// Async describes an asynchronous operation.
type Async struct {
	// Operation is the operation key; empty means a generated one.
	Operation string
	// OmitOperation leaves the key out of the 202 (allowed by OSB).
	OmitOperation bool
	// InProgressPolls is the number of last_operation polls answered "in
	// progress"; the next poll gets the final state.
	InProgressPolls int
	// Fail makes the final state "failed" (and the state change is not
	// carried out); otherwise it is "succeeded".
	Fail bool
	// Description is the final description.
	Description string
	// ProgressDescription is the description while in progress.
	ProgressDescription string
	// RetryAfter is the Retry-After header sent with "in progress" answers
	// (seconds, or an HTTP date).
	RetryAfter string
	// Gone makes a successful final answer 410 Gone instead of 200
	// "succeeded" (a broker that forgets a deprovisioned instance).
	Gone bool
	// After, when set, ends the operation once that much time has passed
	// since it began, polled or not, as a broker that works on its own
	// does (InProgressPolls may end it sooner).
	After time.Duration
	// UnlessRefused answers 202 only to a request the broker would carry
	// out; a request it would refuse (a conflict, an unknown instance)
	// gets that refusal at once. Without it the operation reports its
	// final state even for such a request, and changes nothing.
	UnlessRefused bool
}

// scriptKey addresses a queue: an op, optionally for one instance.
type scriptKey struct {
	op         Op
	instanceID string
}

// Script queues answers for the next requests of kind op, one answer per
// request, in order. Queued answers come before Always.
func (b *Broker) Script(op Op, answers ...Respond) {
	b.mu.Lock()
	defer b.mu.Unlock()
	k := scriptKey{op: op}
	b.scripts[k] = append(b.scripts[k], answers...)
}

// ScriptInstance queues answers for requests of kind op on one instance
// (for binding ops: on bindings of that instance). They come before the
// queue of Script.
func (b *Broker) ScriptInstance(op Op, instanceID string, answers ...Respond) {
	b.mu.Lock()
	defer b.mu.Unlock()
	k := scriptKey{op: op, instanceID: instanceID}
	b.scripts[k] = append(b.scripts[k], answers...)
}

// Always answers every request of kind op with r once its queues are empty.
func (b *Broker) Always(op Op, r Respond) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.always[op] = r
}

// Request names a request for a Responder.
type Request struct {
	Op         Op
	InstanceID string
	BindingID  string
}

// Responder picks the answer to a request: ok false keeps the default
// behaviour. It runs with the broker's lock held: it must not call the
// broker.
type Responder func(Request) (r Respond, ok bool)

// SetResponder makes f pick the answer to every request whose queues
// are empty, before Always; nil removes it. A test switches a broker's
// behaviour while it runs this way (every request may get a different
// answer).
func (b *Broker) SetResponder(f Responder) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.responder = f
}

// Pending returns how many scripted answers for op (all instances) are not
// used yet.
func (b *Broker) Pending(op Op) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	n := 0
	for k, q := range b.scripts {
		if k.op == op {
			n += len(q)
		}
	}
	return n
}

// Reset drops every script, Always answer, the Responder and the latency:
// the broker is back to its default behaviour. State and recorded calls
// stay.
func (b *Broker) Reset() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.scripts = map[scriptKey][]Respond{}
	b.always = map[Op]Respond{}
	b.responder = nil
	b.latency = 0
}

// SetLatency delays every request by d before it is handled (before any
// state change); zero turns it off.
func (b *Broker) SetLatency(d time.Duration) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.latency = d
}

// next pops the scripted answer for a request; b.mu must be held.
func (b *Broker) next(q *request) (Respond, bool) {
	keys := []scriptKey{{op: q.op}}
	if q.instanceID != "" {
		keys = []scriptKey{{op: q.op, instanceID: q.instanceID}, {op: q.op}}
	}
	for _, k := range keys {
		if queue := b.scripts[k]; len(queue) > 0 {
			b.scripts[k] = queue[1:]
			return queue[0], true
		}
	}
	if b.responder != nil {
		if r, ok := b.responder(Request{Op: q.op, InstanceID: q.instanceID, BindingID: q.bindingID}); ok {
			return r, true
		}
	}
	r, ok := b.always[q.op]
	return r, ok
}
