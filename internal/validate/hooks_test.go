package validate

import (
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

type hooked struct {
	Name string
	Size int
}

func TestHooksRunInOrderAndAggregate(t *testing.T) {
	var h Hooks[*hooked]
	var calls []string
	require.NoError(t, h.Register("name", func(old, new *hooked) (field.ErrorList, []string) {
		calls = append(calls, "name")
		if new.Name == "" {
			return field.ErrorList{field.Required(field.NewPath("name"), "name it")}, []string{"names are forever"}
		}
		return nil, nil
	}))
	require.NoError(t, h.Register("size", func(old, new *hooked) (field.ErrorList, []string) {
		calls = append(calls, "size")
		var errs field.ErrorList
		if new.Size < 0 {
			errs = append(errs, field.Invalid(field.NewPath("size"), new.Size, "must not be negative"))
		}
		if old != nil && new.Size < old.Size {
			errs = append(errs, field.Forbidden(field.NewPath("size"), "cannot shrink"))
		}
		return errs, []string{"size checked"}
	}))
	require.NoError(t, h.Register("quiet", func(old, new *hooked) (field.ErrorList, []string) {
		calls = append(calls, "quiet")
		return field.ErrorList{nil}, nil // a nil entry is dropped
	}))

	errs, warnings := h.Run(&hooked{Size: 1}, &hooked{Size: -1})
	assert.Equal(t, []string{"name", "size", "quiet"}, calls)
	got := []string{}
	for _, e := range errs {
		got = append(got, e.Error())
	}
	assert.Equal(t, []string{
		"name: Required value: name it",
		"size: Invalid value: -1: must not be negative",
		"size: Forbidden: cannot shrink",
	}, got)
	assert.Equal(t, []string{"names are forever", "size checked"}, warnings)

	calls = nil
	errs, warnings = h.Run(nil, &hooked{Name: "a"})
	assert.Equal(t, []string{"name", "size", "quiet"}, calls, "old is the zero value on create")
	assert.Empty(t, errs)
	assert.Equal(t, []string{"size checked"}, warnings)
}

func TestHooksEmpty(t *testing.T) {
	var h Hooks[hooked]
	errs, warnings := h.Run(hooked{}, hooked{})
	assert.Nil(t, errs)
	assert.Nil(t, warnings)

	var none *Hooks[hooked]
	errs, warnings = none.Run(hooked{}, hooked{})
	assert.Nil(t, errs)
	assert.Nil(t, warnings)
}

func TestHooksRegisterRejects(t *testing.T) {
	var h Hooks[hooked]
	ok := func(hooked, hooked) (field.ErrorList, []string) { return nil, nil }
	require.NoError(t, h.Register("a", ok))
	assert.ErrorContains(t, h.Register("", ok), "needs a name")
	assert.ErrorContains(t, h.Register("b", nil), `validation hook "b" has no function`)
	assert.ErrorContains(t, h.Register("a", ok), `a validation hook named "a" is already registered`)
}

func TestHooksRecoverPanics(t *testing.T) {
	var h Hooks[*hooked]
	ran := false
	require.NoError(t, h.Register("before", func(_, _ *hooked) (field.ErrorList, []string) {
		return field.ErrorList{field.Forbidden(field.NewPath("name"), "before")}, []string{"from before"}
	}))
	require.NoError(t, h.Register("nil-deref", func(_, new *hooked) (field.ErrorList, []string) {
		return nil, []string{new.Name} // new is nil below
	}))
	require.NoError(t, h.Register("loud", func(_, _ *hooked) (field.ErrorList, []string) {
		panic(strings.Repeat("boom ", 100))
	}))
	require.NoError(t, h.Register("after", func(_, _ *hooked) (field.ErrorList, []string) {
		ran = true
		return nil, []string{"from after"}
	}))

	errs, warnings := h.Run(nil, nil)
	assert.True(t, ran, "hooks after a panicking one still run")
	assert.Equal(t, []string{"from before", "from after"}, warnings)
	require.Len(t, errs, 3)
	assert.Equal(t, "name: Forbidden: before", errs[0].Error())
	for i, name := range []string{"nil-deref", "loud"} {
		e := errs[i+1]
		assert.Equal(t, field.ErrorTypeInternal, e.Type)
		assert.Contains(t, e.Detail, fmt.Sprintf("validation hook %q failed: it panicked (", name))
		assert.Contains(t, e.Detail, "this is a bug in the hook")
	}
	assert.Contains(t, errs[1].Detail, "nil pointer dereference")
	assert.Less(t, len(errs[2].Detail), maxShown+150, "a long panic value is cut")
}

func TestHooksConcurrentUse(t *testing.T) {
	var h Hooks[int]
	const workers, rounds = 8, 50
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for r := range rounds {
				name := fmt.Sprintf("hook-%d-%d", w, r)
				assert.NoError(t, h.Register(name, func(old, new int) (field.ErrorList, []string) {
					return nil, []string{name}
				}))
				_, warnings := h.Run(0, r)
				// Every hook this worker registered so far has run.
				seen := 0
				for _, warning := range warnings {
					if strings.HasPrefix(warning, fmt.Sprintf("hook-%d-", w)) {
						seen++
					}
				}
				assert.Equal(t, r+1, seen)
			}
		})
	}
	wg.Wait()
	_, warnings := h.Run(0, 0)
	assert.Len(t, warnings, workers*rounds)
}
