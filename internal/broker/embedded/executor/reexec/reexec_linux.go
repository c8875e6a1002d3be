package reexec

import (
	"errors"
	"io"
	"os"
	"os/signal"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"
	"unsafe"
)

// init makes this process what the executor started it as (see the
// package documentation); it returns only in a process started otherwise.
func init() {
	switch {
	case os.Getenv(WatchRunnerEnv) != "":
		os.Exit(watch(os.Getenv(WatchRunnerEnv), os.Getenv(WatchParentEnv), os.Getenv(WatchUsersEnv)))
	case os.Getenv(RunProgramEnv) != "":
		os.Exit(runAction(os.Getenv(RunProgramEnv)))
	case os.Getenv(SweepEnv) != "":
		os.Exit(sweep(os.Getenv(SweepEnv)))
	}
}

// What package syscall does not name.
const (
	rlimitNproc = 6 // RLIMIT_NPROC
)

// runAction is a runner: it sets the action's limits on itself and becomes
// its program, with its environment less the executor's own variables. The
// limits are set last, with raw system calls and everything execve needs
// ready, so that this process allocates nothing under them. It returns
// only when it could not.
func runAction(program string) int {
	runtime.LockOSThread()
	var env []string
	var encoded string
	for _, kv := range os.Environ() {
		switch {
		case strings.HasPrefix(kv, RunLimitsEnv+"="):
			encoded = kv[len(RunLimitsEnv)+1:]
		case strings.HasPrefix(kv, ControlPrefix):
		default:
			env = append(env, kv)
		}
	}
	cannot := func(err error) int {
		say(os.Stderr, "lockstep: cannot start the action: ", err.Error())
		return ExitCannotRun
	}
	l, err := DecodeLimits(encoded)
	if err != nil {
		return cannot(err)
	}
	// What the action writes in its run directory stays readable by the
	// broker (the directory's group), by nobody else.
	syscall.Umask(0o027)
	// Under memory pressure in the broker's container, actions go first.
	_ = os.WriteFile("/proc/self/oom_score_adj", []byte("1000"), 0)
	type rlimit struct {
		resource int
		value    syscall.Rlimit
	}
	var limits []rlimit
	if l.Memory > 0 {
		limits = append(limits, rlimit{syscall.RLIMIT_DATA, syscall.Rlimit{Cur: uint64(l.Memory), Max: uint64(l.Memory)}})
	}
	if l.CPUSeconds > 0 {
		limits = append(limits, rlimit{syscall.RLIMIT_CPU, syscall.Rlimit{Cur: uint64(l.CPUSeconds), Max: uint64(l.CPUSeconds) + 1}})
	}
	if l.Processes > 0 {
		limits = append(limits, rlimit{rlimitNproc, syscall.Rlimit{Cur: uint64(l.Processes), Max: uint64(l.Processes)}})
	}
	argv0, err := syscall.BytePtrFromString(program)
	if err != nil {
		return cannot(err)
	}
	argv, err := syscall.SlicePtrFromStrings([]string{program})
	if err != nil {
		return cannot(err)
	}
	envv, err := syscall.SlicePtrFromStrings(env)
	if err != nil {
		return cannot(err)
	}
	for i := range limits {
		if _, _, e := syscall.RawSyscall6(syscall.SYS_PRLIMIT64, 0, uintptr(limits[i].resource), uintptr(unsafe.Pointer(&limits[i].value)), 0, 0, 0); e != 0 {
			return cannot(wrap("set its limits", e))
		}
	}
	_, _, e := syscall.RawSyscall(syscall.SYS_EXECVE, uintptr(unsafe.Pointer(argv0)), uintptr(unsafe.Pointer(&argv[0])), uintptr(unsafe.Pointer(&envv[0])))
	say(os.Stderr, "cannot start ", program[strings.LastIndexByte(program, '/')+1:], ": ", e.Error())
	if e == syscall.ENOENT {
		return ExitNotFound
	}
	return ExitCannotRun
}

// SweepTimeout bounds how long a sweep tries to end its user's processes.
const SweepTimeout = 10 * time.Second

// sweep, running as the user it sweeps, kills every process of its user
// but itself until none is alive, says "ended", waits for its stdin to
// close, and empties dir ("-": none).
func sweep(dir string) int {
	uid, me := os.Getuid(), os.Getpid()
	deadline := time.Now().Add(SweepTimeout)
	for {
		alive, err := UserProcesses(func(id int) bool { return id == uid }, me)
		if err != nil {
			say(os.Stderr, "lockstep: ", err.Error())
			return 1
		}
		if len(alive) == 0 {
			break
		}
		_ = syscall.Kill(-1, syscall.SIGKILL) // every process this user may signal: its own
		if time.Now().After(deadline) {
			say(os.Stderr, "lockstep: ", strconv.Itoa(len(alive)), " processes of user ", strconv.Itoa(uid), " outlived SIGKILL for ", SweepTimeout.String())
			return 1
		}
		time.Sleep(5 * time.Millisecond)
	}
	say(os.Stdout, "ended")
	_, _ = io.Copy(io.Discard, os.Stdin)
	if dir == "-" {
		return 0
	}
	if err := emptyDir(dir); err != nil {
		say(os.Stderr, "lockstep: empty the run directory: ", err.Error())
		return 1
	}
	return 0
}

// emptyDir removes everything in dir, first opening again the directories
// the action closed to its own user.
func emptyDir(dir string) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	var errs []error
	for _, e := range entries {
		path := dir + "/" + e.Name()
		if e.IsDir() {
			_ = os.Chmod(path, 0o700)
			if err := emptyDir(path); err != nil {
				errs = append(errs, err)
				continue
			}
		}
		if err := os.Remove(path); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// watch waits for the parent-death signal (SIGTERM), or finds the parent
// gone already, and kills the processes of runner and every process of
// the action users ("first-last", "" for none). It tells the parent when
// it is ready (a line on stdout), so that no action starts before.
func watch(runner, parent, users string) int {
	died := make(chan os.Signal, 1)
	signal.Notify(died, syscall.SIGTERM)
	if strconv.Itoa(os.Getppid()) == parent {
		say(os.Stdout, "watching")
		<-died
	}
	_, err := KillRunnerProcesses(runner)
	if first, last, ok := parseRange(users); ok {
		err = errors.Join(err, SweepUsers(first, last))
	}
	if err != nil {
		say(os.Stderr, "lockstep: ending the actions of a stopped broker: ", err.Error())
		return 1
	}
	return 0
}

func parseRange(s string) (first, last int, ok bool) {
	lo, hi, found := strings.Cut(s, "-")
	first, err1 := strconv.Atoi(lo)
	last, err2 := strconv.Atoi(hi)
	return first, last, found && err1 == nil && err2 == nil && 0 < first && first <= last
}
