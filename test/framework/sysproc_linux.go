package framework

import "syscall"

// dieWithParent makes a child process receive SIGKILL when the process
// that started it dies, so that no server outlives an interrupted run.
func dieWithParent() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
