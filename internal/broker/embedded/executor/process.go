package executor

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"github.com/lockstep-dev/lockstep/internal/broker/embedded/bundle"
)

// DefaultPath is the PATH actions get when Process.Path is empty.
const DefaultPath = "/usr/local/bin:/usr/bin:/bin"

// maxOutputBytes bounds the output file.
const maxOutputBytes = 1 << 20

// Process runs actions as local processes (see the package documentation
// for the protocol).
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
}

// Run implements Executor.
func (p *Process) Run(ctx context.Context, inv Invocation) (Result, error) {
	fail := func(err error) (Result, error) {
		return Result{}, &ActionError{Action: inv.Action, ExitCode: -1, Err: err}
	}
	if inv.Bundle == nil {
		return fail(errors.New("no bundle to run"))
	}
	bundleDir, err := materialize(filepath.Join(p.WorkDir, "bundles"), inv.Bundle)
	if err != nil {
		return fail(err)
	}
	program := filepath.Join(bundleDir, filepath.FromSlash(inv.Program))
	if rel, err := filepath.Rel(bundleDir, program); err != nil || strings.HasPrefix(rel, "..") {
		return fail(fmt.Errorf("program %q is outside the bundle", inv.Program))
	}
	runs := filepath.Join(p.WorkDir, "runs")
	if err := os.MkdirAll(runs, 0o700); err != nil {
		return fail(fmt.Errorf("create run directory: %w", err))
	}
	runDir, err := os.MkdirTemp(runs, string(inv.Action)+"-")
	if err != nil {
		return fail(fmt.Errorf("create run directory: %w", err))
	}
	defer func() { _ = os.RemoveAll(runDir) }()

	input := inv.Input
	if inv.Action != bundle.Provision || inv.Retry {
		input.State = inv.State
	}
	files, err := prepareRunFiles(runDir, input)
	if err != nil {
		return fail(err)
	}
	defer files.close()

	cmd := exec.Command(program)
	cmd.Dir = bundleDir
	cmd.Stdin = files.stdin
	cmd.Stdout = files.stdout
	cmd.Stderr = files.stderr
	cmd.Env = p.environment(inv, bundleDir, runDir, files)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}

	runErr := runGroup(ctx, cmd, func() {
		if inv.Started != nil {
			inv.Started(func() Output {
				out, _ := readOutput(files.outputPath) // a file being written reads as nothing yet
				return out
			})
		}
	})

	res := Result{}
	var errs []error
	if raw, err := os.ReadFile(files.statePath); err == nil {
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
			ae.Description = lastLine(files.stderrPath)
		}
		if ae.Description == "" && ae.ExitCode > 0 {
			ae.Description = "exited with status " + strconv.Itoa(ae.ExitCode)
		}
	default:
		ae.Err = errors.Join(errs...)
		ae.Description = "the action broke the output protocol: " + ae.Err.Error()
	}
	return res, ae
}

// runGroup starts cmd in its own process group, calls started, and waits
// for it; when ctx ends first, or when cmd exits, every process left in
// the group is killed.
func runGroup(ctx context.Context, cmd *exec.Cmd, started func()) error {
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start: %w", err)
	}
	started()
	pgid := cmd.Process.Pid
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		killGroup(pgid)
		return err
	case <-ctx.Done():
		killGroup(pgid)
		<-done
		return ctx.Err()
	}
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

type runFiles struct {
	stdin, stdout, stderr                        *os.File
	inputPath, outputPath, statePath, stderrPath string
}

func (f *runFiles) close() {
	for _, file := range []*os.File{f.stdin, f.stdout, f.stderr} {
		if file != nil {
			_ = file.Close()
		}
	}
}

func prepareRunFiles(dir string, in Input) (*runFiles, error) {
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
		stderrPath: filepath.Join(dir, "stderr"),
	}
	if err := os.WriteFile(f.inputPath, doc, 0o600); err != nil {
		return nil, fmt.Errorf("write action input: %w", err)
	}
	if err := os.WriteFile(f.statePath, nil, 0o600); err != nil {
		return nil, fmt.Errorf("create state file: %w", err)
	}
	if f.stdin, err = os.Open(f.inputPath); err != nil {
		return nil, err
	}
	if f.stdout, err = os.OpenFile(filepath.Join(dir, "stdout"), os.O_CREATE|os.O_WRONLY, 0o600); err != nil {
		f.close()
		return nil, err
	}
	if f.stderr, err = os.OpenFile(f.stderrPath, os.O_CREATE|os.O_WRONLY, 0o600); err != nil {
		f.close()
		return nil, err
	}
	return f, nil
}

func readOutput(path string) (Output, error) {
	info, err := os.Stat(path)
	if errors.Is(err, os.ErrNotExist) {
		return Output{}, nil
	}
	if err != nil {
		return Output{}, fmt.Errorf("read output file: %w", err)
	}
	if info.Size() > maxOutputBytes {
		return Output{}, fmt.Errorf("the output file is %d bytes; at most %d are allowed", info.Size(), maxOutputBytes)
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		return Output{}, fmt.Errorf("read output file: %w", err)
	}
	if len(bytes.TrimSpace(raw)) == 0 {
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

// lastLine returns the last non-empty line of a file, at most 300 bytes.
func lastLine(path string) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer func() { _ = f.Close() }()
	const tail = 4096
	if info, err := f.Stat(); err == nil && info.Size() > tail {
		if _, err := f.Seek(-tail, io.SeekEnd); err != nil {
			return ""
		}
	}
	raw, err := io.ReadAll(f)
	if err != nil {
		return ""
	}
	lines := strings.Split(strings.TrimSpace(string(raw)), "\n")
	last := strings.TrimSpace(lines[len(lines)-1])
	if len(last) > 300 {
		last = last[:300] + "..."
	}
	return last
}
