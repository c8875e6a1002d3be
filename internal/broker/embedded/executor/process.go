package executor

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"

	"github.com/lockstep-dev/lockstep/internal/broker/embedded/bundle"
)

// DefaultPath is the PATH actions get when Process.Path is empty.
const DefaultPath = "/usr/local/bin:/usr/bin:/bin"

// maxOutputBytes bounds the output file.
const maxOutputBytes = 1 << 20

// Process runs actions as local processes (see the package documentation
// for the protocol, and for what Users and Max change).
type Process struct {
	// WorkDir holds the unpacked bundles (bundles/<digest>) and one private
	// directory per run (runs/), removed when the run ends.
	WorkDir string
	// Path is the PATH of actions; empty means DefaultPath.
	Path string
	// RunnerID, when set, is put in every action's environment as
	// LOCKSTEP_RUNNER, so that a later broker process can find and end the
	// processes a stopped one left behind (KillRunnerProcesses).
	RunnerID string
	// Users, when enabled, are the users actions run as, one per running
	// action; Run waits for a free one. The broker process needs
	// CAP_SETUID and CAP_SETGID, and every directory above WorkDir must
	// let others through (o+x). Without Users actions run as the broker's
	// own user.
	Users Users
	// Max is the administrator's maximum (Limits.For); zero limits
	// nothing. Processes is only applied with Users.
	Max Limits
	// Logger, when set, reports what the executor could not clean up.
	Logger *slog.Logger

	prepareOnce sync.Once
	prepareErr  error
	// free holds the indexes of the users no action runs as.
	free chan int
}

// Run implements Executor.
func (p *Process) Run(ctx context.Context, inv Invocation) (Result, error) {
	fail := func(err error) (Result, error) {
		return Result{}, &ActionError{Action: inv.Action, ExitCode: -1, Err: err}
	}
	if inv.Bundle == nil {
		return fail(errors.New("no bundle to run"))
	}
	if err := p.Prepare(); err != nil {
		return fail(err)
	}
	bundleDir, err := materialize(filepath.Join(p.WorkDir, "bundles"), inv.Bundle)
	if err != nil {
		return fail(err)
	}
	program := filepath.Join(bundleDir, filepath.FromSlash(inv.Program))
	if rel, err := filepath.Rel(bundleDir, program); err != nil || strings.HasPrefix(rel, "..") {
		return fail(fmt.Errorf("program %q is outside the bundle", inv.Program))
	}
	limits := p.Max.For(&inv.Bundle.Manifest)
	if !p.Users.Enabled() {
		// RLIMIT_NPROC counts every process of the user: only a user of
		// the action's own makes it a bound of the action.
		limits.Processes = 0
	}
	u, err := p.acquire(ctx)
	if err != nil {
		return fail(err)
	}
	r := &run{p: p, u: u}
	defer r.finish()
	if r.dir, r.lock, err = p.makeRunDir(inv.Action, u); err != nil {
		return fail(err)
	}
	input := inv.Input
	if inv.Action != bundle.Provision || inv.Retry {
		input.State = inv.State
	}
	files, err := prepareRunFiles(r.dir, filepath.Join(p.WorkDir, privateDir), input, u)
	if err != nil {
		return fail(err)
	}
	defer files.close()

	cmd := runnerCommand(program, limits, p.environment(inv, bundleDir, r.dir, files), p.credential(u))
	cmd.Dir = bundleDir
	cmd.Stdin = files.stdin
	cmd.Stderr = files.stderr // stdout is ignored

	runErr := r.runGroup(ctx, cmd, func() {
		if inv.Started != nil {
			inv.Started(func() Output {
				out, _ := readOutput(files.outputPath) // a file being written reads as nothing yet
				return out
			})
		}
	})

	res := Result{}
	var errs []error
	raw, err := readRunFile(files.statePath, maxStateBytes)
	switch {
	case err != nil:
		errs = append(errs, fmt.Errorf("read the state file: %w", err))
	default:
		if updates, err := ParseState(raw); err != nil {
			errs = append(errs, err)
		} else {
			res.StateUpdates = updates
		}
	}
	out, outErr := readOutput(files.outputPath)
	res.Output = out
	if outErr != nil {
		errs = append(errs, outErr)
	}
	if runErr == nil && len(errs) == 0 {
		return res, nil
	}
	ae := &ActionError{Action: inv.Action, ExitCode: exitCode(runErr), Description: out.Description}
	switch {
	case runErr != nil:
		ae.Err = runErr
		ae.Refused = ae.ExitCode == RefuseExitCode
		if ae.Description == "" && !ae.Stopped() {
			ae.Description = describeExit(cmd.ProcessState, limits, files.stderr)
		}
	default:
		ae.Err = errors.Join(errs...)
		ae.Description = "the action broke the output protocol: " + ae.Err.Error()
	}
	return res, ae
}

