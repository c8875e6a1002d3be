package framework

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Process is a program a suite started (lockstep, a benchmark's
// baseline), with its output in a log file.
type Process struct {
	// Name names it in messages.
	Name string
	// LogPath is where its stdout and stderr go.
	LogPath string
	// Started is when it was started.
	Started time.Time

	cmd  *exec.Cmd
	done chan struct{}
	err  error // set before done is closed
}

// StartProcess starts path with args and the environment env (all of it:
// CleanEnviron makes one), its output in logPath. The process is killed
// if this one dies (Linux).
func StartProcess(name, path string, args, env []string, logPath string) (*Process, error) {
	logFile, err := os.Create(logPath)
	if err != nil {
		return nil, fmt.Errorf("creating the log file of %s: %w", name, err)
	}
	cmd := exec.Command(path, args...)
	cmd.Env = env
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.SysProcAttr = dieWithParent()
	if err := cmd.Start(); err != nil {
		_ = logFile.Close()
		return nil, fmt.Errorf("starting %s (%s): %w", name, path, err)
	}
	p := &Process{Name: name, LogPath: logPath, Started: time.Now(), cmd: cmd, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		_ = logFile.Close()
		close(p.done)
	}()
	return p, nil
}

// CleanEnviron is this process's environment without LOCKSTEP_* and
// OTEL_* settings and KUBECONFIG, plus extra: a child sees only what its
// suite sets.
func CleanEnviron(extra []string) []string {
	var out []string
	for _, kv := range os.Environ() {
		if strings.HasPrefix(kv, "LOCKSTEP_") || strings.HasPrefix(kv, "OTEL_") || strings.HasPrefix(kv, "KUBECONFIG=") {
			continue
		}
		out = append(out, kv)
	}
	return append(out, extra...)
}

// PID is the process id.
func (p *Process) PID() int { return p.cmd.Process.Pid }

// Exited reports whether the process ended, and how.
func (p *Process) Exited() (bool, error) {
	select {
	case <-p.done:
		return true, p.err
	default:
		return false, nil
	}
}

// Done is closed once the process has ended.
func (p *Process) Done() <-chan struct{} { return p.done }

// Kill ends the process at once (SIGKILL), as a crash would, and waits
// until it has ended.
func (p *Process) Kill() {
	if done, _ := p.Exited(); done {
		return
	}
	_ = p.cmd.Process.Signal(syscall.SIGKILL)
	<-p.done
}

// Stop asks the process to end (SIGTERM) and kills it after grace.
func (p *Process) Stop(grace time.Duration) error {
	if done, _ := p.Exited(); done {
		return nil
	}
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("stopping %s: %w", p.Name, err)
	}
	t := time.NewTimer(grace)
	defer t.Stop()
	select {
	case <-p.done:
		return nil
	case <-t.C:
	}
	_ = p.cmd.Process.Kill()
	<-p.done
	return fmt.Errorf("%s did not stop within %s of SIGTERM and was killed", p.Name, grace)
}

// LogTail returns the last n lines of the process's output, for messages.
func (p *Process) LogTail(n int) string {
	raw, err := os.ReadFile(p.LogPath)
	if err != nil {
		return "(no log: " + err.Error() + ")"
	}
	lines := strings.Split(strings.TrimRight(string(raw), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// CPU is the CPU time (user and system) the process used so far (Linux
// only; the kernel counts it in clock ticks, 10 ms on most systems, so it
// suits measurements over thousands of requests).
func (p *Process) CPU() (time.Duration, error) {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", p.PID()))
	if err != nil {
		return 0, fmt.Errorf("reading the CPU time of %s: %w", p.Name, err)
	}
	return parseStat(raw, clockTicks)
}

// clockTicks is USER_HZ, the unit of /proc/<pid>/stat times: 100 on every
// Linux architecture Go runs on.
const clockTicks = 100

// parseStat reads utime and stime (fields 14 and 15) from /proc/<pid>/stat.
// The command name (field 2) is in parentheses and may hold spaces.
func parseStat(raw []byte, hz int64) (time.Duration, error) {
	s := string(raw)
	end := strings.LastIndexByte(s, ')')
	if end < 0 {
		return 0, fmt.Errorf("unexpected /proc stat: %.80q", s)
	}
	fields := strings.Fields(s[end+1:])
	// fields[0] is field 3 (state): utime is field 14, stime field 15.
	if len(fields) < 13 {
		return 0, fmt.Errorf("unexpected /proc stat: %.80q", s)
	}
	utime, err1 := strconv.ParseInt(fields[11], 10, 64)
	stime, err2 := strconv.ParseInt(fields[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("unexpected /proc stat: %.80q", s)
	}
	return time.Duration(utime+stime) * time.Second / time.Duration(hz), nil
}

// Memory is a process's resident memory, from /proc/<pid>/status.
type Memory struct {
	// RSS is the resident set size now (VmRSS).
	RSS int64
	// Peak is the largest RSS so far (VmHWM).
	Peak int64
}

// Memory reads the process's resident memory (Linux only).
func (p *Process) Memory() (Memory, error) {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", p.PID()))
	if err != nil {
		return Memory{}, fmt.Errorf("reading the memory of %s: %w", p.Name, err)
	}
	return parseStatus(raw)
}

// parseStatus reads VmRSS and VmHWM (in kB) from a /proc status file.
func parseStatus(raw []byte) (Memory, error) {
	var m Memory
	found := 0
	sc := bufio.NewScanner(bytes.NewReader(raw))
	for sc.Scan() {
		key, value, ok := strings.Cut(sc.Text(), ":")
		if !ok || (key != "VmRSS" && key != "VmHWM") {
			continue
		}
		fields := strings.Fields(value)
		if len(fields) != 2 || fields[1] != "kB" {
			return m, fmt.Errorf("unexpected %s line in /proc status: %q", key, sc.Text())
		}
		kb, err := strconv.ParseInt(fields[0], 10, 64)
		if err != nil {
			return m, fmt.Errorf("unexpected %s line in /proc status: %q", key, sc.Text())
		}
		if key == "VmRSS" {
			m.RSS = kb * 1024
		} else {
			m.Peak = kb * 1024
		}
		found++
	}
	if found != 2 {
		return m, fmt.Errorf("no VmRSS and VmHWM in /proc status")
	}
	return m, nil
}
