package faultproxy

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/lockstep-dev/lockstep/internal/broker/osbapi"
	"github.com/lockstep-dev/lockstep/internal/broker/osbclient"
)

// Kind is a kind of fault.
type Kind string

// The faults the proxy injects into a request.
const (
	// Pass forwards the request and relays the answer.
	Pass Kind = ""
	// Drop closes the connection; the broker never sees the request.
	Drop Kind = "drop"
	// Hang answers nothing until the client gives up; the broker never
	// sees the request.
	Hang Kind = "hang"
	// Unavailable answers 503; the broker never sees the request.
	Unavailable Kind = "5xx"
	// Slow forwards the request and relays the answer Fault.Delay later,
	// or never when the client gives up first.
	Slow Kind = "slow"
	// Garbage forwards the request and answers with the broker's status
	// and a body that is not JSON instead of the broker's.
	Garbage Kind = "garbage"
	// DropAfter202 forwards the request and closes the connection instead
	// of relaying the broker's 202; other answers are relayed.
	DropAfter202 Kind = "drop-after-202"
)

// Forwards reports whether the broker gets a request with this fault.
func (k Kind) Forwards() bool {
	switch k {
	case Drop, Hang, Unavailable:
		return false
	}
	return true
}

// Fault is what happens to one request.
type Fault struct {
	Kind Kind
	// Delay is how long Slow holds the answer back.
	Delay time.Duration
}

// Request is what the proxy knows of a request when it picks its fault.
type Request struct {
	// Op is the OSB operation; osbclient.OpCatalog for the catalog, ""
	// for a path outside the OSB API.
	Op                    osbclient.Op
	InstanceID, BindingID string
	Method, Path          string
	// User is the originating identity's username; RequestID the
	// X-Broker-API-Request-Identity.
	User, RequestID string
}

// Exchange is one request and what came of it.
type Exchange struct {
	Request
	Start, End time.Time
	// Fault is the fault injected (Kind Pass for none).
	Fault Fault
	// Forwarded says the broker got the request; BrokerStatus is its
	// answer's status (0 when it gave none).
	Forwarded    bool
	BrokerStatus int
	// Delivered is the status the client got; 0 when it got none (a
	// closed connection, a hang, a client that gave up).
	Delivered int
	// OperationKey is the operation of the broker's 202.
	OperationKey string
	// Body is the request's body.
	Body []byte
}

// Proxy is a fault-injecting proxy in front of one broker.
type Proxy struct {
	target *url.URL
	addr   string
	out    *http.Client

	mu        sync.Mutex
	srv       *http.Server
	ln        net.Listener
	faults    func(Request) Fault
	exchanges []Exchange
	closed    bool
	inFlight  *InFlight[osbclient.Op]
}

// maxBody caps what the proxy reads of a request or an answer.
const maxBody = 4 << 20

// Start listens on a free loopback port and forwards to target (a
// broker's base URL).
func Start(target string) (*Proxy, error) {
	u, err := url.Parse(target)
	if err != nil {
		return nil, fmt.Errorf("faultproxy: the broker's URL %q: %w", target, err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("faultproxy: %w", err)
	}
	p := &Proxy{
		target: u, addr: ln.Addr().String(), inFlight: NewInFlight[osbclient.Op](),
		out: &http.Client{Transport: &http.Transport{Proxy: nil, MaxIdleConnsPerHost: 32}, Timeout: 2 * time.Minute},
	}
	p.serve(ln)
	return p, nil
}

// URL is where clients reach the broker through the proxy.
func (p *Proxy) URL() string { return "http://" + p.addr }

// SetFaults makes f pick the fault of every request from now on; nil
// passes every request.
func (p *Proxy) SetFaults(f func(Request) Fault) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.faults = f
}

// Stop closes the listener and every connection: clients are refused, as
// by a broker that is down, until Resume.
func (p *Proxy) Stop() { p.StopAfter(nil, 0) }

// StopAfter stops as Stop does, but first lets the requests of ops in
// flight end (for at most timeout): new connections are refused at once,
// and those requests get their answers.
func (p *Proxy) StopAfter(ops []osbclient.Op, timeout time.Duration) {
	p.mu.Lock()
	srv, ln := p.srv, p.ln
	p.srv, p.ln = nil, nil
	p.mu.Unlock()
	if srv == nil {
		return
	}
	if len(ops) > 0 {
		srv.SetKeepAlivesEnabled(false)
		_ = ln.Close()
		p.inFlight.Wait(context.Background(), ops, timeout)
	}
	_ = srv.Close()
}

