package executor

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"syscall"

	"github.com/lockstep-dev/lockstep/internal/broker/embedded/executor/reexec"
)

// Actions run through copies of the broker's own program (package
// reexec): a runner, started as the action's user, sets the action's
// limits on itself and becomes the action's program; with Users, a sweep,
// started as the action's user too, ends the action's processes and
// empties its run directory, which a broker with only CAP_SETUID and
// CAP_SETGID could not do itself (it may not signal or remove what belongs
// to another user).

// Prepare readies the work directory and, with Users, the broker process
// for them: its supplementary groups include the actions' groups (so that
// it reads what actions write for it), it adopts the orphans of its
// actions (PR_SET_CHILD_SUBREAPER, to reap them), one sweep proves that it
// may run processes as the action users, and whatever processes those
// users still have (a broker that stopped on this host) are ended. Run
// calls it once; the broker calls it at start, to report a setting that
// cannot work before any request.
func (p *Process) Prepare() error {
	p.prepareOnce.Do(func() { p.prepareErr = p.prepare() })
	return p.prepareErr
}

func (p *Process) prepare() error {
	if p.WorkDir == "" {
		return errors.New("the executor needs a work directory")
	}
	if p.Users.Enabled() && p.Users.Count > 1<<16 {
		return fmt.Errorf("action users %s: at most %d", p.Users, 1<<16)
	}
	dirs := []struct {
		name string
		mode fs.FileMode
	}{{"", 0o711}, {"bundles", 0o755}, {"runs", 0o711}, {privateDir, 0o700}}
	for _, d := range dirs {
		path := filepath.Join(p.WorkDir, d.name)
		if err := os.MkdirAll(path, d.mode); err != nil {
			return fmt.Errorf("create the executor's work directory: %w", err)
		}
		if d.name != "" || p.Users.Enabled() {
			if err := os.Chmod(path, d.mode); err != nil {
				return fmt.Errorf("create the executor's work directory: %w", err)
			}
		}
	}
	if err := ownDirs(p.WorkDir, "runs", privateDir); err != nil {
		return err
	}
	if !p.Users.Enabled() {
		return p.cleanRuns(nil)
	}
	if err := reachable(p.WorkDir); err != nil {
		return err
	}
	groups, err := syscall.Getgroups()
	if err != nil {
		return fmt.Errorf("read the broker's groups: %w", err)
	}
	for i := range p.Users.Count {
		if gid := p.Users.First + i; !slices.Contains(groups, gid) {
			groups = append(groups, gid)
		}
	}
	if err := syscall.Setgroups(groups); err != nil {
		return fmt.Errorf("actions run as users %s of their own, which needs a broker with CAP_SETUID and CAP_SETGID: joining their groups: %w", p.Users, err)
	}
	if os.Getpid() != 1 {
		if _, _, e := syscall.RawSyscall(syscall.SYS_PRCTL, prSetChildSubreaper, 1, 0); e != 0 {
			return fmt.Errorf("adopt the actions' orphaned processes: %w", e)
		}
	}
	// One sweep proves the broker may start processes as the action
	// users; then those users' leftovers are ended.
	sw, err := reexec.StartSweep(p.Users.First, "")
	if err == nil {
		err = sw.Finish()
	}
	if err != nil {
		return fmt.Errorf("actions run as users %s of their own, which needs a broker with CAP_SETUID and CAP_SETGID: %w", p.Users, err)
	}
	if err := reexec.SweepUsers(p.Users.First, p.Users.First+p.Users.Count-1); err != nil {
		return fmt.Errorf("end the processes the action users still have: %w", err)
	}
	// Nothing of the users runs now: a run directory one of them wrote
	// in is emptied by a sweep of that user.
	empty := func(dir string) error {
		var st syscall.Stat_t
		if err := syscall.Stat(dir, &st); err != nil {
			return err
		}
		uid := int(st.Gid) // the run's group is its user's
		if uid < p.Users.First || uid >= p.Users.First+p.Users.Count {
			return fmt.Errorf("its group %d is none of the action users' (%s)", uid, p.Users)
		}
		sw, err := reexec.StartSweep(uid, dir)
		if err == nil {
			err = sw.Finish()
		}
		if err != nil {
			return err
		}
		return os.Remove(dir)
	}
	if err := p.cleanRuns(empty); err != nil {
		return err
	}
	p.free = make(chan int, p.Users.Count)
	for u := range p.Users.Count {
		p.free <- u
	}
	return nil
}

