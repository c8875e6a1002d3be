package robustness

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/lockstep-dev/lockstep/test/framework"
)

// leading is what a replica logs once it leads.
const leading = "leading: the operations and finalizer reconcilers run in this replica"

// replica is one of lockstep's replicas, kept running as a Deployment
// keeps its pods: a process that ends, whether killed by a fault or
// because it lost the lead, is started again (after the fault's pause, or
// a second).
type replica struct {
	name string
	env  *env

	mu          sync.Mutex
	current     *framework.Replica
	incarnation int
	logs        []string
	resumeAt    time.Time // a fault's pause before the next start
	metricsPort int
}

// keep runs the replica until ctx ends.
func (r *replica) keep(ctx context.Context) {
	for ctx.Err() == nil {
		r.mu.Lock()
		wait := time.Until(r.resumeAt)
		r.mu.Unlock()
		if !sleep(ctx, max(wait, 0)) {
			return
		}
		p, err := r.start(ctx)
		if err != nil {
			r.env.logf("replica %s did not start: %v", r.name, err)
			sleep(ctx, time.Second)
			continue
		}
		select {
		case <-ctx.Done():
			p.Kill()
			return
		case <-p.Done():
		}
		r.env.front.Remove(p.Addr)
		r.mu.Lock()
		r.current = nil
		if time.Until(r.resumeAt) < time.Second {
			r.resumeAt = time.Now().Add(time.Second) // the restart back-off
		}
		r.mu.Unlock()
	}
}

// start starts one incarnation and puts it behind the front.
func (r *replica) start(ctx context.Context) (*framework.Replica, error) {
	r.mu.Lock()
	r.incarnation++
	log := filepath.Join(r.env.dir, fmt.Sprintf("replica-%s-%d.log", r.name, r.incarnation))
	r.logs = append(r.logs, log)
	r.mu.Unlock()
	p, err := r.env.cp.StartReplica(ctx, r.name, framework.ReplicaOptions{
		Binary: r.env.binary, Kubeconfig: r.env.kubeconfig, Env: r.env.lockstepEnv(), LogPath: log,
		MetricsPort: r.metricsPort, Timeout: 2 * time.Minute,
	})
	if err != nil {
		return nil, err
	}
	r.env.front.Add(p.Addr)
	r.mu.Lock()
	r.current = p
	r.mu.Unlock()
	return p, nil
}

// kill ends the running incarnation at once (SIGKILL) and keeps the
// replica down for pause; false when none was running.
func (r *replica) kill(pause time.Duration) bool {
	r.mu.Lock()
	p := r.current
	r.resumeAt = time.Now().Add(pause)
	r.mu.Unlock()
	if p == nil {
		return false
	}
	r.env.front.Remove(p.Addr)
	p.Kill()
	return true
}

// leads reports whether the running incarnation leads.
func (r *replica) leads() bool {
	r.mu.Lock()
	p := r.current
	r.mu.Unlock()
	if p == nil {
		return false
	}
	done, _ := p.Exited()
	return !done && p.Logged(leading)
}

// running reports whether an incarnation runs.
func (r *replica) running() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.current != nil
}

// logFiles are the logs of every incarnation so far.
func (r *replica) logFiles() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.logs...)
}

// scrape reads the running incarnation's metrics; "" when none runs.
func (r *replica) scrape(ctx context.Context) string {
	if !r.running() {
		return ""
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, fmt.Sprintf("http://127.0.0.1:%d/metrics", r.metricsPort), nil)
	if err != nil {
		return ""
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return ""
	}
	defer func() { _ = resp.Body.Close() }()
	raw, _ := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	return string(raw)
}

// sleep waits d or until ctx ends; false when ctx ended.
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// readFile reads a file; "" when it cannot.
func readFile(path string) string {
	raw, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	return string(raw)
}

// containsAny reports whether s holds one of subs.
func containsAny(s string, subs []string) bool {
	for _, sub := range subs {
		if sub != "" && strings.Contains(s, sub) {
			return true
		}
	}
	return false
}
