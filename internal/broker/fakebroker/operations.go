package fakebroker

import (
	"fmt"
	"net/http"
	"time"

	"github.com/lockstep-dev/lockstep/internal/broker/osbapi"
)

// operation is an asynchronous operation started by a scripted Async answer.
type operation struct {
	key        string
	op         Op
	instanceID string
	bindingID  string
	async      Async
	remaining  int    // "in progress" polls still to answer
	apply      func() // state change on success; nil when the default would have refused
	started    time.Time
	done       bool // the operation ended: its state change is carried out, or it failed
}

// Operation describes an asynchronous operation the broker knows.
type Operation struct {
	Key        string
	Op         Op
	InstanceID string
	BindingID  string
	// Done is set once the operation ended: a poll reported its final
	// state, or its Async.After passed.
	Done bool
	// Failed says that it ended failed (nothing changed).
	Failed bool
}

// Operations returns the asynchronous operations the broker knows, in no
// particular order.
func (b *Broker) Operations() []Operation {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.endDueLocked()
	out := make([]Operation, 0, len(b.operations))
	for _, op := range b.operations {
		out = append(out, Operation{Key: op.key, Op: op.op, InstanceID: op.instanceID, BindingID: op.bindingID,
			Done: op.done, Failed: op.done && op.async.Fail})
	}
	return out
}

// end ends the operation: its state change is carried out unless it
// fails. b.mu must be held.
func (op *operation) end() {
	if op.done {
		return
	}
	op.done = true
	if !op.async.Fail && op.apply != nil {
		op.apply()
	}
}

// endDueLocked ends the operations whose Async.After has passed; b.mu
// must be held.
func (b *Broker) endDueLocked() {
	now := time.Now()
	for _, op := range b.operations {
		if !op.done && op.async.After > 0 && now.Sub(op.started) >= op.async.After {
			op.end()
		}
	}
}

// Finish makes every unfinished asynchronous operation answer its final
// state at the next poll, however many "in progress" answers it had left.
func (b *Broker) Finish() {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, op := range b.operations {
		op.remaining = 0
	}
}

// startAsync registers an operation for q and answers 202; b.mu must be held.
func (b *Broker) startAsync(q *request, script Respond) reply {
	def := b.behave(q) // side-effect free for mutating ops
	a := *script.Async
	key := a.Operation
	if key == "" {
		b.opSeq++
		key = fmt.Sprintf("op-%d", b.opSeq)
	}
	op := &operation{
		key: key, op: q.op, instanceID: q.instanceID, bindingID: q.bindingID,
		async: a, remaining: max(a.InProgressPolls, 0), started: time.Now(),
	}
	if def.status >= 200 && def.status < 300 {
		op.apply = def.apply
	}
	b.operations[key] = op
	b.latestOp[bindingKey{q.instanceID, q.bindingID}] = op

	body := osbapi.OperationResponse{}
	if !a.OmitOperation {
		body.Operation = key
	}
	status := script.Status
	if status == 0 {
		status = http.StatusAccepted
	}
	rep := reply{status: status, body: encodeBody(body), delay: script.Delay}
	addHeader(&rep, script.Header)
	return rep
}

// busyLocked returns an unfinished operation that blocks a new one on the
// instance (bindingID "") or on one of its bindings; b.mu must be held.
func (b *Broker) busyLocked(instanceID, bindingID string) *operation {
	for _, op := range b.operations {
		if op.done || op.instanceID != instanceID {
			continue
		}
		if bindingID == "" || op.bindingID == "" || op.bindingID == bindingID {
			return op
		}
	}
	return nil
}

// lastOperation answers a poll and advances the operation; b.mu must be held.
func (b *Broker) lastOperation(q *request) outcome {
	target := bindingKey{q.instanceID, q.bindingID}
	var op *operation
	if key := q.r.URL.Query().Get("operation"); key != "" {
		op = b.operations[key]
		if op == nil || op.instanceID != q.instanceID || op.bindingID != q.bindingID {
			return failure(http.StatusBadRequest, "", fmt.Sprintf("operation %q is unknown here", key))
		}
	} else {
		op = b.latestOp[target]
	}
	if op == nil {
		if b.targetExistsLocked(target) {
			return success(http.StatusOK, osbapi.LastOperationResponse{State: osbapi.StateSucceeded})
		}
		return success(http.StatusGone, osbapi.OperationResponse{})
	}
	if op.remaining > 0 && !op.done {
		op.remaining--
		out := success(http.StatusOK, stateBody(osbapi.StateInProgress, op.async.ProgressDescription))
		if op.async.RetryAfter != "" {
			out.header = http.Header{"Retry-After": {op.async.RetryAfter}}
		}
		return out
	}
	op.end()
	switch {
	case op.async.Fail:
		return success(http.StatusOK, stateBody(osbapi.StateFailed, op.async.Description))
	case op.async.Gone:
		return success(http.StatusGone, osbapi.OperationResponse{})
	default:
		return success(http.StatusOK, stateBody(osbapi.StateSucceeded, op.async.Description))
	}
}

func stateBody(state osbapi.State, description string) osbapi.LastOperationResponse {
	return osbapi.LastOperationResponse{State: state, Description: description}
}

func (b *Broker) targetExistsLocked(k bindingKey) bool {
	if k.bindingID == "" {
		_, ok := b.instances[k.instanceID]
		return ok
	}
	_, ok := b.bindings[k]
	return ok
}
