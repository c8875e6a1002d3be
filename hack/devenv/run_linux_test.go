package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/lockstep-dev/lockstep/internal/tracing"
	"github.com/lockstep-dev/lockstep/test/framework"
)

// TestMakeRun runs the devenv binary as `make run` does, three times on one
// state directory, and uses it with the real kubectl: state survives a
// restart and a crash, a second run says that one is running, a crash's
// leftovers are stopped by the next run, a deleted namespace goes (the
// namespace controller runs), a run whose kube-controller-manager dies
// says so and stops, SIGINT leaves nothing behind, and a run with OTLP
// gRPC tracing sends lockstep's spans and kube-apiserver's to the
// collector, in one trace.
func TestMakeRun(t *testing.T) {
	root, err := framework.Root()
	require.NoError(t, err)
	assets, err := framework.Assets(root)
	require.NoError(t, err)
	bin := filepath.Join(t.TempDir(), "lockstep-dev")
	build := exec.Command("go", "build", "-o", bin, ".")
	build.Stderr = os.Stderr
	require.NoError(t, build.Run(), "building devenv")
	state := t.TempDir()
	kubectl := func(args ...string) (string, error) {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		cmd := exec.CommandContext(ctx, filepath.Join(assets, "kubectl"), append([]string{"--kubeconfig", filepath.Join(state, "kubeconfig")}, args...)...)
		cmd.Dir = root
		out, err := cmd.CombinedOutput()
		t.Logf("$ kubectl %s\n%s", strings.Join(args, " "), out)
		return string(out), err
	}

	// 1. A fresh start: the instructions, and lockstep at work.
	first := startDevenv(t, bin, root, state, assets)
	out := first.output()
	assert.Contains(t, out, "export KUBECONFIG="+typed(root, filepath.Join(state, "kubeconfig")))
	assert.Contains(t, out, "export PATH="+typed(root, assets)+":$PATH")
	assert.Contains(t, out, "kubectl apply -f examples/instance.yaml")
	assert.Contains(t, out, "make run: starting kube-controller-manager (namespace, garbage-collector and ClusterRole aggregation controllers)")
	assert.Contains(t, out, "controllers      namespace, garbage collector, ClusterRole aggregation (kube-controller-manager)")
	got, err := kubectl("apply", "-f", "examples/instance.yaml")
	require.NoError(t, err)
	assert.Equal(t, "serviceinstance.lockstep.dev/db created\n", got)
	// The namespace controller runs: a deleted namespace goes.
	_, err = kubectl("create", "namespace", "scratch")
	require.NoError(t, err)
	got, err = kubectl("delete", "namespace", "scratch", "--timeout=25s")
	require.NoError(t, err, "the namespace controller must finish the delete")
	assert.Equal(t, "namespace \"scratch\" deleted\n", got)

	// 2. A second run on the same state says so, and changes nothing.
	second := exec.Command(bin, "-root", root, "-state", state, "-assets", assets)
	msg, err := second.CombinedOutput()
	var exit *exec.ExitError
	require.True(t, errors.As(err, &exit), "a second run must fail: %v\n%s", err, msg)
	assert.Equal(t, 3, exit.ExitCode())
	assert.Contains(t, string(msg), "lockstep is already running here")
	assert.Contains(t, string(msg), "pid "+strconv.Itoa(first.cmd.Process.Pid))

	// 3. Ctrl-C: everything stops, nothing is left listening.
	first.interrupt(t)
	assert.Contains(t, first.output(), "make run: stopped")
	assertNothingLeft(t, state)

	// 4. A restart keeps the cluster's objects and the broker's store: the
	// broker still knows the instance, so an update goes through. This run
	// traces over OTLP gRPC to a collector: the update is one trace from
	// kube-apiserver's request to lockstep's broker call.
	collector, err := framework.StartOTLPReceiver()
	require.NoError(t, err)
	t.Cleanup(collector.Stop)
	restarted := startDevenv(t, bin, root, state, assets,
		"OTEL_EXPORTER_OTLP_ENDPOINT=http://"+collector.Endpoint(), "OTEL_EXPORTER_OTLP_PROTOCOL=grpc")
	assert.Contains(t, restarted.output(), "make run: tracing on: lockstep's spans and kube-apiserver's go to "+collector.Endpoint())
	got, err = kubectl("get", "serviceinstance", "db", "-o", "jsonpath={.spec.parameters.size}")
	require.NoError(t, err)
	assert.Equal(t, "2", got)
	got, err = kubectl("patch", "serviceinstance", "db", "--type=merge", "-p", `{"spec":{"parameters":{"size":3}}}`)
	require.NoError(t, err, "the broker must still know the instance after a restart")
	assert.Equal(t, "serviceinstance.lockstep.dev/db patched\n", got)
	assertTracedUpdate(t, collector)

	// 5. A crash (SIGKILL) leaves etcd and kube-apiserver running; the next
	// run stops them, and the state is still there.
	require.NoError(t, restarted.cmd.Process.Kill())
	_ = restarted.wait(30 * time.Second)
	left, err := findLeftovers(state)
	require.NoError(t, err)
	require.NotEmpty(t, left, "a killed devenv cannot stop its children")
	third := startDevenv(t, bin, root, state, assets)
	assert.Contains(t, third.output(), "left running by an earlier make run")
	got, err = kubectl("get", "serviceinstance", "db", "-o", "jsonpath={.spec.parameters.size}")
	require.NoError(t, err)
	assert.Equal(t, "3", got)
	third.interrupt(t)
	assertNothingLeft(t, state)

	// 6. kube-controller-manager dies: make run says so, with its log, and
	// stops the rest.
	fourth := startDevenv(t, bin, root, state, assets)
	running, err := findLeftovers(state)
	require.NoError(t, err)
	killed := false
	for _, p := range running {
		if p.name == "kube-controller-manager" {
			require.NoError(t, syscall.Kill(p.pid, syscall.SIGKILL))
			killed = true
		}
	}
	require.True(t, killed, "make run runs kube-controller-manager: %v", running)
	require.ErrorAs(t, fourth.wait(time.Minute), &exit, "make run must end when kube-controller-manager is gone:\n%s", fourth.output())
	assert.Equal(t, 1, exit.ExitCode())
	assert.Contains(t, fourth.output(), "make run: kube-controller-manager stopped on its own (signal: killed): deleted namespaces would stay Terminating; see "+filepath.Join(state, "logs", "kube-controller-manager.log"))
	assertNothingLeft(t, state)
}

