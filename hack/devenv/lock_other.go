//go:build !(linux || darwin || freebsd || netbsd || openbsd)

package main

import (
	"errors"
	"os"
)

var errLocked = errors.New("locked by another process")

// tryLock: make run needs flock(2); hack/testbin.sh and the control plane
// binaries it builds need a Unix system anyway.
func tryLock(*os.File) error {
	return errors.New("make run supports Linux and macOS only (it needs flock)")
}

func unlock(*os.File) error { return nil }
