package credentials

import (
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

// The bounds on what a binding's secret transforms may cost. Templates and
// JSON paths are user input that lockstep evaluates during admission, in
// the webhook every namespace shares: each has a bound on its size, on
// what it makes, on how long it loops and on how long it runs, and one
// over the bound is refused with a message that names the bound. What can
// be known from the spec alone is checked before the broker is called
// (CheckTransforms); the rest while the Secret is made, which then fails
// as a transform that does not fit the credentials.
const (
	// MaxTransforms is how many secret transforms a binding may have.
	MaxTransforms = 32
	// MaxTemplateBytes is the size of one template.
	MaxTemplateBytes = 4 << 10
	// MaxJSONPathBytes is the size of one JSON path.
	MaxJSONPathBytes = 512
	// MaxValueBytes is the size of the value one template or JSON path
	// makes.
	MaxValueBytes = 256 << 10
	// MaxSecretBytes is what a Secret may hold in all (the API server's
	// own bound): the keys a template reads, and the Secret made.
	MaxSecretBytes = 1 << 20
	// MaxSteps is the work of a binding's templates and JSON paths
	// together, in steps. A template takes about the length of its text
	// in steps, plus the length of a range's body for every pass through
	// the range; a JSON path takes its length, and one that visits many
	// values (.., *, a filter or a slice) steps for each value and each
	// byte of a string the broker's credentials hold (.. and * visit
	// every one). A step costs some tens of nanoseconds of CPU.
	MaxSteps = 100_000
	// MaxWorkBytes is what a binding's templates' functions may make
	// (print, printf, println, html, js, urlquery), compare (eq, ne, lt,
	// le, gt, ge) or look up (index) in all, in bytes.
	MaxWorkBytes = 2 << 20
	// MaxTransformTime is how long a binding's templates and JSON paths may
	// run in all, in CPU time (which other work on the machine does not
	// stretch): the last bound, for what the others do not foresee.
	MaxTransformTime = 20 * time.Millisecond
	// MaxRecursiveDescents is how many ".." a JSON path may have.
	MaxRecursiveDescents = 1
)

// The bounds, named in refusals.
const (
	BoundSteps  = "steps"
	BoundOutput = "output"
	BoundWork   = "work"
	BoundTime   = "time"
	BoundSecret = "secret size"
)

// BoundError says that a transform went over one of the bounds above. Its
// message names the bound and never a value.
type BoundError struct {
	// Bound is which bound (BoundSteps, ...).
	Bound string
	// Detail says what went over it.
	Detail string
}

func (e *BoundError) Error() string { return e.Detail }

// boundInvalid is the field error of a value over a bound; it keeps the
// bound for the callers that ask which (errors.As).
func boundInvalid(p *field.Path, value any, bound *BoundError) error {
	return &fieldBoundError{field: field.Invalid(p, value, bound.Error()), bound: bound}
}

type fieldBoundError struct {
	field *field.Error
	bound *BoundError
}

func (e *fieldBoundError) Error() string   { return e.field.Error() }
func (e *fieldBoundError) Unwrap() []error { return []error{e.field, e.bound} }

// stepsExceeded is the refusal of transforms that may take steps steps
// (known before the broker is called), or, with steps 0, of transforms
// that took more than MaxSteps while the Secret was made.
func stepsExceeded(steps int, what string) *BoundError {
	took := fmt.Sprintf("%s takes more than the %d steps", what, MaxSteps)
	if steps > 0 {
		took = fmt.Sprintf("%s may take %s steps, more than the %d", what, atLeast(steps), MaxSteps)
	}
	return &BoundError{Bound: BoundSteps, Detail: took + " a binding's templates and JSON paths may take together " +
		"(a template takes the length of its text, and the length of a range's body for every pass through the range; " +
		"a JSON path with .., *, a filter or a slice takes a step for each value and byte of the credentials); make it loop less"}
}

func outputExceeded() *BoundError {
	return &BoundError{Bound: BoundOutput, Detail: fmt.Sprintf(
		"it makes a value of more than %d bytes, the most a template or JSON path may make", MaxValueBytes)}
}

func workExceeded(bytes int) *BoundError {
	return &BoundError{Bound: BoundWork, Detail: fmt.Sprintf(
		"its functions would make, compare or look up %s bytes, more than the %d bytes a binding's templates may work on together; "+
			"make it print, escape or compare less", atLeast(bytes), MaxWorkBytes)}
}

func timeExceeded() *BoundError {
	return &BoundError{Bound: BoundTime, Detail: fmt.Sprintf(
		"it runs longer than %s, the time a binding's templates may run together; make it do less", MaxTransformTime)}
}

func secretExceeded(bytes int) *BoundError {
	return &BoundError{Bound: BoundSecret, Detail: fmt.Sprintf(
		"the Secret holds %d bytes at this point, more than a Secret may hold (%d bytes); remove keys or copy less", bytes, MaxSecretBytes)}
}

// atLeast writes a count that saturated at a bound as "more than".
func atLeast(n int) string {
	if n >= saturated {
		return fmt.Sprintf("more than %d", saturated-1)
	}
	return fmt.Sprint(n)
}

// saturated is where counts stop growing: far beyond every bound, far
// below an overflow.
const saturated = 1 << 40

// add adds counts, saturating.
func add(a, b int) int {
	if a >= saturated-b {
		return saturated
	}
	return a + b
}

// mul multiplies counts, saturating.
func mul(a, b int) int {
	if a == 0 || b == 0 {
		return 0
	}
	if a >= saturated/b {
		return saturated
	}
	return a * b
}

// dataBytes is what a Secret's data holds, as the API server counts it:
// the values.
func dataBytes(data map[string][]byte) int {
	n := 0
	for _, v := range data {
		n += len(v)
	}
	return n
}
