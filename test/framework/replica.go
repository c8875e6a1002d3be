package framework

import (
	"context"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"time"
)

// ReplicaOptions say how StartReplica runs lockstep's webhook binary.
type ReplicaOptions struct {
	// Binary is the cmd/webhook binary (see Build).
	Binary string
	// Kubeconfig is the identity lockstep acts as.
	Kubeconfig string
	// Env holds further settings (LOCKSTEP_*), after the ones StartReplica
	// sets, which they may override.
	Env []string
	// LogPath is where the replica's output goes.
	LogPath string
	// MetricsPort serves lockstep's metrics on 127.0.0.1 at that port;
	// zero serves none.
	MetricsPort int
	// Timeout bounds the wait until it serves TLS; one minute when zero.
	Timeout time.Duration
}

// Replica is one lockstep webhook process, as a Deployment's pod runs it.
type Replica struct {
	*Process
	// Addr is where it serves the webhooks (TLS, envtest's certificates).
	Addr string
}

// StartReplica runs lockstep's webhook binary as a separate process on a
// free loopback port, with envtest's serving certificates, and returns
// once it serves TLS. Only its own settings reach it: no LOCKSTEP_*
// variable of this process (see CleanEnviron).
func (cp *ControlPlane) StartReplica(ctx context.Context, name string, o ReplicaOptions) (*Replica, error) {
	port, err := FreePort()
	if err != nil {
		return nil, err
	}
	metrics := "0"
	if o.MetricsPort != 0 {
		metrics = net.JoinHostPort("127.0.0.1", strconv.Itoa(o.MetricsPort))
	}
	r := &Replica{Addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(port))}
	env := append([]string{
		"KUBECONFIG=" + o.Kubeconfig,
		"LOCKSTEP_WEBHOOK_HOST=127.0.0.1",
		"LOCKSTEP_WEBHOOK_PORT=" + strconv.Itoa(port),
		"LOCKSTEP_CERT_DIR=" + cp.Env.WebhookInstallOptions.LocalServingCertDir,
		"LOCKSTEP_METRICS_ADDR=" + metrics,
		"LOCKSTEP_METRICS_SECURE=false", // plain HTTP on loopback, for the test to read
		"LOCKSTEP_HEALTH_ADDR=0",
	}, o.Env...)
	if r.Process, err = StartProcess(name, o.Binary, nil, CleanEnviron(env), o.LogPath); err != nil {
		return nil, err
	}
	stopped := func() error {
		if done, err := r.Exited(); done {
			return fmt.Errorf("replica %s ended: %v", name, err)
		}
		return nil
	}
	timeout := o.Timeout
	if timeout == 0 {
		timeout = time.Minute
	}
	if err := WaitServing(ctx, r.Addr, timeout, stopped); err != nil {
		r.Kill()
		return nil, fmt.Errorf("%w; its last output:\n%s", err, r.LogTail(30))
	}
	return r, nil
}

// Logged reports whether the replica's output holds s.
func (r *Replica) Logged(s string) bool {
	out, err := os.ReadFile(r.LogPath)
	return err == nil && strings.Contains(string(out), s)
}
