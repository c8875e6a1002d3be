package reexec

import (
	"bufio"
	"errors"
	"io"
	"os"
	"strconv"
	"strings"
	"syscall"
)

// Sweep is a running sweep of one user (StartSweep): its processes are
// ended; Finish lets it empty the run directory.
type Sweep struct {
	proc   *os.Process
	stdin  *os.File
	stderr *os.File
}

// StartSweep starts a process as uid (and its group, and no other) that
// kills every process of uid but itself, and returns once none is left
// alive; the sweep then waits for Finish to empty dir ("": nothing to
// empty). Only a process that may change its user (CAP_SETUID,
// CAP_SETGID) can start one.
func StartSweep(uid int, dir string) (*Sweep, error) {
	if dir == "" {
		dir = "-"
	}
	inR, inW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		closeAll(inR, inW)
		return nil, err
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		closeAll(inR, inW, outR, outW)
		return nil, err
	}
	proc, err := os.StartProcess(Self, []string{"lockstep-sweep"}, &os.ProcAttr{
		Dir:   "/",
		Env:   []string{SweepEnv + "=" + dir},
		Files: []*os.File{inR, outW, errW},
		Sys: &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL,
			Credential: &syscall.Credential{Uid: uint32(uid), Gid: uint32(uid), Groups: []uint32{}}},
	})
	closeAll(inR, outW, errW)
	if err != nil {
		closeAll(inW, outR, errR)
		return nil, wrap("start a process as user "+strconv.Itoa(uid), err)
	}
	sw := &Sweep{proc: proc, stdin: inW, stderr: errR}
	line, err := bufio.NewReader(outR).ReadString('\n')
	_ = outR.Close()
	if err != nil || line != "ended\n" {
		return nil, sw.fail(errors.New("the processes of user " + strconv.Itoa(uid) + " were not ended"))
	}
	return sw, nil
}

func closeAll(files ...*os.File) {
	for _, f := range files {
		_ = f.Close()
	}
}

// Finish lets the sweep empty the run directory and waits for it.
func (sw *Sweep) Finish() error {
	_ = sw.stdin.Close()
	return sw.wait(nil)
}

func (sw *Sweep) fail(err error) error {
	_ = sw.stdin.Close()
	return sw.wait(err)
}

// wait waits for the sweep's end; an error (err, or its exit status) comes
// with what it wrote on stderr.
func (sw *Sweep) wait(err error) error {
	msg, _ := io.ReadAll(io.LimitReader(sw.stderr, 4096))
	_ = sw.stderr.Close()
	state, werr := sw.proc.Wait()
	switch {
	case err != nil:
	case werr != nil:
		err = werr
	case !state.Success():
		err = errors.New("the sweep " + state.String())
	default:
		return nil
	}
	if m := strings.TrimSpace(string(msg)); m != "" {
		return wrap(err.Error(), errors.New(m))
	}
	return err
}

// SweepUsers ends every process of the users first to last, one sweep per
// user that has any, and collects the ones that were this process's
// children.
func SweepUsers(first, last int) error {
	left, err := UserProcesses(func(uid int) bool { return uid >= first && uid <= last }, -1)
	if err != nil {
		return err
	}
	var errs []error
	swept := map[int]bool{}
	for _, pid := range left {
		st, ok := ReadStatus(pid)
		if !ok || swept[st.UID] {
			continue
		}
		swept[st.UID] = true
		sw, err := StartSweep(st.UID, "")
		if err == nil {
			err = sw.Finish()
		}
		errs = append(errs, err)
		Reap(st.UID)
	}
	return errors.Join(errs...)
}

// UserProcesses lists the live processes (not zombies) whose real user
// matches, but except.
func UserProcesses(match func(uid int) bool, except int) ([]int, error) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil, wrap("list processes", err)
	}
	var out []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == except {
			continue
		}
		st, ok := ReadStatus(pid)
		if ok && !st.Dead && match(st.UID) {
			out = append(out, pid)
		}
	}
	return out, nil
}

// Status is what /proc/<pid>/status says of a process.
type Status struct {
	// UID is the real user.
	UID  int
	PPid int
	// Dead is set for a zombie, or a process exiting.
	Dead bool
}

// ReadStatus reads /proc/<pid>/status; false when the process is gone.
func ReadStatus(pid int) (Status, bool) {
	raw, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return Status{}, false
	}
	var st Status
	found := 0
	for _, line := range strings.Split(string(raw), "\n") {
		key, value, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		fields := strings.Fields(value)
		if len(fields) == 0 {
			continue
		}
		switch key {
		case "State":
			st.Dead = fields[0] == "Z" || fields[0] == "X"
			found++
		case "PPid":
			st.PPid, _ = strconv.Atoi(fields[0])
			found++
		case "Uid":
			st.UID, _ = strconv.Atoi(fields[0])
			found++
		}
	}
	return st, found == 3
}

// Reap collects the exit status of this process's exited children that
// ran as uid: orphans of actions this process adopted. The caller makes
// sure no child of uid is waited for elsewhere (os/exec).
func Reap(uid int) {
	me := os.Getpid()
	for _, pid := range children(me) {
		if st, ok := ReadStatus(pid); ok && st.Dead && st.UID == uid && st.PPid == me {
			var ws syscall.WaitStatus
			_, _ = syscall.Wait4(pid, &ws, syscall.WNOHANG, nil)
		}
	}
}

// children lists the children of process pid, from the children files of
// its threads, or by reading every process where the kernel has none.
func children(pid int) []int {
	if out, ok := childrenOfTasks(pid); ok {
		return out
	}
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	var out []int
	for _, e := range entries {
		c, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if st, ok := ReadStatus(c); ok && st.PPid == pid {
			out = append(out, c)
		}
	}
	return out
}

// childrenOfTasks reads /proc/<pid>/task/*/children; false when the
// kernel has no such files.
func childrenOfTasks(pid int) ([]int, bool) {
	base := "/proc/" + strconv.Itoa(pid)
	if _, err := os.Stat(base + "/task/" + strconv.Itoa(pid) + "/children"); err != nil {
		return nil, false
	}
	tasks, err := os.ReadDir(base + "/task")
	if err != nil {
		return nil, false
	}
	var out []int
	for _, t := range tasks {
		raw, err := os.ReadFile(base + "/task/" + t.Name() + "/children")
		if err != nil {
			continue // a thread that ended meanwhile
		}
		for _, f := range strings.Fields(string(raw)) {
			if c, err := strconv.Atoi(f); err == nil {
				out = append(out, c)
			}
		}
	}
	return out, true
}
