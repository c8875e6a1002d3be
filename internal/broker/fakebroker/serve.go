package fakebroker

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"time"

	"github.com/lockstep-dev/lockstep/internal/broker/osbapi"
	"github.com/lockstep-dev/lockstep/internal/broker/osbclient"
)

// maxRequestBody caps what the broker reads of a request.
const maxRequestBody = 1 << 20

// request is an incoming request as the behaviours see it.
type request struct {
	op         Op
	r          *http.Request
	body       []byte
	instanceID string
	bindingID  string
}

// acceptsIncomplete reports accepts_incomplete=true.
func (q *request) acceptsIncomplete() bool {
	return q.r.URL.Query().Get("accepts_incomplete") == "true"
}

// outcome is what the default behaviour answers, and the state change that
// goes with it (run with b.mu held).
type outcome struct {
	status int
	body   any
	header http.Header
	apply  func()
}

// reply is what goes back on the wire.
type reply struct {
	status          int
	header          http.Header
	body            []byte
	delay           time.Duration
	hang            bool
	closeConnection bool
}

func (b *Broker) serve(op Op, w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(io.LimitReader(r.Body, maxRequestBody))
	q := &request{op: op, r: r, body: body, instanceID: r.PathValue("instance_id"), bindingID: r.PathValue("binding_id")}
	call := b.record(op, r, body, q.instanceID, q.bindingID)
	defer b.handled()
	defer b.enter(op, q.instanceID)()

	b.mu.Lock()
	latency := b.latency
	b.mu.Unlock()
	if !b.pause(r.Context(), latency) {
		return
	}

	var rep reply
	if out, refused := b.checkRequest(q); refused {
		rep = replyFrom(out)
	} else {
		rep = b.decide(q)
	}
	if status := b.send(w, r, rep); status != 0 {
		b.answered(call, status)
	}
}

// pause waits d; false when the client gave up or the broker closed first.
func (b *Broker) pause(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return true
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	case <-b.done:
		return false
	}
}

// checkRequest refuses requests any broker would refuse: unknown paths,
// missing auth, missing API version.
func (b *Broker) checkRequest(q *request) (outcome, bool) {
	if q.op == OpUnknown {
		return failure(http.StatusNotFound, "", fmt.Sprintf("%s %s is not part of the OSB API", q.r.Method, q.r.URL.Path)), true
	}
	if !b.authorized(q.r) {
		return failure(http.StatusUnauthorized, "", "missing or wrong credentials"), true
	}
	if q.r.Header.Get(osbapi.HeaderAPIVersion) == "" {
		return failure(http.StatusPreconditionFailed, "", "the X-Broker-API-Version header is missing"), true
	}
	return outcome{}, false
}

func (b *Broker) authorized(r *http.Request) bool {
	switch b.auth.Kind() {
	case osbclient.AuthBasic:
		u, p, ok := r.BasicAuth()
		return ok && u == b.auth.Username && p == b.auth.Password
	case osbclient.AuthBearer:
		return r.Header.Get("Authorization") == "Bearer "+b.auth.Token
	default:
		return true
	}
}

// decide picks the answer and carries out the state change, under b.mu.
func (b *Broker) decide(q *request) reply {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.endDueLocked()
	script, scripted := b.next(q)
	if !scripted || script.keepsDefault() {
		out := b.behave(q)
		if out.apply != nil {
			out.apply()
		}
		rep := replyFrom(out)
		rep.delay = script.Delay
		addHeader(&rep, script.Header)
		return rep
	}

	mutating := isMutating(q.op)
	if script.Async != nil {
		if !mutating {
			return replyFrom(failure(http.StatusInternalServerError, "",
				fmt.Sprintf("fakebroker: Async scripted for %s, which has no asynchronous form", q.op)))
		}
		if !q.acceptsIncomplete() {
			return replyFrom(failure(http.StatusUnprocessableEntity, osbapi.ErrorCodeAsyncRequired,
				"this request requires accepts_incomplete=true"))
		}
		if script.Async.UnlessRefused {
			if def := b.behaveDryRun(q); def.status >= 300 {
				return replyFrom(def)
			}
		}
		return b.startAsync(q, script)
	}

	def := b.behaveDryRun(q)
	if script.Apply && mutating && def.apply != nil {
		def.apply()
	}
	rep := reply{status: script.Status, delay: script.Delay, hang: script.Hang, closeConnection: script.CloseConnection}
	switch {
	case script.Malformed:
		rep.body = []byte(`{"this is": not json at all`)
	case script.Body != nil:
		rep.body = encodeBody(script.Body)
	case script.Error != "" || script.Description != "":
		rep.body = encodeBody(errorBody(script.Error, script.Description))
	default:
		rep.body = []byte("{}")
	}
	if rep.status == 0 {
		if script.Error != "" || script.Description != "" {
			rep.status = http.StatusBadRequest
		} else {
			rep.status = def.status
		}
	}
	addHeader(&rep, script.Header)
	return rep
}

