package framework

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
)

// apiServer is one kube-apiserver of the control plane: envtest's, or
// one this package started (a second one, or a restart).
type apiServer struct {
	// addr is the host and port it serves at.
	addr string
	// args is its command line, the program first.
	args []string
	// pid is envtest's process while it runs; 0 once it was killed.
	pid int
	// process is the process this package started; nil while envtest's
	// runs, or none runs.
	process *Process
	// down: killed, and not ready again yet.
	down bool
}

// apiServers are the control plane's kube-apiservers and the front that
// sends connections to those that are ready.
type apiServers struct {
	all []*apiServer
	// front, when set, is how clients reach them, as a cluster's load
	// balancer: it sends connections only to a kube-apiserver that is
	// ready (KillAPIServer takes one out, RestartAPIServer puts it back
	// once /readyz answers 200). One that serves before it is ready lists
	// no custom resources yet: kube-controller-manager's namespace
	// controller would finalize a namespace whose custom resources it did
	// not see.
	front *Front
	// next is the one KillAPIServer kills next.
	next     int
	restarts int
}

// startAPIServers finds envtest's kube-apiserver and starts n-1 more on
// the same etcd, flags and certificates, each on a port of its own, and
// puts a front before them when there are several or when a
// kube-controller-manager will run.
func (cp *ControlPlane) startAPIServers(n int, front bool) error {
	pid, args, err := childProcess("kube-apiserver")
	if err != nil {
		return err
	}
	cp.api.all = []*apiServer{{addr: cp.apiAddr(), args: args, pid: pid}}
	for i := 1; i < n; i++ {
		port, err := FreePort()
		if err != nil {
			return err
		}
		a := &apiServer{addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), args: withFlag(args, "--secure-port", strconv.Itoa(port))}
		if err := cp.startAPIServer(context.Background(), a, fmt.Sprintf("kube-apiserver-%d.log", i+1), 2*time.Minute); err != nil {
			return err
		}
		cp.api.all = append(cp.api.all, a)
	}
	if n < 2 && !front {
		return nil
	}
	if cp.api.front, err = NewFront("127.0.0.1:0"); err != nil {
		return err
	}
	for _, a := range cp.api.all {
		cp.api.front.Add(a.addr)
	}
	return nil
}

// withFlag returns args with flag set to value.
func withFlag(args []string, flag, value string) []string {
	out := make([]string, 0, len(args)+1)
	for _, a := range args {
		if !strings.HasPrefix(a, flag+"=") {
			out = append(out, a)
		}
	}
	return append(out, flag+"="+value)
}

// ErrNoAPIServerToKill: every other kube-apiserver is down; KillAPIServer
// kills none, so that one stays ready.
var ErrNoAPIServerToKill = errors.New("no kube-apiserver can be killed now: it is the only one ready")

// KillAPIServer ends a kube-apiserver at once (SIGKILL), as a crash would,
// and returns which (with several, each in turn, never the last one
// ready: ErrNoAPIServerToKill); etcd keeps what it holds, and
// kube-controller-manager and every client keep trying to reach it, or
// reach another one. RestartAPIServer starts it again. Linux only (it
// finds envtest's process in /proc).
func (cp *ControlPlane) KillAPIServer() (int, error) {
	cp.apiMu.Lock()
	defer cp.apiMu.Unlock()
	if len(cp.api.all) == 0 {
		if err := cp.startAPIServers(1, false); err != nil {
			return 0, err
		}
	}
	ready := 0
	for _, a := range cp.api.all {
		if !a.down {
			ready++
		}
	}
	if ready == 0 || (len(cp.api.all) > 1 && ready < 2) {
		return 0, ErrNoAPIServerToKill
	}
	i := cp.api.next % len(cp.api.all)
	for cp.api.all[i].down {
		i = (i + 1) % len(cp.api.all)
	}
	cp.api.next = i + 1
	a := cp.api.all[i]
	if cp.api.front != nil {
		cp.api.front.Remove(a.addr)
	}
	a.down = true
	if a.process != nil {
		a.process.Kill()
		a.process = nil
		return i, nil
	}
	pid := a.pid
	a.pid = 0
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		return i, fmt.Errorf("killing kube-apiserver (pid %d): %w", pid, err)
	}
	// envtest waits for its process and so reaps it; the port is free once
	// it is gone.
	return i, wait.PollUntilContextTimeout(context.Background(), 20*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		_, err := os.Stat(fmt.Sprintf("/proc/%d", pid))
		return errors.Is(err, os.ErrNotExist), nil
	})
}

