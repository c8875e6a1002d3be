package env

import "syscall"

// dieWithParent makes a child process receive SIGKILL when the benchmark
// process dies, so that no webhook server outlives an interrupted run.
func dieWithParent() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
