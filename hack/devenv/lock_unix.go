//go:build linux || darwin || freebsd || netbsd || openbsd

package main

import (
	"errors"
	"os"
	"syscall"
)

// errLocked means another process holds the lock.
var errLocked = errors.New("locked by another process")

func tryLock(f *os.File) error {
	err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
	if errors.Is(err, syscall.EWOULDBLOCK) {
		return errLocked
	}
	return err
}

func unlock(f *os.File) error { return syscall.Flock(int(f.Fd()), syscall.LOCK_UN) }