// RestartAPIServer starts kube-apiserver i, which KillAPIServer killed,
// again with the same flags, certificates, port and etcd, and waits until
// it is ready (timeout bounds the wait); meanwhile another may be killed
// or restarted. Users and service-account tokens made before stay valid.
func (cp *ControlPlane) RestartAPIServer(ctx context.Context, i int, timeout time.Duration) error {
	cp.apiMu.Lock()
	if i < 0 || i >= len(cp.api.all) || !cp.api.all[i].down || cp.api.all[i].process != nil {
		cp.apiMu.Unlock()
		return fmt.Errorf("kube-apiserver %d was not killed: nothing to restart", i)
	}
	a := cp.api.all[i]
	cp.api.restarts++
	log := "kube-apiserver-restart-" + strconv.Itoa(cp.api.restarts) + ".log"
	p, err := cp.startProcess(a, log)
	cp.apiMu.Unlock()
	if err != nil {
		return err
	}
	if err := cp.waitAPIServer(ctx, p, a.addr, timeout); err != nil {
		return fmt.Errorf("%w; its last output:\n%s", err, p.LogTail(20))
	}
	cp.apiMu.Lock()
	defer cp.apiMu.Unlock()
	a.down = false
	if cp.api.front != nil {
		cp.api.front.Add(a.addr)
	}
	return nil
}

// startAPIServer runs a's command line and waits until it is ready.
func (cp *ControlPlane) startAPIServer(ctx context.Context, a *apiServer, logName string, timeout time.Duration) error {
	p, err := cp.startProcess(a, logName)
	if err != nil {
		return err
	}
	if err := cp.waitAPIServer(ctx, p, a.addr, timeout); err != nil {
		return fmt.Errorf("%w; its last output:\n%s", err, p.LogTail(20))
	}
	return nil
}

// startProcess runs a's command line, its log in the working directory.
func (cp *ControlPlane) startProcess(a *apiServer, logName string) (*Process, error) {
	if err := os.MkdirAll(cp.Dir, 0o755); err != nil {
		return nil, fmt.Errorf("creating the working directory: %w", err)
	}
	p, err := StartProcess("kube-apiserver", a.args[0], a.args[1:], os.Environ(), filepath.Join(cp.Dir, logName))
	if err != nil {
		return nil, err
	}
	a.process = p
	return p, nil
}

// waitAPIServer waits until the kube-apiserver at addr answers /readyz
// with 200.
func (cp *ControlPlane) waitAPIServer(ctx context.Context, p *Process, addr string, timeout time.Duration) error {
	hc, err := rest.HTTPClientFor(cp.Config)
	if err != nil {
		return fmt.Errorf("a client for kube-apiserver: %w", err)
	}
	var last error
	err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		if done, err := p.Exited(); done {
			return false, fmt.Errorf("kube-apiserver ended: %v", err)
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, "https://"+addr+"/readyz", nil)
		if err != nil {
			return false, err
		}
		resp, err := hc.Do(req)
		if err != nil {
			last = err
			return false, nil
		}
		_ = resp.Body.Close()
		last = fmt.Errorf("/readyz answered %s", resp.Status)
		return resp.StatusCode == http.StatusOK, nil
	})
	if err != nil && wait.Interrupted(err) {
		return fmt.Errorf("kube-apiserver was not ready within %s (last check: %v)", timeout, last)
	}
	return err
}

// stopAPIServers stops the kube-apiservers this package started and the
// front.
func (cp *ControlPlane) stopAPIServers() error {
	cp.apiMu.Lock()
	defer cp.apiMu.Unlock()
	if cp.api.front != nil {
		cp.api.front.Close()
	}
	var errs []error
	for _, a := range cp.api.all {
		if a.process != nil {
			errs = append(errs, a.process.Stop(30*time.Second))
			a.process = nil
		}
	}
	return errors.Join(errs...)
}

// childProcess finds the child of this process named name and returns its
// pid and command line.
func childProcess(name string) (int, []string, error) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return 0, nil, fmt.Errorf("finding %s: %w", name, err)
	}
	self := os.Getpid()
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		comm, ppid, ok := parseParent(stat)
		if !ok || ppid != self || comm != name {
			continue
		}
		raw, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil {
			return 0, nil, fmt.Errorf("reading the command line of %s (pid %d): %w", name, pid, err)
		}
		args := strings.Split(string(bytes.TrimRight(raw, "\x00")), "\x00")
		return pid, args, nil
	}
	return 0, nil, fmt.Errorf("no %s runs as a child of this process", name)
}

// parseParent reads the command name (field 2, in parentheses, which may
// hold spaces) and the parent pid (field 4) from /proc/<pid>/stat.
func parseParent(stat []byte) (string, int, bool) {
	s := string(stat)
	open, end := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
	if open < 0 || end < open {
		return "", 0, false
	}
	fields := strings.Fields(s[end+1:])
	if len(fields) < 2 {
		return "", 0, false
	}
	ppid, err := strconv.Atoi(fields[1])
	return s[open+1 : end], ppid, err == nil
}