// describeExit describes an action that ended with a failure and wrote no
// description of its own: stopped at its CPU time limit, or else its last
// line of stderr or its exit status. When that line is how programs say an
// allocation or a fork failed, or a signal ended the action, the limits it
// ran with follow: they are the likely cause.
func describeExit(ps *os.ProcessState, limits Limits, stderr *os.File) string {
	if ps == nil {
		return ""
	}
	ws, _ := ps.Sys().(syscall.WaitStatus)
	cpu := ps.UserTime() + ps.SystemTime()
	if ws.Signaled() && ws.Signal() == syscall.SIGXCPU || limits.CPU > 0 && ws.Signaled() && cpu >= cpuSeconds(limits.CPU) {
		return fmt.Sprintf("stopped at its CPU time limit (%s per process)", cpuSeconds(limits.CPU))
	}
	desc := lastLine(stderr)
	limited := ws.Signaled() || atALimit(desc)
	switch {
	case desc != "":
	case ws.Signaled():
		desc = "killed by signal " + ws.Signal().String()
	case ps.ExitCode() > 0:
		desc = "exited with status " + strconv.Itoa(ps.ExitCode())
	default:
		return ""
	}
	if limited && limits != (Limits{}) {
		desc += " (the action's limits: " + limits.String() + ")"
	}
	return desc
}

// limitMessages are what programs say when an allocation or a fork fails
// (C library, shells, coreutils, Python, Go, Java).
var limitMessages = []string{
	"cannot allocate", "out of memory", "memory exhausted", "memoryerror", "outofmemoryerror",
	"cannot fork", "can't fork", "fork: retry", "resource temporarily unavailable", "failed to create new os thread",
}

// atALimit reports whether a line of stderr says an allocation or a fork
// failed.
func atALimit(line string) bool {
	line = strings.ToLower(line)
	for _, m := range limitMessages {
		if strings.Contains(line, m) {
			return true
		}
	}
	return false
}

// run is one run of an action: the user it runs as (an index in
// Process.Users, -1 for the broker's own) and its directory.
type run struct {
	p   *Process
	u   int
	dir string
	// lock, held while the run lives, tells a broker that starts on the
	// same work directory that dir is not a dead broker's.
	lock *os.File
	// sweep ended the action's processes (with Users); it empties dir
	// when finish tells it to.
	sweep sweeper
}

// runGroup starts cmd in its own process group, calls started, and waits
// for it; when ctx ends first, or when cmd exits, every process left of
// the action is killed: those of its process group, or with Users every
// process of its user.
func (r *run) runGroup(ctx context.Context, cmd *exec.Cmd, started func()) error {
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start: %w", err)
	}
	started()
	pgid := cmd.Process.Pid
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		r.end(cmd, pgid)
		return err
	case <-ctx.Done():
		r.end(cmd, pgid)
		<-done
		return ctx.Err()
	}
}

// end kills what is left of the action.
func (r *run) end(cmd *exec.Cmd, pgid int) {
	if r.u < 0 {
		killGroup(pgid)
		return
	}
	sw, err := r.p.startSweep(r.u, r.dir)
	if err != nil {
		// Without a sweep nothing can signal the action's user but a
		// broker with CAP_KILL; the run's user is not given out again.
		r.p.logSweepFailure(r.u, err)
		_ = cmd.Process.Kill()
		killGroup(pgid)
		r.u = -1
		return
	}
	r.sweep = sw
}

// finish removes the run directory and gives the user back, once nothing
// of the run is left.
func (r *run) finish() {
	if r.lock != nil {
		defer func() { _ = r.lock.Close() }()
	}
	if r.sweep != nil {
		if err := r.sweep.Finish(); err != nil {
			r.p.logSweepFailure(r.u, err)
			_ = os.RemoveAll(r.dir)
			return // the user is not given out again
		}
		r.p.reapUser(r.u)
	}
	if r.dir != "" {
		_ = os.RemoveAll(r.dir)
	}
	r.p.release(r.u)
}

func killGroup(pgid int) {
	_ = syscall.Kill(-pgid, syscall.SIGKILL)
}

func exitCode(err error) int {
	if err == nil {
		return 0
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode()
	}
	return -1
}

// runFiles are the files of one run: the input, output and state files in
// the run directory (which the action sees), and its stdin and stderr.
type runFiles struct {
	stdin, stderr                    *os.File
	inputPath, outputPath, statePath string
}