// devenv is a running devenv process.
type devenv struct {
	cmd  *exec.Cmd
	out  *framework.LogBuffer
	done chan error
}

// startDevenv starts the devenv binary with the test's environment, its
// OTEL_* variables replaced by env's, and waits until lockstep runs.
func startDevenv(t *testing.T, bin, root, state, assets string, env ...string) *devenv {
	t.Helper()
	d := &devenv{out: &framework.LogBuffer{}, done: make(chan error, 1)}
	d.cmd = exec.Command(bin, "-root", root, "-state", state, "-assets", assets)
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "OTEL_") {
			d.cmd.Env = append(d.cmd.Env, kv)
		}
	}
	d.cmd.Env = append(d.cmd.Env, env...)
	d.cmd.Stdout, d.cmd.Stderr = d.out, d.out
	require.NoError(t, d.cmd.Start())
	go func() { d.done <- d.cmd.Wait() }()
	t.Cleanup(func() { d.kill(t, state) })
	err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, 90*time.Second, true, func(context.Context) (bool, error) {
		select {
		case err := <-d.done:
			d.done <- err
			return false, fmt.Errorf("devenv stopped while starting: %v", err)
		default:
		}
		return strings.Contains(d.output(), "lockstep is running."), nil
	})
	require.NoError(t, err, "devenv did not get ready:\n%s", d.output())
	return d
}

