//go:build !linux

package executor

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
)

// Prepare creates the work directory. Users are only supported on Linux.
func (p *Process) Prepare() error {
	p.prepareOnce.Do(func() {
		if p.Users.Enabled() {
			p.prepareErr = errors.New("actions run as users of their own only on Linux")
			return
		}
		for _, d := range []string{"bundles", "runs", privateDir} {
			if err := os.MkdirAll(filepath.Join(p.WorkDir, d), 0o700); err != nil {
				p.prepareErr = fmt.Errorf("create the executor's work directory: %w", err)
				return
			}
		}
	})
	return p.prepareErr
}

func (p *Process) credential(int) *syscall.Credential { return nil }

// runnerCommand starts program itself: limits are only set on Linux.
func runnerCommand(program string, _ Limits, env []string, _ *syscall.Credential) *exec.Cmd {
	cmd := exec.Command(program)
	cmd.Env = env
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	return cmd
}

func (p *Process) startSweep(int, string) (sweeper, error) {
	return nil, errors.New("actions run as users of their own only on Linux")
}

func (p *Process) reapUser(int) {}

func (p *Process) logSweepFailure(int, error) {}

// KillRunnerProcesses is only implemented on Linux; elsewhere it does
// nothing.
func KillRunnerProcesses(string) (int, error) { return 0, nil }
