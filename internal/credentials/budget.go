package credentials

import (
	"runtime"
	"time"
)

// budget is what a binding's transforms may still spend while its Secret
// is made: steps, work and time, shared by all its templates and JSON
// paths. The first bound it hits stays: whatever the template engine
// makes of the error on the way out, the refusal names that bound.
type budget struct {
	steps, work int
	// cpu reads the CPU time of the running thread: time is the CPU the
	// templates take, which other work on the machine does not change.
	cpu func() time.Duration
	// used is the CPU time of the runs that ended; start is when the
	// running one began, on the thread it is locked to.
	used, start time.Duration
	// charges counts the charges, to read the clock every clockEvery.
	charges  int
	exceeded *BoundError
}

// clockEvery is how many charges pass between readings of the clock (a
// system call); each charge is bounded, and so is their sum between two
// readings.
const clockEvery = 16

// newBudget starts a budget that reads the CPU time with cpu (threadCPU
// but in tests).
func newBudget(cpu func() time.Duration) *budget {
	return &budget{cpu: cpu}
}

// begin starts a run of a template or JSON path: the goroutine stays on
// its thread until end, so that the thread's CPU time is the run's.
func (b *budget) begin() {
	runtime.LockOSThread()
	b.start = b.cpu()
}

// end ends a run, and checks its time.
func (b *budget) end() error {
	b.used += b.cpu() - b.start
	runtime.UnlockOSThread()
	switch {
	case b.exceeded != nil:
		return b.exceeded
	case b.used > MaxTransformTime:
		return b.fail(timeExceeded())
	}
	return nil
}

// step spends n steps.
func (b *budget) step(n int) error {
	b.steps = add(b.steps, n)
	if b.steps > MaxSteps {
		return b.fail(stepsExceeded(0, "it"))
	}
	return b.clock()
}

// spend spends n bytes of work, before they are made.
func (b *budget) spend(n int) error {
	b.work = add(b.work, n)
	if b.work > MaxWorkBytes {
		return b.fail(workExceeded(b.work))
	}
	return b.clock()
}

// clock fails once a bound was hit, or, every clockEvery charges, once
// the time is up.
func (b *budget) clock() error {
	if b.exceeded != nil {
		return b.exceeded
	}
	if b.charges++; b.charges%clockEvery == 0 && b.used+b.cpu()-b.start > MaxTransformTime {
		return b.fail(timeExceeded())
	}
	return nil
}

// fail records the first bound hit and returns it.
func (b *budget) fail(e *BoundError) error {
	if b.exceeded == nil {
		b.exceeded = e
	}
	return b.exceeded
}
