package env

import (
	"context"
	"fmt"
	"path/filepath"
	"strconv"
	"time"

	"github.com/lockstep-dev/lockstep/test/framework"
)

// Replica is a second lockstep process beside Env.Lockstep, as a
// deployment's second replica: the same control plane, account,
// certificates and settings, on ports of its own, from a binary and with
// settings a benchmark chooses (a build without tracing, tracing on). It
// serves the webhooks; the reconcilers stay with Env.Lockstep, which
// holds the lead. Stop it when done.
type Replica struct {
	Process                              *framework.Process
	webhookPort, healthPort, metricsPort int
}

// URL is the URL of one of the replica's webhook paths.
func (r *Replica) URL(path string) string {
	return "https://127.0.0.1:" + strconv.Itoa(r.webhookPort) + path
}

// MetricsURL is where the replica serves its Prometheus metrics.
func (r *Replica) MetricsURL() string {
	return "http://127.0.0.1:" + strconv.Itoa(r.metricsPort) + "/metrics"
}

// Stop stops the replica.
func (r *Replica) Stop() error { return r.Process.Stop(30 * time.Second) }

// BuildWebhook builds lockstep's cmd/webhook with extra go build flags
// (-tags lockstep_notracing, say) into a directory of its own, and returns
// the binary.
func (e *Env) BuildWebhook(ctx context.Context, name string, flags ...string) (string, error) {
	dir := filepath.Join(e.Dir, "bin-"+name)
	if err := framework.Build(ctx, e.opts.Root, dir, append(append([]string{}, e.opts.BuildFlags...), flags...), "./cmd/webhook"); err != nil {
		return "", err
	}
	return filepath.Join(dir, "webhook"), nil
}

// StartReplica starts binary (Env's own cmd/webhook when empty) as a
// replica named name (its log is lockstep-NAME.log), with settings
// (VARIABLE=value, OTEL_* included) over lockstep's, and waits until it
// is ready.
func (e *Env) StartReplica(ctx context.Context, name, binary string, settings ...string) (*Replica, error) {
	if binary == "" {
		binary = e.bins.Webhook
	}
	r := &Replica{}
	taken := map[int]bool{e.webhookPort: true, e.healthPort: true, e.metricsPort: true}
	for _, p := range []*int{&r.webhookPort, &r.healthPort, &r.metricsPort} {
		port, err := framework.FreePortExcept(taken)
		if err != nil {
			return nil, err
		}
		*p, taken[port] = port, true
	}
	environ := append(e.lockstepEnv(),
		"LOCKSTEP_WEBHOOK_PORT="+strconv.Itoa(r.webhookPort),
		"LOCKSTEP_METRICS_ADDR=127.0.0.1:"+strconv.Itoa(r.metricsPort),
		"LOCKSTEP_HEALTH_ADDR=127.0.0.1:"+strconv.Itoa(r.healthPort))
	p, err := framework.StartProcess("lockstep "+name, binary, nil, framework.CleanEnviron(append(environ, settings...)),
		filepath.Join(e.Dir, "lockstep-"+name+".log"))
	if err != nil {
		return nil, err
	}
	r.Process = p
	ready := "http://127.0.0.1:" + strconv.Itoa(r.healthPort) + "/readyz"
	if err := waitReady(ctx, p, 60*time.Second, func(ctx context.Context) error {
		if err := httpOK(ctx, ready); err != nil {
			return err
		}
		return e.handshake(r.webhookPort)
	}); err != nil {
		_ = p.Stop(10 * time.Second)
		return nil, fmt.Errorf("lockstep replica %s: %w", name, err)
	}
	e.Logf("lockstep replica %s (pid %d) ready in %s", name, p.PID(), time.Since(p.Started).Round(time.Millisecond))
	return r, nil
}