// cleanRuns removes the run directories of a broker that stopped
// (removeStaleRuns) and logs how many.
func (p *Process) cleanRuns(empty func(dir string) error) error {
	n, err := p.removeStaleRuns(empty)
	if n > 0 && p.Logger != nil {
		p.Logger.Info("removed the run directories of actions a stopped broker left", "count", n)
	}
	if err != nil {
		return fmt.Errorf("the run directories of a stopped broker hold the parameters of its actions: %w", err)
	}
	return nil
}

// ownDirs checks that the named directories of workDir are directories
// of the broker's own user: one that another user created first (in a
// shared /tmp) would let that user read the run directories' parameters.
func ownDirs(workDir string, names ...string) error {
	for _, name := range names {
		path := filepath.Join(workDir, name)
		var st syscall.Stat_t
		if err := syscall.Lstat(path, &st); err != nil {
			return fmt.Errorf("create the executor's work directory: %w", err)
		}
		if st.Mode&syscall.S_IFMT != syscall.S_IFDIR || int(st.Uid) != os.Geteuid() {
			return fmt.Errorf("the executor's work directory %s is not a directory of the broker's own user (%d) but of user %d: use a work directory no other user can create (WORK_DIR)",
				path, os.Geteuid(), st.Uid)
		}
	}
	return nil
}

// prSetChildSubreaper is PR_SET_CHILD_SUBREAPER, which package syscall
// does not name.
const prSetChildSubreaper = 36

// reachable checks that others may pass through dir and every directory
// above it: the action users must reach their bundles and run directories.
func reachable(dir string) error {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return err
	}
	for d := abs; ; d = filepath.Dir(d) {
		info, err := os.Stat(d)
		if err != nil {
			return err
		}
		if info.Mode().Perm()&0o001 == 0 {
			return fmt.Errorf("the action users cannot reach the work directory %s: %s is mode %o; let others through it (chmod o+x)", abs, d, info.Mode().Perm())
		}
		if d == filepath.Dir(d) {
			return nil
		}
	}
}

// credential is what a process of user u runs with: the user, its group
// and no other group (nil for the broker's own user).
func (p *Process) credential(u int) *syscall.Credential {
	if u < 0 {
		return nil
	}
	id := uint32(p.Users.First + u)
	return &syscall.Credential{Uid: id, Gid: id, Groups: []uint32{}}
}

// runnerCommand starts a runner that sets limits and becomes program, with
// env as its whole environment, as cred (nil: the broker's user), in a
// process group of its own that dies with the broker's thread that
// started it.
func runnerCommand(program string, limits Limits, env []string, cred *syscall.Credential) *exec.Cmd {
	cmd := exec.Command(reexec.Self)
	cmd.Args = []string{program}
	cmd.Env = append(env, reexec.RunProgramEnv+"="+program, reexec.RunLimitsEnv+"="+limits.runner().Encode())
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL, Credential: cred}
	return cmd
}

// startSweep starts the sweep of user u (reexec.StartSweep).
func (p *Process) startSweep(u int, dir string) (*reexec.Sweep, error) {
	return reexec.StartSweep(p.Users.First+u, dir)
}

// reapUser collects the broker's exited children of user u.
func (p *Process) reapUser(u int) { reexec.Reap(p.Users.First + u) }

// logSweepFailure says that user u keeps processes or files the broker
// could not end, and is not given to another action.
func (p *Process) logSweepFailure(u int, err error) {
	if p.Logger != nil {
		p.Logger.Error("the processes or run directory of an action user could not be ended; the user is not given to another action until the broker restarts",
			"user", p.Users.First+u, "error", err)
	}
}

// KillRunnerProcesses ends what a stopped broker process of this host left
// running (reexec.KillRunnerProcesses).
func KillRunnerProcesses(runnerID string) (int, error) { return reexec.KillRunnerProcesses(runnerID) }
