package reexec

import "strings"

// say writes parts and a newline to f. This package does without package
// fmt, which sets itself up late (after reflect), and with it every
// package of the program that comes first in initialization order.
func say(f interface{ WriteString(string) (int, error) }, parts ...string) {
	_, _ = f.WriteString(strings.Join(parts, "") + "\n")
}

// wrap is fmt.Errorf("%s: %w", msg, err) without package fmt.
func wrap(msg string, err error) error { return &wrapped{msg: msg, err: err} }

type wrapped struct {
	msg string
	err error
}

func (w *wrapped) Error() string { return w.msg + ": " + w.err.Error() }
func (w *wrapped) Unwrap() error { return w.err }