func (d *devenv) output() string { return d.out.String() }

// wait waits for the process to end and returns how it ended.
func (d *devenv) wait(timeout time.Duration) error {
	select {
	case err := <-d.done:
		d.done <- err
		return err
	case <-time.After(timeout):
		return errors.New("still running")
	}
}

// running reports whether the process has not ended yet.
func (d *devenv) running() bool {
	select {
	case err := <-d.done:
		d.done <- err
		return false
	default:
		return true
	}
}

// interrupt is Ctrl-C: SIGINT, then a clean exit within a minute.
func (d *devenv) interrupt(t *testing.T) {
	t.Helper()
	require.NoError(t, d.cmd.Process.Signal(syscall.SIGINT))
	require.NoError(t, d.wait(time.Minute), "devenv must exit cleanly after SIGINT:\n%s", d.output())
}

// kill makes sure nothing of this devenv outlives the test, whatever failed.
func (d *devenv) kill(t *testing.T, state string) {
	if d.running() {
		_ = d.cmd.Process.Signal(syscall.SIGINT)
		if d.wait(time.Minute) != nil {
			_ = d.cmd.Process.Kill()
		}
	}
	left, _ := findLeftovers(state)
	for _, l := range left {
		if err := stopProcess(l.pid, 10*time.Second); err != nil {
			t.Errorf("stopping leftover %s (pid %d): %v", l.name, l.pid, err)
		}
	}
}

// assertNothingLeft checks that no process of the state directory runs and
// that none of its ports is listened on.
func assertNothingLeft(t *testing.T, state string) {
	t.Helper()
	left, err := findLeftovers(state)
	require.NoError(t, err)
	assert.Empty(t, left, "processes left running")
	raw, err := os.ReadFile(filepath.Join(state, "ports.json"))
	require.NoError(t, err)
	var p Ports
	require.NoError(t, json.Unmarshal(raw, &p))
	for _, port := range allPorts(p) {
		conn, err := net.DialTimeout("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), time.Second)
		if err == nil {
			_ = conn.Close()
		}
		assert.Error(t, err, "port %d is still listened on", port)
	}
}

// assertTracedUpdate waits for the spans of the ServiceInstance update
// make run's kube-apiserver and lockstep sent the collector: lockstep's
// admission of the update (its broker call under it) is the child of
// kube-apiserver's call of the webhook, in a trace kube-apiserver started.
func assertTracedUpdate(t *testing.T, collector *framework.OTLPReceiver) {
	t.Helper()
	var admitted framework.Span
	var trace map[string]framework.Span
	err := wait.PollUntilContextTimeout(context.Background(), 200*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		all := collector.Spans()
		for _, s := range all {
			if s.Service == "lockstep" && s.Name == tracing.SpanAdmission &&
				s.Attributes[string(tracing.AttrName)] == "db" && s.Attributes[string(tracing.AttrOperation)] == "UPDATE" {
				admitted = s
			}
		}
		if admitted.SpanID == "" {
			return false, nil
		}
		trace = map[string]framework.Span{}
		for _, s := range all {
			if s.TraceID == admitted.TraceID {
				trace[s.SpanID] = s
			}
		}
		caller, ok := trace[admitted.ParentSpanID]
		if !ok {
			return false, nil
		}
		top := caller
		for top.ParentSpanID != "" {
			if top, ok = trace[top.ParentSpanID]; !ok {
				return false, nil
			}
		}
		for _, s := range trace {
			if s.Name == tracing.SpanBroker && s.ParentSpanID == admitted.SpanID {
				return caller.Service == "apiserver" && top.Service == "apiserver", nil
			}
		}
		return false, nil
	})
	var got []string
	for _, s := range trace {
		got = append(got, s.Service+" "+s.Name)
	}
	require.NoError(t, err, "one trace from kube-apiserver's request to lockstep's broker call; the update's trace holds %v", got)
}
