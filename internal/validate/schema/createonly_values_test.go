package schema

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/runtime"
)

func TestCreateOnlyValues(t *testing.T) {
	s, err := Compile(
		json.RawMessage(`{"type":"object","properties":{"size":{"type":"integer"},"region":{"type":"string"},"net":{"type":"object","properties":{"cidr":{"type":"string"},"mtu":{"type":"integer"}}}}}`),
		json.RawMessage(`{"type":"object","properties":{"size":{"type":"integer"},"net":{"type":"object","properties":{"mtu":{"type":"integer"}}}}}`),
		nil)
	require.NoError(t, err)
	tests := []struct{ params, want string }{
		{`{"size":1,"region":"eu","net":{"cidr":"10.0.0.0/8","mtu":1500}}`, `{"net.cidr":"10.0.0.0/8","region":"eu"}`},
		{`{"size":1}`, `{}`},
		{``, `{}`},
	}
	for _, tt := range tests {
		var p *runtime.RawExtension
		if tt.params != "" {
			p = &runtime.RawExtension{Raw: []byte(tt.params)}
		}
		got, err := s.CreateOnlyValues(p)
		require.NoError(t, err)
		assert.Equal(t, tt.want, string(got), tt.params)
	}
	_, err = s.CreateOnlyValues(&runtime.RawExtension{Raw: []byte(`[1]`)})
	assert.Error(t, err)
}
