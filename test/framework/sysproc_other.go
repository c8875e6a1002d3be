//go:build !linux

package framework

import "syscall"

// dieWithParent is Linux-only; elsewhere Stop is the only way children end.
func dieWithParent() *syscall.SysProcAttr { return nil }