func (f *runFiles) close() {
	for _, file := range []*os.File{f.stdin, f.stderr} {
		if file != nil {
			_ = file.Close()
		}
	}
}

// prepareRunFiles writes the input document and creates the output and
// state files in dir, readable (input) and writable (output, state) by the
// action's user u (or the broker's own, u < 0); stderr is a file of the
// broker's private directory, unlinked at once: the action has it only as
// its stderr.
func prepareRunFiles(dir, private string, in Input, u int) (*runFiles, error) {
	if len(in.Parameters) == 0 {
		in.Parameters = json.RawMessage(`{}`)
	}
	doc, err := json.Marshal(in)
	if err != nil {
		return nil, fmt.Errorf("encode action input: %w", err)
	}
	f := &runFiles{
		inputPath:  filepath.Join(dir, "input.json"),
		outputPath: filepath.Join(dir, "output.json"),
		statePath:  filepath.Join(dir, "state"),
	}
	readable, writable := os.FileMode(0o600), os.FileMode(0o600)
	if u >= 0 {
		readable, writable = 0o640, 0o660 // the group is the action's
	}
	if err := writeFile(f.inputPath, doc, readable); err != nil {
		return nil, fmt.Errorf("write action input: %w", err)
	}
	for _, p := range []string{f.outputPath, f.statePath} {
		if err := writeFile(p, nil, writable); err != nil {
			return nil, fmt.Errorf("create %s: %w", filepath.Base(p), err)
		}
	}
	if f.stdin, err = os.Open(f.inputPath); err != nil {
		return nil, err
	}
	if f.stderr, err = os.CreateTemp(private, "stderr-"); err != nil {
		f.close()
		return nil, fmt.Errorf("create the action's stderr: %w", err)
	}
	_ = os.Remove(f.stderr.Name())
	return f, nil
}

// writeFile writes a new file with exactly mode (no umask).
func writeFile(path string, data []byte, mode os.FileMode) error {
	if err := os.WriteFile(path, data, mode); err != nil {
		return err
	}
	return os.Chmod(path, mode)
}

// readRunFile reads a file of the run directory, which the action
// controls: never through a symbolic link, never a file with another name
// elsewhere (a hard link), never a FIFO or device, at most limit bytes. A
// missing file reads as empty.
func readRunFile(path string, limit int64) ([]byte, error) {
	fd, err := syscall.Open(path, syscall.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK|syscall.O_CLOEXEC, 0)
	if errors.Is(err, syscall.ENOENT) {
		return nil, nil
	}
	if err != nil {
		if errors.Is(err, syscall.ELOOP) {
			return nil, fmt.Errorf("%s is a symbolic link; write the file itself", filepath.Base(path))
		}
		return nil, fmt.Errorf("open %s: %w", filepath.Base(path), err)
	}
	f := os.NewFile(uintptr(fd), path)
	defer func() { _ = f.Close() }()
	var st syscall.Stat_t
	if err := syscall.Fstat(fd, &st); err != nil {
		return nil, err
	}
	switch {
	case st.Mode&syscall.S_IFMT != syscall.S_IFREG:
		return nil, fmt.Errorf("%s is not a regular file", filepath.Base(path))
	case st.Nlink != 1:
		return nil, fmt.Errorf("%s has other names (hard links); write the file itself", filepath.Base(path))
	case st.Size > limit:
		return nil, fmt.Errorf("%s is %d bytes; at most %d are allowed", filepath.Base(path), st.Size, limit)
	}
	return io.ReadAll(io.LimitReader(f, limit+1))
}

func readOutput(path string) (Output, error) {
	raw, err := readRunFile(path, maxOutputBytes)
	if err != nil {
		return Output{}, fmt.Errorf("read output file: %w", err)
	}
	if len(strings.TrimSpace(string(raw))) == 0 {
		return Output{}, nil
	}
	var out Output
	if err := json.Unmarshal(raw, &out); err != nil {
		return Output{}, fmt.Errorf("the output file is not a JSON object with credentials, dashboard_url and description: %w", err)
	}
	if len(out.Credentials) > 0 {
		var obj map[string]json.RawMessage
		if err := json.Unmarshal(out.Credentials, &obj); err != nil {
			return Output{}, errors.New("credentials in the output file must be a JSON object")
		}
	}
	return out, nil
}

