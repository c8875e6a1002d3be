package main

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestRunRejectsBadArguments(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"unknown sizes", []string{"-sizes", "huge"}, `-sizes "huge": must be full or tiny`},
		{"unknown benchmark", []string{"-only", "admission,nope"}, `no benchmark named "nope"; the benchmarks are micro, admission, e2e, typed, broker, tracing, journal, burst, scale, embedded`},
		{"no control plane", []string{"-only", "admission,micro", "-assets", ""}, "no control plane binaries for admission: set KUBEBUILDER_ASSETS"},
		{"unknown flag", []string{"-fast"}, "flag provided but not defined: -fast"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := run(tt.args)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tt.want)
		})
	}
}

func TestModuleRoot(t *testing.T) {
	root, err := filepath.Abs("../../..")
	require.NoError(t, err)
	got, err := moduleRoot(filepath.Join(root, "bench", "cmd", "lockstep-bench"))
	require.NoError(t, err)
	assert.Equal(t, root, got)

	_, err = moduleRoot(t.TempDir())
	assert.ErrorContains(t, err, "not inside the lockstep repository")
}