// Resume listens again on the same address after Stop.
func (p *Proxy) Resume() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return errors.New("faultproxy: closed")
	}
	if p.srv != nil {
		return nil
	}
	ln, err := net.Listen("tcp", p.addr)
	if err != nil {
		return fmt.Errorf("faultproxy: listening again on %s: %w", p.addr, err)
	}
	p.serveLocked(ln)
	return nil
}

// Close stops the proxy for good.
func (p *Proxy) Close() {
	p.mu.Lock()
	p.closed = true
	p.mu.Unlock()
	p.Stop()
	p.out.CloseIdleConnections()
}

// Exchanges returns every exchange so far, in the order they ended.
func (p *Proxy) Exchanges() []Exchange {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.exchanges)
}

func (p *Proxy) serve(ln net.Listener) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.serveLocked(ln)
}

func (p *Proxy) serveLocked(ln net.Listener) {
	srv := &http.Server{Handler: http.HandlerFunc(p.handle), ReadHeaderTimeout: 10 * time.Second, ErrorLog: log.New(io.Discard, "", 0)}
	p.srv, p.ln = srv, ln
	go func() { _ = srv.Serve(ln) }()
}

func (p *Proxy) handle(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(io.LimitReader(r.Body, maxBody))
	x := Exchange{Request: requestOf(r), Start: time.Now(), Body: body}
	defer p.inFlight.Start(x.Op)()
	defer func() {
		x.End = time.Now()
		p.mu.Lock()
		p.exchanges = append(p.exchanges, x)
		p.mu.Unlock()
	}()
	p.mu.Lock()
	pick := p.faults
	p.mu.Unlock()
	if pick != nil {
		x.Fault = pick(x.Request)
	}

	switch x.Fault.Kind {
	case Drop:
		closeConnection(w)
		return
	case Hang:
		<-r.Context().Done()
		return
	case Unavailable:
		x.Delivered = reply(w, http.StatusServiceUnavailable, nil, []byte(`{"description":"fault proxy: the broker is unavailable"}`))
		return
	}

	x.Forwarded = true
	// The broker carries the request out even when the client gives up.
	resp, answer, err := p.forward(context.WithoutCancel(r.Context()), r, body)
	if err != nil {
		closeConnection(w)
		return
	}
	x.BrokerStatus = resp.StatusCode
	if resp.StatusCode == http.StatusAccepted {
		var op osbapi.OperationResponse
		if json.Unmarshal(answer, &op) == nil {
			x.OperationKey = op.Operation
		}
	}
	switch x.Fault.Kind {
	case Slow:
		t := time.NewTimer(x.Fault.Delay)
		defer t.Stop()
		select {
		case <-t.C:
		case <-r.Context().Done():
			return
		}
	case Garbage:
		x.Delivered = reply(w, resp.StatusCode, nil, []byte(`{"fault proxy": garbage, not json`))
		return
	case DropAfter202:
		if resp.StatusCode == http.StatusAccepted {
			closeConnection(w)
			return
		}
	}
	x.Delivered = reply(w, resp.StatusCode, resp.Header, answer)
}

// forward sends the request to the broker and reads its answer.
func (p *Proxy) forward(ctx context.Context, in *http.Request, body []byte) (*http.Response, []byte, error) {
	u := *p.target
	u.Path = in.URL.Path
	u.RawQuery = in.URL.RawQuery
	req, err := http.NewRequestWithContext(ctx, in.Method, u.String(), bytes.NewReader(body))
	if err != nil {
		return nil, nil, err
	}
	req.Header = in.Header.Clone()
	resp, err := p.out.Do(req)
	if err != nil {
		return nil, nil, err
	}
	defer func() { _ = resp.Body.Close() }()
	answer, err := io.ReadAll(io.LimitReader(resp.Body, maxBody))
	return resp, answer, err
}

// reply writes an answer and returns its status.
func reply(w http.ResponseWriter, status int, header http.Header, body []byte) int {
	for k, vs := range header {
		if k == "Content-Length" {
			continue
		}
		for _, v := range vs {
			w.Header().Add(k, v)
		}
	}
	if w.Header().Get("Content-Type") == "" {
		w.Header().Set("Content-Type", "application/json")
	}
	// The whole answer is on the wire when the handler ends, so that
	// StopAfter, which closes every connection once the requests it
	// waits for have ended, never cuts an answer off: a known length
	// (no chunked end still to write), flushed.
	w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(status)
	_, _ = w.Write(body)
	if f, ok := w.(http.Flusher); ok {
		f.Flush()
	}
	return status
}

// closeConnection closes the client's connection without an answer.
func closeConnection(w http.ResponseWriter) {
	if hj, ok := w.(http.Hijacker); ok {
		if conn, _, err := hj.Hijack(); err == nil {
			_ = conn.Close()
			return
		}
	}
	panic(http.ErrAbortHandler) // net/http closes the connection without an answer
}
