package bboltstore_test

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lockstep-dev/lockstep/internal/broker/embedded/store"
	"github.com/lockstep-dev/lockstep/internal/broker/embedded/store/bboltstore"
	"github.com/lockstep-dev/lockstep/internal/broker/embedded/store/storetest"
)

func TestSuite(t *testing.T) {
	storetest.Run(t, storetest.Backend{
		NewLocation: func(t *testing.T) string { return filepath.Join(t.TempDir(), "broker.db") },
		Open: func(t *testing.T, path string) store.Store {
			s, err := bboltstore.Open(path, bboltstore.Options{})
			require.NoError(t, err)
			return s
		},
	})
}

func TestOpenErrors(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sub", "broker.db")
	s, err := bboltstore.Open(path, bboltstore.Options{})
	require.NoError(t, err)
	defer func() { _ = s.Close() }()
	assert.True(t, s.Exclusive())

	tests := []struct {
		name string
		path string
		want string
	}{
		{"no path", "", "no file path given"},
		{"locked by another user", path, "locked by another process"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := bboltstore.Open(tt.path, bboltstore.Options{LockTimeout: 50 * time.Millisecond})
			require.Error(t, err)
			assert.Contains(t, err.Error(), tt.want)
		})
	}
}
