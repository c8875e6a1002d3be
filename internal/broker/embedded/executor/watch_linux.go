package executor

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"syscall"

	"github.com/lockstep-dev/lockstep/internal/broker/embedded/executor/reexec"
)

// Watch starts a process that ends the actions of runner (and whatever
// they started, in their process groups) the moment this process dies,
// however it dies: SIGKILLed, the broker cannot do it itself. An action's
// first process gets the kernel's parent-death signal; what it started
// does not, and would run on until a broker of this runner's host starts
// again (KillRunnerProcesses at Recover). The watch gets the
// parent-death signal from the goroutine's locked thread, which lives
// until stop. stop ends the watch, without killing anything. With users
// (Process.Users) the watch also ends every process of those users.
func Watch(runner string, users Users) (stop func(), err error) {
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
		cmd.Env = []string{reexec.WatchRunnerEnv + "=" + runner, reexec.WatchParentEnv + "=" + strconv.Itoa(os.Getpid())}
		if users.Enabled() {
			cmd.Env = append(cmd.Env, fmt.Sprintf("%s=%d-%d", reexec.WatchUsersEnv, users.First, users.First+users.Count-1))
		}
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
