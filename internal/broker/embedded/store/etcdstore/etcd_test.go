package etcdstore_test

import (
	"context"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/lockstep-dev/lockstep/internal/broker/embedded/store"
	"github.com/lockstep-dev/lockstep/internal/broker/embedded/store/etcdstore"
	"github.com/lockstep-dev/lockstep/internal/broker/embedded/store/etcdstore/etcdtest"
	"github.com/lockstep-dev/lockstep/internal/broker/embedded/store/storetest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestSuite(t *testing.T) {
	etcd := etcdtest.Start(t)
	storetest.Run(t, storetest.Backend{
		// Each location is a fresh key prefix in the one etcd.
		NewLocation: func(t *testing.T) string { return "/lockstep-test/" + uuid.NewString() + "/" },
		Open: func(t *testing.T, prefix string) store.Store {
			s, err := etcdstore.Open(context.Background(), etcdstore.Config{Endpoints: []string{etcd.Endpoint}, Prefix: prefix})
			require.NoError(t, err)
			return s
		},
	})
}

func TestOpenErrors(t *testing.T) {
	tests := []struct {
		name string
		cfg  etcdstore.Config
		want string
	}{
		{"no endpoints", etcdstore.Config{}, "no endpoints given"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := etcdstore.Open(context.Background(), tt.cfg)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tt.want)
		})
	}
}

func TestNotExclusive(t *testing.T) {
	etcd := etcdtest.Start(t)
	s := etcdstore.New(etcd.Client(t), "/x/")
	assert.False(t, s.Exclusive(), "etcd is shared between replicas")
}
