package framework

import (
	"fmt"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// Front forwards TCP connections (TLS passes through) to a set of
// backends in turn, as a Service spreads connections over a Deployment's
// pods: put one at the address the webhook configurations call
// (ControlPlane.WebhookAddr) and Add each replica. A connection that
// arrives while there is no backend is closed.
type Front struct {
	ln    net.Listener
	mu    sync.Mutex
	addrs []string
	next  atomic.Uint64
	wg    sync.WaitGroup
}

// NewFront listens on addr.
func NewFront(addr string) (*Front, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("front: %w", err)
	}
	f := &Front{ln: ln}
	f.wg.Add(1)
	go f.serve()
	return f, nil
}

// Add makes addr a backend.
func (f *Front) Add(addr string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.addrs = append(f.addrs, addr)
}

// Remove stops sending new connections to addr.
func (f *Front) Remove(addr string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for i, a := range f.addrs {
		if a == addr {
			f.addrs = append(f.addrs[:i], f.addrs[i+1:]...)
			return
		}
	}
}

func (f *Front) pick() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.addrs) == 0 {
		return ""
	}
	return f.addrs[f.next.Add(1)%uint64(len(f.addrs))]
}

func (f *Front) serve() {
	defer f.wg.Done()
	for {
		in, err := f.ln.Accept()
		if err != nil {
			return
		}
		go func() {
			defer func() { _ = in.Close() }()
			target := f.pick()
			if target == "" {
				return
			}
			out, err := net.DialTimeout("tcp", target, 5*time.Second)
			if err != nil {
				return
			}
			defer func() { _ = out.Close() }()
			done := make(chan struct{}, 2)
			go func() { _, _ = io.Copy(out, in); done <- struct{}{} }()
			go func() { _, _ = io.Copy(in, out); done <- struct{}{} }()
			<-done
		}()
	}
}

// Addr is the address it listens at.
func (f *Front) Addr() string { return f.ln.Addr().String() }

// Close stops listening.
func (f *Front) Close() {
	_ = f.ln.Close()
	f.wg.Wait()
}
