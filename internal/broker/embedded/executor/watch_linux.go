package executor

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"runtime"
	"strconv"
	"syscall"
)

// The environment of a watch process: the runner whose actions it ends,
// and the broker process it watches.
const (
	watchRunnerEnv = "LOCKSTEP_EXECUTOR_WATCH_RUNNER"
	watchParentEnv = "LOCKSTEP_EXECUTOR_WATCH_PARENT"
)

// init turns a process started by Watch into the watch itself: a copy of
// the broker's own program (whichever program links this package), which
// does nothing until the broker process dies, then ends what the
// broker's actions left running, and exits.
func init() {
	if runner := os.Getenv(watchRunnerEnv); runner != "" {
		os.Exit(watch(runner, os.Getenv(watchParentEnv)))
	}
}

// watch waits for the parent-death signal (SIGTERM), or finds the parent
// gone already, and kills the processes of runner. It tells the parent
// when it is ready (a line on stdout), so that no action starts before.
func watch(runner, parent string) int {
	died := make(chan os.Signal, 1)
	signal.Notify(died, syscall.SIGTERM)
	if strconv.Itoa(os.Getppid()) == parent {
		fmt.Println("watching")
		<-died
	}
	if _, err := KillRunnerProcesses(runner); err != nil {
		fmt.Fprintln(os.Stderr, "lockstep: ending the actions of a stopped broker:", err)
		return 1
	}
	return 0
}

// Watch starts a process that ends the actions of runner (and whatever
// they started, in their process groups) the moment this process dies,
// however it dies: SIGKILLed, the broker cannot do it itself. An action's
// first process gets the kernel's parent-death signal; what it started
// does not, and would run on until a broker of this runner's host starts
// again (KillRunnerProcesses at Recover). The watch gets the
// parent-death signal from the goroutine's locked thread, which lives
// until stop. stop ends the watch, without killing anything.
func Watch(runner string) (stop func(), err error) {
	self, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("watch the broker's actions: %w", err)
	}
	started := make(chan error, 1)
	quit := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		// The parent-death signal follows the thread that started the
		// child: it must not end while the watch runs.
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		cmd := exec.Command(self)
		cmd.Env = []string{watchRunnerEnv + "=" + runner, watchParentEnv + "=" + strconv.Itoa(os.Getpid())}
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGTERM}
		ready, err := cmd.StdoutPipe()
		if err != nil {
			started <- err
			return
		}
		if err := cmd.Start(); err != nil {
			started <- err
			return
		}
		// The watch is ready once it has set up for the signal.
		if _, err := bufio.NewReader(ready).ReadString('\n'); err != nil {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
			started <- fmt.Errorf("the watch process did not start: %w", err)
			return
		}
		started <- nil
		<-quit
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	}()
	if err := <-started; err != nil {
		<-done
		return nil, fmt.Errorf("watch the broker's actions: %w", err)
	}
	return func() {
		close(quit)
		<-done
	}, nil
}
