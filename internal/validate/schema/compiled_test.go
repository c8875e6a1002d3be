package schema

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestCompiledAndCreateOnlyPaths(t *testing.T) {
	s, err := Compile([]byte(`{"type":"object","properties":{"region":{"type":"string","format":"password"},"storage":{"type":"object","properties":{"class":{"type":"string"},"size":{"type":"integer"}}}}}`),
		[]byte(`{"type":"object","properties":{"storage":{"type":"object","properties":{"size":{"type":"integer"}}}}}`), nil)
	require.NoError(t, err)
	create, update := s.Compiled()
	require.NotNil(t, create)
	require.NotNil(t, update)
	require.NotNil(t, create.Properties["region"].Format, "format password is kept")
	assert.Equal(t, "password", create.Properties["region"].Format.Name)
	assert.Equal(t, [][]string{{"region"}, {"storage", "class"}}, s.CreateOnlyPaths())

	var none *PlanSchemas
	c, u := none.Compiled()
	assert.Nil(t, c)
	assert.Nil(t, u)
	assert.Nil(t, none.CreateOnlyPaths())
}
