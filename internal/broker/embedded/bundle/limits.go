package bundle

import (
	"errors"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
)

// Limits are what a bundle asks for each of its actions. A limit left out
// is the broker's maximum; a bundle that asks for more than the maximum is
// refused when its registry is read.
type Limits struct {
	// Memory bounds the private memory (heap, anonymous mappings) of each
	// process of an action, as a quantity ("256Mi").
	Memory *resource.Quantity `json:"memory,omitempty"`
	// CPU bounds the CPU time of each process of an action ("30s"),
	// rounded up to whole seconds.
	CPU Duration `json:"cpu,omitempty"`
	// Processes bounds the processes (threads count too) an action runs
	// at once.
	Processes int `json:"processes,omitempty"`
}

// MemoryBytes is Memory in bytes, zero when it is not set.
func (l *Limits) MemoryBytes() int64 {
	if l == nil || l.Memory == nil {
		return 0
	}
	return l.Memory.Value()
}

// validate reports what is wrong with the limits themselves (not against
// any maximum: that is the broker's).
func (l *Limits) validate() []error {
	if l == nil {
		return nil
	}
	var errs []error
	if l.Memory != nil && l.Memory.Sign() <= 0 {
		errs = append(errs, fmt.Errorf("limits.memory %s must be more than 0", l.Memory))
	}
	if l.CPU < 0 {
		errs = append(errs, fmt.Errorf("limits.cpu %s must not be negative", time.Duration(l.CPU)))
	}
	if l.Processes < 0 {
		errs = append(errs, errors.New("limits.processes must not be negative"))
	}
	return errs
}
