package framework

import (
	"bytes"
	"context"
	"errors"
	"fmt"
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

// apiServer is what KillAPIServer learned of the running kube-apiserver,
// so that RestartAPIServer can start it again exactly so.
type apiServer struct {
	// args is its command line, the program first.
	args []string
	// restarted is the process RestartAPIServer started; nil while the
	// one envtest started runs, or none runs.
	restarted *Process
	restarts  int
}

// KillAPIServer ends kube-apiserver at once (SIGKILL), as a crash would;
// etcd keeps what it holds, and kube-controller-manager and every client
// keep trying to reach it. RestartAPIServer starts it again. Linux only
// (it finds envtest's process in /proc).
func (cp *ControlPlane) KillAPIServer() error {
	cp.apiMu.Lock()
	defer cp.apiMu.Unlock()
	if cp.cmFront != nil {
		cp.cmFront.Remove(cp.apiAddr())
	}
	if cp.api.restarted != nil {
		cp.api.restarted.Kill()
		cp.api.restarted = nil
		return nil
	}
	pid, args, err := childProcess("kube-apiserver")
	if err != nil {
		return err
	}
	cp.api.args = args
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		return fmt.Errorf("killing kube-apiserver (pid %d): %w", pid, err)
	}
	// envtest waits for its process and so reaps it; the port is free once
	// it is gone.
	return wait.PollUntilContextTimeout(context.Background(), 20*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		_, err := os.Stat(fmt.Sprintf("/proc/%d", pid))
		return errors.Is(err, os.ErrNotExist), nil
	})
}

// RestartAPIServer starts kube-apiserver again after KillAPIServer, with
// the same flags, certificates, port and etcd, and waits until it is
// ready (timeout bounds the wait). Users and service-account tokens made
// before stay valid.
func (cp *ControlPlane) RestartAPIServer(ctx context.Context, timeout time.Duration) error {
	cp.apiMu.Lock()
	defer cp.apiMu.Unlock()
	if len(cp.api.args) == 0 {
		return errors.New("kube-apiserver was not killed: nothing to restart")
	}
	if cp.api.restarted != nil {
		return errors.New("kube-apiserver runs already")
	}
	cp.api.restarts++
	log := filepath.Join(cp.Dir, "kube-apiserver-"+strconv.Itoa(cp.api.restarts)+".log")
	p, err := StartProcess("kube-apiserver", cp.api.args[0], cp.api.args[1:], os.Environ(), log)
	if err != nil {
		return err
	}
	cp.api.restarted = p
	if err := cp.waitAPIServer(ctx, p, timeout); err != nil {
		return fmt.Errorf("%w; its last output:\n%s", err, p.LogTail(20))
	}
	if cp.cmFront != nil {
		cp.cmFront.Add(cp.apiAddr())
	}
	return nil
}

// waitAPIServer waits until kube-apiserver answers /readyz with 200.
func (cp *ControlPlane) waitAPIServer(ctx context.Context, p *Process, timeout time.Duration) error {
	hc, err := rest.HTTPClientFor(cp.Config)
	if err != nil {
		return fmt.Errorf("a client for kube-apiserver: %w", err)
	}
	var last error
	err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		if done, err := p.Exited(); done {
			return false, fmt.Errorf("kube-apiserver ended: %v", err)
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimSuffix(cp.Config.Host, "/")+"/readyz", nil)
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

// stopAPIServer stops a kube-apiserver that RestartAPIServer started.
func (cp *ControlPlane) stopAPIServer() error {
	cp.apiMu.Lock()
	defer cp.apiMu.Unlock()
	if cp.api.restarted == nil {
		return nil
	}
	err := cp.api.restarted.Stop(30 * time.Second)
	cp.api.restarted = nil
	return err
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