// lastLine returns the last non-empty line of the action's stderr, at most
// 300 bytes.
func lastLine(f *os.File) string {
	if f == nil {
		return ""
	}
	const tail = 4096
	info, err := f.Stat()
	if err != nil {
		return ""
	}
	off := max(info.Size()-tail, 0)
	buf := make([]byte, info.Size()-off)
	n, err := f.ReadAt(buf, off)
	if err != nil && !errors.Is(err, io.EOF) {
		return ""
	}
	lines := strings.Split(strings.TrimSpace(string(buf[:n])), "\n")
	last := strings.TrimSpace(lines[len(lines)-1])
	if len(last) > 300 {
		last = last[:300] + "..."
	}
	return last
}

// privateDir is the broker's own directory under WorkDir, which no action
// can enter.
const privateDir = "private"

// makeRunDir creates the private directory of one run under runs/: the
// broker's, with the group of the action's user u (u < 0: the broker's
// own), which may read and write in it. It is made in the broker's private
// directory and moved to runs/ once it holds the lock that says its broker
// lives (removeStaleRuns), so that no other broker starting on the same
// work directory takes it for a dead one's. The lock is released by
// closing the returned file, after the directory is removed.
func (p *Process) makeRunDir(a bundle.Action, u int) (dir string, lock *os.File, err error) {
	tmp, err := os.MkdirTemp(filepath.Join(p.WorkDir, privateDir), string(a)+"-")
	if err != nil {
		return "", nil, fmt.Errorf("create run directory: %w", err)
	}
	fail := func(err error) (string, *os.File, error) {
		if lock != nil {
			_ = lock.Close()
		}
		_ = os.Remove(tmp)
		return "", nil, fmt.Errorf("create run directory: %w", err)
	}
	if lock, err = lockDir(tmp, true); err != nil {
		return fail(err)
	}
	if u >= 0 {
		gid := p.Users.First + u
		if err := os.Chown(tmp, -1, gid); err != nil {
			return fail(fmt.Errorf("give it to group %d: %w", gid, err))
		}
		// Setgid: the files created in it are the group's too.
		if err := os.Chmod(tmp, 0o770|os.ModeSetgid); err != nil {
			return fail(err)
		}
	}
	dir = filepath.Join(p.WorkDir, "runs", filepath.Base(tmp))
	if err := os.Rename(tmp, dir); err != nil {
		return fail(err)
	}
	return dir, lock, nil
}

// lockDir opens dir and locks it (flock): exclusively for as long as the
// file stays open, waiting for the lock when wait is set; without wait
// it fails when another open file holds the lock.
func lockDir(dir string, wait bool) (*os.File, error) {
	f, err := os.Open(dir)
	if err != nil {
		return nil, err
	}
	how := syscall.LOCK_EX
	if !wait {
		how |= syscall.LOCK_NB
	}
	if err := syscall.Flock(int(f.Fd()), how); err != nil {
		_ = f.Close()
		return nil, err
	}
	return f, nil
}

// removeStaleRuns removes the run directories no running broker holds:
// those of the actions of a broker that stopped before it could remove
// them (killed, or its host restarted). Their input documents hold
// parameters, which may hold secrets. empty empties a directory the broker
// cannot (one an action user wrote in); it returns how many it removed.
func (p *Process) removeStaleRuns(empty func(dir string) error) (int, error) {
	runs := filepath.Join(p.WorkDir, "runs")
	entries, err := os.ReadDir(runs)
	if err != nil {
		return 0, fmt.Errorf("list the run directories: %w", err)
	}
	var errs []error
	removed := 0
	for _, e := range entries {
		dir := filepath.Join(runs, e.Name())
		lock, err := lockDir(dir, false)
		if errors.Is(err, syscall.EWOULDBLOCK) {
			continue // a running action's
		}
		if err == nil {
			err = os.RemoveAll(dir)
			if err != nil && empty != nil {
				err = empty(dir)
			}
			_ = lock.Close()
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("remove the run directory %s of a stopped broker: %w", dir, err))
			continue
		}
		removed++
	}
	return removed, errors.Join(errs...)
}

// acquire takes a free user (its index in Users) for one run, waiting
// until one is free or ctx ends; without Users it returns -1.
func (p *Process) acquire(ctx context.Context) (int, error) {
	if !p.Users.Enabled() {
		return -1, nil
	}
	select {
	case u := <-p.free:
		return u, nil
	case <-ctx.Done():
		return -1, fmt.Errorf("no action user (%s) became free: %w", p.Users, ctx.Err())
	}
}

// release gives a user back once nothing of its last run is left.
func (p *Process) release(u int) {
	if u >= 0 {
		p.free <- u
	}
}

// sweeper is a sweep that ended the processes of a run's user and
// empties its run directory on Finish (reexec.Sweep).
type sweeper interface{ Finish() error }
