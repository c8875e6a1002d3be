package bundle

import "strings"

// Action names a bundle action; the values are the OSB operations.
type Action string

// The actions a bundle can carry out.
const (
	Provision   Action = "provision"
	Update      Action = "update"
	Deprovision Action = "deprovision"
	Bind        Action = "bind"
	Unbind      Action = "unbind"
)

// Actions lists every action.
var Actions = []Action{Provision, Update, Deprovision, Bind, Unbind}

// Known reports whether a is one of Actions.
func (a Action) Known() bool {
	for _, k := range Actions {
		if a == k {
			return true
		}
	}
	return false
}

// BuiltinPrefix marks a program that the broker carries out itself.
const BuiltinPrefix = "builtin:"

// Built-in programs.
const (
	// Noop succeeds at once, with no output.
	Noop = BuiltinPrefix + "noop"
	// Echo succeeds at once; a bind returns credentials that echo the
	// binding (instance id, binding id, bind parameters).
	Echo = BuiltinPrefix + "echo"
)

// IsBuiltin reports whether program is a built-in one.
func IsBuiltin(program string) bool { return strings.HasPrefix(program, BuiltinPrefix) }

// knownBuiltin reports whether program names an existing built-in.
func knownBuiltin(program string) bool { return program == Noop || program == Echo }
