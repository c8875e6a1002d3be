package validate

import (
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestValidateUpdateUnchangedDoesNotAllocate(t *testing.T) {
	p, err := For[*instance]()
	require.NoError(t, err)
	old, new := newInstance(), newInstance()
	require.Empty(t, p.ValidateUpdate(old, new))
	require.NotEmpty(t, p.Rules())

	assert.Zero(t, testing.AllocsPerRun(100, func() {
		if errs := p.ValidateUpdate(old, new); errs != nil {
			t.Fatal(errs)
		}
	}), "Policy.ValidateUpdate")
	assert.Zero(t, testing.AllocsPerRun(100, func() {
		if errs := ValidateUpdate(old, new); errs != nil {
			t.Fatal(errs)
		}
	}), "ValidateUpdate[T]")
	assert.Zero(t, testing.AllocsPerRun(100, func() {
		if _, err := For[*instance](); err != nil {
			t.Fatal(err)
		}
	}), "For[T] once compiled")

	s1, s2 := fullShapes(), fullShapes()
	ps, err := For[*shapes]()
	require.NoError(t, err)
	require.Empty(t, ps.ValidateUpdate(s1, s2))
	assert.Zero(t, testing.AllocsPerRun(100, func() {
		if errs := ps.ValidateUpdate(s1, s2); errs != nil {
			t.Fatal(errs)
		}
	}), "every shape")
}

func TestValidateCreateCleanDoesNotAllocate(t *testing.T) {
	obj := newInstance()
	obj.Status = instanceStatus{}
	obj.Spec.Items[0].Token, obj.Spec.Items[2].Token = "", ""
	obj.Spec.Placement.Assigned = ""
	require.Empty(t, ValidateCreate(obj))
	assert.Zero(t, testing.AllocsPerRun(100, func() {
		if errs := ValidateCreate(obj); errs != nil {
			t.Fatal(errs)
		}
	}))
}

func TestValidateConcurrently(t *testing.T) {
	p, err := For[*instance]()
	require.NoError(t, err)
	old := newInstance()
	changed := newInstance()
	changed.Spec.Volumes["data"] = volume{Size: 99}
	changed.Spec.Items[1].ID = "x"
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 50 {
				assert.Empty(t, p.ValidateUpdate(old, newInstance()))
				assert.Equal(t, []string{"spec.items[1].id changed", "spec.volumes[data].size changed", "spec.volumes[data].class unset"},
					describe(p.ValidateUpdate(old, changed)))
			}
		})
	}
	wg.Wait()
}

func BenchmarkValidateUpdateUnchanged(b *testing.B) {
	p, err := For[*instance]()
	require.NoError(b, err)
	old, new := newInstance(), newInstance()
	b.ReportAllocs()
	for b.Loop() {
		if errs := p.ValidateUpdate(old, new); errs != nil {
			b.Fatal(errs)
		}
	}
}

func BenchmarkValidateUpdateChanged(b *testing.B) {
	p, err := For[*instance]()
	require.NoError(b, err)
	old, new := newInstance(), newInstance()
	new.Spec.ServiceName = "mysql"
	new.Spec.Items[2].ID = "other"
	new.Spec.Labels["app"] = "web"
	new.Status.ObservedGeneration = 5
	b.ReportAllocs()
	for b.Loop() {
		if errs := p.ValidateUpdate(old, new); len(errs) != 4 {
			b.Fatal(errs)
		}
	}
}

func BenchmarkValidateUpdateParametersRespelled(b *testing.B) {
	p, err := For[*instance]()
	require.NoError(b, err)
	old, new := newInstance(), newInstance()
	new.Spec.Secret.Raw = []byte(`{ "key": "value" }`)
	b.ReportAllocs()
	for b.Loop() {
		if errs := p.ValidateUpdate(old, new); errs != nil {
			b.Fatal(errs)
		}
	}
}

func BenchmarkValidateCreate(b *testing.B) {
	p, err := For[*instance]()
	require.NoError(b, err)
	obj := newInstance()
	obj.Status = instanceStatus{}
	obj.Spec.Items[0].Token, obj.Spec.Items[2].Token = "", ""
	obj.Spec.Placement.Assigned = ""
	b.ReportAllocs()
	for b.Loop() {
		if errs := p.ValidateCreate(obj); errs != nil {
			b.Fatal(errs)
		}
	}
}

func BenchmarkCompileCached(b *testing.B) {
	_, err := For[*instance]()
	require.NoError(b, err)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := For[*instance](); err != nil {
			b.Fatal(err)
		}
	}
}
