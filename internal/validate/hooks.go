package validate

import (
	"errors"
	"fmt"
	"slices"
	"sync"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Hook is an extra check for one kind of object. On create old is the zero
// value of T (nil for pointer types). It returns the violations it found and
// warnings for the user; both may be nil.
type Hook[T any] func(old, new T) (field.ErrorList, []string)

// Hooks is a registry of named hooks for one kind. The zero value is ready
// to use, and it is safe for concurrent use.
type Hooks[T any] struct {
	mu    sync.RWMutex
	hooks []namedHook[T] // replaced, never changed in place, by Register
}

type namedHook[T any] struct {
	name string
	fn   Hook[T]
}

// Register adds a hook that runs after those registered before it. The name
// identifies the hook in errors; it must be unique and non-empty.
func (h *Hooks[T]) Register(name string, fn Hook[T]) error {
	if name == "" {
		return errors.New("validate: a validation hook needs a name")
	}
	if fn == nil {
		return fmt.Errorf("validate: validation hook %q has no function", name)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, existing := range h.hooks {
		if existing.name == name {
			return fmt.Errorf("validate: a validation hook named %q is already registered", name)
		}
	}
	h.hooks = append(slices.Clip(h.hooks), namedHook[T]{name: name, fn: fn})
	return nil
}

// Run runs every hook in registration order and returns all their errors
// and warnings, in that order. A hook that panics does not stop the others:
// its panic becomes an internal error naming the hook. A nil *Hooks runs
// nothing.
func (h *Hooks[T]) Run(old, new T) (field.ErrorList, []string) {
	if h == nil {
		return nil, nil
	}
	h.mu.RLock()
	hooks := h.hooks
	h.mu.RUnlock()
	var (
		errs     field.ErrorList
		warnings []string
	)
	for _, hook := range hooks {
		e, w := hook.run(old, new)
		for _, err := range e {
			if err != nil {
				errs = append(errs, err)
			}
		}
		warnings = append(warnings, w...)
	}
	return errs, warnings
}

// run calls the hook, turning a panic into an internal error.
func (h namedHook[T]) run(old, new T) (errs field.ErrorList, warnings []string) {
	defer func() {
		if r := recover(); r != nil {
			errs = field.ErrorList{field.InternalError(nil, fmt.Errorf(
				"validation hook %q failed: it panicked (%s); this is a bug in the hook, please report it",
				h.name, truncate(fmt.Sprint(r))))}
			warnings = nil
		}
	}()
	return h.fn(old, new)
}
