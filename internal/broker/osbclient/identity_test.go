package osbclient_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lockstep-dev/lockstep/internal/broker/osbclient"
)

func TestParseIdentityReadsWhatHeaderValueWrites(t *testing.T) {
	id := osbclient.Identity{Username: "alice", UID: "u-1", Groups: []string{"dev"}, Extra: map[string][]string{"team": {"a"}}}
	h, err := id.HeaderValue()
	require.NoError(t, err)
	got, err := osbclient.ParseIdentity(h)
	require.NoError(t, err)
	assert.Equal(t, id, got)
}

func TestParseIdentityRefuses(t *testing.T) {
	for _, h := range []string{"", "kubernetes", "cloudfoundry eyJ9", "kubernetes !!!", "kubernetes bm90IGpzb24="} {
		_, err := osbclient.ParseIdentity(h)
		assert.Error(t, err, "%q", h)
	}
}
