package executor

import (
	"bytes"
	"encoding/json"
	"sort"
	"strings"

	"github.com/lockstep-dev/lockstep/internal/broker/embedded/bundle"
	"github.com/lockstep-dev/lockstep/internal/broker/embedded/executor/reexec"
)

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
const RunnerEnv = reexec.RunnerEnv

// environment is the environment of one run (see the package documentation).
func (p *Process) environment(inv Invocation, bundleDir, runDir string, f *runFiles) []string {
	path := p.Path
	if path == "" {
		path = DefaultPath
	}
	env := &envBuilder{}
	env.add("PATH", path)
	env.add("HOME", runDir)
	env.add("TMPDIR", runDir)
	env.add("LOCKSTEP_ACTION", string(inv.Action))
	env.add("LOCKSTEP_OPERATION", inv.Input.Operation)
	env.add("LOCKSTEP_INSTANCE_ID", inv.Input.InstanceID)
	env.add("LOCKSTEP_BINDING_ID", inv.Input.BindingID)
	env.add("LOCKSTEP_SERVICE_ID", inv.Input.ServiceID)
	env.add("LOCKSTEP_PLAN_ID", inv.Input.PlanID)
	env.add("LOCKSTEP_BUNDLE_DIR", bundleDir)
	env.add("LOCKSTEP_INPUT_FILE", f.inputPath)
	env.add("LOCKSTEP_OUTPUT_FILE", f.outputPath)
	env.add("LOCKSTEP_STATE_FILE", f.statePath)
	if p.RunnerID != "" {
		env.add(RunnerEnv, p.RunnerID)
	}
	for _, kv := range parameterEnv(inv.Input.Parameters) {
		env.add(kv[0], kv[1])
	}
	if inv.Action != bundle.Provision || inv.Retry {
		keys := make([]string, 0, len(inv.State))
		for k := range inv.State {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			if validName.MatchString(k) {
				env.add("state_"+k, inv.State[k])
			}
		}
	}
	return env.vars
}

// parameterEnv returns the top-level scalar parameters as param_<key>
// pairs (objects, arrays and null are only in the input document).
func parameterEnv(params json.RawMessage) [][2]string {
	var m map[string]json.RawMessage
	if len(params) == 0 || json.Unmarshal(params, &m) != nil {
		return nil
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var out [][2]string
	for _, k := range keys {
		if !validName.MatchString(k) {
			continue
		}
		raw := bytes.TrimSpace(m[k])
		if len(raw) == 0 {
			continue
		}
		switch raw[0] {
		case '"':
			var s string
			if json.Unmarshal(raw, &s) == nil {
				out = append(out, [2]string{"param_" + k, s})
			}
		case '{', '[', 'n':
		default:
			out = append(out, [2]string{"param_" + k, string(raw)})
		}
	}
	return out
}
