package reexec

import (
	"errors"
	"strconv"
	"strings"
)

// Limits are what a runner sets on itself before it becomes the action's
// program; zero sets nothing.
type Limits struct {
	// Memory is RLIMIT_DATA, in bytes.
	Memory int64
	// CPUSeconds is RLIMIT_CPU (SIGXCPU then, SIGKILL a second later).
	CPUSeconds int64
	// Processes is RLIMIT_NPROC.
	Processes int
}

// Encode writes the limits for RunLimitsEnv.
func (l Limits) Encode() string {
	return strconv.FormatInt(l.Memory, 10) + "," + strconv.FormatInt(l.CPUSeconds, 10) + "," + strconv.Itoa(l.Processes)
}

// DecodeLimits reads what Encode wrote.
func DecodeLimits(s string) (Limits, error) {
	f := strings.Split(s, ",")
	if len(f) != 3 {
		return Limits{}, errors.New("limits " + strconv.Quote(s) + ": want memory,cpu,processes")
	}
	var l Limits
	var err error
	if l.Memory, err = strconv.ParseInt(f[0], 10, 64); err != nil {
		return Limits{}, wrap("limits "+strconv.Quote(s), err)
	}
	if l.CPUSeconds, err = strconv.ParseInt(f[1], 10, 64); err != nil {
		return Limits{}, wrap("limits "+strconv.Quote(s), err)
	}
	if l.Processes, err = strconv.Atoi(f[2]); err != nil {
		return Limits{}, wrap("limits "+strconv.Quote(s), err)
	}
	return l, nil
}
