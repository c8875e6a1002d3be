package executor

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/lockstep-dev/lockstep/internal/broker/embedded/bundle"
	"github.com/lockstep-dev/lockstep/internal/broker/embedded/executor/reexec"
)

// Limits bound one action. Memory and CPU bound each of its processes
// (RLIMIT_DATA, RLIMIT_CPU), Processes the processes and threads of its
// user at once (RLIMIT_NPROC: only with Users, where each running action
// has a user of its own), Time its wall time (the jobs' timeout). Zero
// means no bound.
type Limits struct {
	Memory    int64
	CPU       time.Duration
	Processes int
	Time      time.Duration
}

// The broker's maxima when the administrator sets none.
const (
	DefaultMaxMemory    = 1 << 30
	DefaultMaxCPU       = 10 * time.Minute
	DefaultMaxProcesses = 128
	DefaultMaxTime      = time.Hour
)

// DefaultMax are the maxima of a broker whose administrator sets none.
var DefaultMax = Limits{Memory: DefaultMaxMemory, CPU: DefaultMaxCPU, Processes: DefaultMaxProcesses, Time: DefaultMaxTime}

// Check refuses a manifest that asks for more than the maximum m, naming
// every limit it exceeds and the setting that raises it.
func (m Limits) Check(man *bundle.Manifest) error {
	var errs []error
	over := func(field, asked, max, setting string) {
		errs = append(errs, fmt.Errorf("%s %s is more than this broker allows (%s, its %s setting)", field, asked, max, setting))
	}
	if t := time.Duration(man.Timeout); m.Time > 0 && t > m.Time {
		over("timeout", t.String(), m.Time.String(), "ACTION_MAX_TIME")
	}
	if l := man.Limits; l != nil {
		if b := l.MemoryBytes(); m.Memory > 0 && b > m.Memory {
			over("limits.memory", l.Memory.String(), formatBytes(m.Memory), "ACTION_MAX_MEMORY")
		}
		if c := time.Duration(l.CPU); m.CPU > 0 && c > m.CPU {
			over("limits.cpu", c.String(), m.CPU.String(), "ACTION_MAX_CPU")
		}
		if m.Processes > 0 && l.Processes > m.Processes {
			over("limits.processes", strconv.Itoa(l.Processes), strconv.Itoa(m.Processes), "ACTION_MAX_PROCESSES")
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("bundle %q asks for more than the broker's maximum: %w", man.Name, errors.Join(errs...))
	}
	return nil
}

// For returns the limits an action of man runs with: what the manifest
// asks for, else the maximum, and never more than the maximum (a spec the
// broker keeps from before the maximum was lowered runs within the new
// one).
func (m Limits) For(man *bundle.Manifest) Limits {
	out := m
	l := man.Limits
	if l == nil {
		return out
	}
	lower := func(max, asked int64) int64 {
		if asked > 0 && (max <= 0 || asked < max) {
			return asked
		}
		return max
	}
	out.Memory = lower(m.Memory, l.MemoryBytes())
	out.CPU = time.Duration(lower(int64(m.CPU), int64(l.CPU)))
	out.Processes = int(lower(int64(m.Processes), int64(l.Processes)))
	return out
}

// String describes the limits for a person ("1Gi of memory and 10m0s of
// CPU time per process, 128 processes").
func (m Limits) String() string {
	var per, parts []string
	if m.Memory > 0 {
		per = append(per, formatBytes(m.Memory)+" of memory")
	}
	if m.CPU > 0 {
		per = append(per, cpuSeconds(m.CPU).String()+" of CPU time")
	}
	if len(per) > 0 {
		parts = append(parts, strings.Join(per, " and ")+" per process")
	}
	if m.Processes > 0 {
		parts = append(parts, strconv.Itoa(m.Processes)+" processes")
	}
	if len(parts) == 0 {
		return "no limits"
	}
	return strings.Join(parts, ", ")
}

// cpuSeconds is d rounded up to whole seconds, the unit of RLIMIT_CPU.
func cpuSeconds(d time.Duration) time.Duration {
	return (d + time.Second - 1).Truncate(time.Second)
}

func formatBytes(n int64) string {
	return resource.NewQuantity(n, resource.BinarySI).String()
}

// runner is what the runner sets for these limits.
func (m Limits) runner() reexec.Limits {
	return reexec.Limits{Memory: m.Memory, CPUSeconds: int64(cpuSeconds(m.CPU) / time.Second), Processes: m.Processes}
}

// Users are the users actions run as: First, First+1, ... First+Count-1,
// each with the group of the same id. Each running action has one to
// itself, so that no action can read another's files, signal its
// processes or count against its process limit.
type Users struct {
	First int
	Count int
}

// Enabled reports whether actions run as users of their own.
func (u Users) Enabled() bool { return u.Count > 0 }

func (u Users) String() string {
	if u.Count == 1 {
		return strconv.Itoa(u.First)
	}
	return fmt.Sprintf("%d-%d", u.First, u.First+u.Count-1)
}

// ParseUsers reads "first-last" or "id"; empty is no users (actions run as
// the broker's own user).
func ParseUsers(s string) (Users, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return Users{}, nil
	}
	lo, hi, isRange := strings.Cut(s, "-")
	first, err := strconv.Atoi(strings.TrimSpace(lo))
	last := first
	if err == nil && isRange {
		last, err = strconv.Atoi(strings.TrimSpace(hi))
	}
	switch {
	case err != nil:
		return Users{}, fmt.Errorf("action users %q: want first-last, e.g. 50000-50063", s)
	case first <= 0 || last < first:
		return Users{}, fmt.Errorf("action users %q: want first-last with 0 < first <= last (user 0 is root)", s)
	case last > 1<<31-2:
		return Users{}, fmt.Errorf("action users %q: ids stop at %d", s, 1<<31-2)
	}
	return Users{First: first, Count: last - first + 1}, nil
}