// behave computes the default answer for q; b.mu must be held. Only the
// last_operation behaviours change state directly (they count polls).
func (b *Broker) behave(q *request) outcome {
	switch q.op {
	case OpCatalog:
		return success(http.StatusOK, b.catalog)
	case OpProvision:
		return b.provision(q)
	case OpUpdate:
		return b.update(q)
	case OpDeprovision:
		return b.deprovision(q)
	case OpGetInstance:
		return b.getInstance(q)
	case OpInstanceLastOperation, OpBindingLastOperation:
		return b.lastOperation(q)
	case OpBind:
		return b.bind(q)
	case OpUnbind:
		return b.unbind(q)
	case OpGetBinding:
		return b.getBinding(q)
	}
	return failure(http.StatusNotFound, "", "unknown request")
}

// behaveDryRun is behave without the poll counting of last_operation: it
// changes nothing.
func (b *Broker) behaveDryRun(q *request) outcome {
	if q.op == OpInstanceLastOperation || q.op == OpBindingLastOperation {
		return outcome{status: http.StatusOK}
	}
	return b.behave(q)
}

func isMutating(op Op) bool {
	switch op {
	case OpProvision, OpUpdate, OpDeprovision, OpBind, OpUnbind:
		return true
	}
	return false
}

// send writes rep; it returns the status written, or 0 when nothing was.
func (b *Broker) send(w http.ResponseWriter, r *http.Request, rep reply) int {
	if !b.pause(r.Context(), rep.delay) {
		return 0
	}
	switch {
	case rep.hang:
		select {
		case <-r.Context().Done():
		case <-b.done:
		}
		return 0
	case rep.closeConnection:
		if hj, ok := w.(http.Hijacker); ok {
			if conn, _, err := hj.Hijack(); err == nil {
				_ = conn.Close()
				return 0
			}
		}
		rep = replyFrom(failure(http.StatusInternalServerError, "", "fakebroker: cannot close this connection (no HTTP/1.1 hijacking)"))
	}
	maps.Copy(w.Header(), rep.header)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(rep.status)
	_, _ = w.Write(rep.body)
	return rep.status
}

func replyFrom(out outcome) reply {
	return reply{status: out.status, header: out.header, body: encodeBody(out.body)}
}

func addHeader(rep *reply, h http.Header) {
	if len(h) == 0 {
		return
	}
	if rep.header == nil {
		rep.header = http.Header{}
	}
	for k, vs := range h {
		for _, v := range vs {
			rep.header.Add(k, v)
		}
	}
}

// encodeBody turns a Respond.Body or outcome body into bytes.
func encodeBody(v any) []byte {
	switch v := v.(type) {
	case nil:
		return []byte("{}")
	case string:
		return []byte(v)
	case []byte:
		return v
	case json.RawMessage:
		return v
	}
	raw, err := json.Marshal(v)
	if err != nil {
		return []byte(fmt.Sprintf(`{"description": %q}`, "fakebroker: body cannot be encoded: "+err.Error()))
	}
	return raw
}

func errorBody(code, description string) osbapi.ErrorResponse {
	return osbapi.ErrorResponse{Error: code, Description: description}
}

// errorsArray is an error answer in the shape many brokers outside the
// OSB reference use ({"errors": [{"msg": "..."}]}) instead of the OSB
// "description".
func errorsArray(status int, messages []string) outcome {
	items := make([]map[string]string, len(messages))
	for i, m := range messages {
		items[i] = map[string]string{"msg": m}
	}
	return outcome{status: status, body: map[string]any{"errors": items}}
}

func success(status int, body any) outcome { return outcome{status: status, body: body} }

func failure(status int, code, description string) outcome {
	return outcome{status: status, body: errorBody(code, description)}
}
