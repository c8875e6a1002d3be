package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"syscall"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
)

// reapLeftovers stops an etcd, kube-apiserver or kube-controller-manager
// that a previous devenv on this state directory started and could not
// stop (it was killed with SIGKILL, say). It runs while this devenv holds
// the state directory's lock, so no live devenv owns them. Each is asked to stop (SIGTERM), then killed
// after 10 seconds.
func reapLeftovers(stateDir string, out io.Writer) error {
	found, err := findLeftovers(stateDir)
	if err != nil {
		return err
	}
	for _, l := range found {
		fmt.Fprintf(out, "make run: stopping %s (pid %d) left running by an earlier make run\n", l.name, l.pid)
		if err := stopProcess(l.pid, 10*time.Second); err != nil {
			return fmt.Errorf("stopping %s (pid %d) left by an earlier make run: %w", l.name, l.pid, err)
		}
	}
	return nil
}

// leftover is a control plane process started for the state directory.
type leftover struct {
	pid  int
	name string
}

// findLeftovers lists the running control plane processes started for
// stateDir, in the order they are to be stopped: kube-controller-manager,
// kube-apiserver, then etcd (without etcd, kube-apiserver may not stop
// when asked).
func findLeftovers(stateDir string) ([]leftover, error) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil, fmt.Errorf("listing processes to find leftovers of an earlier run: %w", err)
	}
	var found []leftover
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() || !alive(pid) {
			continue
		}
		raw, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil {
			continue // gone, or not ours to read
		}
		if argv := splitCmdline(raw); isLeftover(argv, stateDir) {
			found = append(found, leftover{pid: pid, name: filepath.Base(argv[0])})
		}
	}
	order := map[string]int{"kube-controller-manager": 0, "kube-apiserver": 1, "etcd": 2}
	sort.SliceStable(found, func(i, j int) bool { return order[found[i].name] < order[found[j].name] })
	return found, nil
}

func splitCmdline(raw []byte) []string {
	var argv []string
	for _, a := range bytes.Split(bytes.TrimRight(raw, "\x00"), []byte{0}) {
		argv = append(argv, string(a))
	}
	return argv
}

// stopProcess sends SIGTERM to pid, then SIGKILL if it still runs after
// grace, and waits until it is gone.
func stopProcess(pid int, grace time.Duration) error {
	if err := syscall.Kill(pid, syscall.SIGTERM); err != nil {
		if errors.Is(err, syscall.ESRCH) {
			return nil
		}
		return err
	}
	gone := func() bool {
		err := wait.PollUntilContextTimeout(context.Background(), 50*time.Millisecond, grace, true, func(context.Context) (bool, error) {
			return !alive(pid), nil
		})
		return err == nil
	}
	if gone() {
		return nil
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
		return err
	}
	if !gone() {
		return errors.New("it survived SIGKILL")
	}
	return nil
}

// alive reports whether pid runs (a zombie counts as gone).
func alive(pid int) bool {
	raw, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return false
	}
	// The state follows the command name in parentheses: "pid (comm) S ...".
	if i := bytes.LastIndexByte(raw, ')'); i >= 0 && i+2 < len(raw) {
		return raw[i+2] != 'Z'
	}
	return true
}
