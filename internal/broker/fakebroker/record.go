package fakebroker

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
)

// Call is one request the broker received.
type Call struct {
	Op     Op
	Method string
	Path   string
	Query  url.Values
	Header http.Header
	Body   []byte
	// JSON is Body decoded, when it is a JSON object.
	JSON       map[string]any
	InstanceID string
	BindingID  string
	// Status is the status answered; 0 while the request is still being
	// handled, or when it got no answer (Hang, CloseConnection).
	Status int
}

// clone returns a deep copy of c.
func (c *Call) clone() Call {
	out := *c
	out.Query = cloneValues(c.Query)
	out.Header = c.Header.Clone()
	out.Body = bytes.Clone(c.Body)
	if c.JSON != nil {
		out.JSON = decodeObject(c.Body)
	}
	return out
}

func cloneValues(v url.Values) url.Values {
	out := url.Values{}
	for k, vs := range v {
		out[k] = slices.Clone(vs)
	}
	return out
}

// decodeObject decodes raw when it is a JSON object, else returns nil.
func decodeObject(raw []byte) map[string]any {
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil
	}
	return m
}

// record stores a new call, counts it in flight and wakes WaitForCalls;
// b.mu must not be held. The caller must call handled when done.
func (b *Broker) record(op Op, r *http.Request, body []byte, instanceID, bindingID string) *Call {
	c := &Call{
		Op: op, Method: r.Method, Path: r.URL.Path, Query: cloneValues(r.URL.Query()),
		Header: r.Header.Clone(), Body: body, JSON: decodeObject(body),
		InstanceID: instanceID, BindingID: bindingID,
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.calls = append(b.calls, c)
	b.inFlight++
	b.notifyLocked()
	return c
}

// handled marks the end of a request that record counted in flight.
func (b *Broker) handled() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.inFlight--
	b.notifyLocked()
}

// WaitIdle blocks until no request is being handled, so that the effects of
// a request the client gave up on (a timeout, a hang) are complete. Combine
// it with WaitForCalls when the request may not have arrived yet.
func (b *Broker) WaitIdle(ctx context.Context) error {
	for {
		b.mu.Lock()
		n, changed := b.inFlight, b.changed
		b.mu.Unlock()
		if n == 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waited for %d request(s) in flight to end: %w", n, ctx.Err())
		case <-changed:
		}
	}
}

// answered sets the status of c.
func (b *Broker) answered(c *Call, status int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	c.Status = status
	b.notifyLocked()
}

// notifyLocked wakes every WaitForCalls; b.mu must be held.
func (b *Broker) notifyLocked() {
	close(b.changed)
	b.changed = make(chan struct{})
}

// Calls returns copies of the recorded requests of the given kinds (all
// requests when none is given), oldest first.
func (b *Broker) Calls(ops ...Op) []Call {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.callsLocked(ops)
}

func (b *Broker) callsLocked(ops []Op) []Call {
	out := []Call{}
	for _, c := range b.calls {
		if len(ops) == 0 || slices.Contains(ops, c.Op) {
			out = append(out, c.clone())
		}
	}
	return out
}

// Count returns the number of recorded requests of the given kinds (all
// when none is given).
func (b *Broker) Count(ops ...Op) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	n := 0
	for _, c := range b.calls {
		if len(ops) == 0 || slices.Contains(ops, c.Op) {
			n++
		}
	}
	return n
}

// LastCall returns the most recent request of kind op.
func (b *Broker) LastCall(op Op) (Call, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for i := len(b.calls) - 1; i >= 0; i-- {
		if b.calls[i].Op == op {
			return b.calls[i].clone(), true
		}
	}
	return Call{}, false
}

// WaitForCalls blocks until at least n requests of kind op were recorded, and
// returns them; it gives up with an error when ctx ends.
func (b *Broker) WaitForCalls(ctx context.Context, op Op, n int) ([]Call, error) {
	for {
		b.mu.Lock()
		calls := b.callsLocked([]Op{op})
		changed := b.changed
		b.mu.Unlock()
		if len(calls) >= n {
			return calls, nil
		}
		select {
		case <-ctx.Done():
			return calls, fmt.Errorf("waited for %d %s request(s), got %d: %w", n, op, len(calls), ctx.Err())
		case <-changed:
		}
	}
}

// ResetCalls forgets every recorded request.
func (b *Broker) ResetCalls() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.calls = nil
	b.maxPerInstance = map[string]int{}
	b.notifyLocked()
}
