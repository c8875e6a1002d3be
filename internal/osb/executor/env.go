package executor

import "strings"

// The environment of an action carries only small values: the operating
// system bounds the size of one variable and of the whole environment, and
// a variable cannot hold a NUL byte. A value that does not fit is left out;
// everything is in the input document anyway.
const (
	// MaxEnvValue is the longest value put in an action's environment.
	MaxEnvValue = 4096
	// maxEnvTotal bounds the whole environment of an action.
	maxEnvTotal = 256 << 10
)

// envBuilder collects NAME=value pairs within those bounds.
type envBuilder struct {
	vars  []string
	total int
}

// add appends name=value when the value is small enough and holds no NUL,
// and the environment stays within its budget; it reports whether it did.
func (e *envBuilder) add(name, value string) bool {
	if len(value) > MaxEnvValue || strings.ContainsRune(value, 0) || strings.ContainsRune(name, 0) {
		return false
	}
	kv := name + "=" + value
	if e.total+len(kv)+1 > maxEnvTotal {
		return false
	}
	e.vars = append(e.vars, kv)
	e.total += len(kv) + 1
	return true
}

// RunnerEnv names the environment variable that tells which broker process
// (runner id) started an action; KillRunnerProcesses looks for it.
const RunnerEnv = "LOCKSTEP_RUNNER"
