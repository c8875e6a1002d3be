package main

import (
	"net"
	"os"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lockstep-dev/lockstep/test/framework"
)

func allPorts(p Ports) []int {
	return []int{p.APIServer, p.Etcd, p.Webhook, p.Broker, p.Metrics, p.Health}
}

func TestPortsAreRememberedAcrossRuns(t *testing.T) {
	s := newState(t.TempDir())
	first, err := s.ports()
	require.NoError(t, err)
	seen := map[int]bool{}
	for _, p := range allPorts(first) {
		assert.Positive(t, p)
		assert.False(t, seen[p], "ports must be distinct: %v", first)
		seen[p] = true
	}
	second, err := s.ports()
	require.NoError(t, err)
	assert.Equal(t, first, second)
}

func TestATakenRememberedPortIsReplaced(t *testing.T) {
	s := newState(t.TempDir())
	first, err := s.ports()
	require.NoError(t, err)
	ln, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(first.Webhook))
	require.NoError(t, err)
	defer func() { _ = ln.Close() }()

	second, err := s.ports()
	require.NoError(t, err)
	assert.NotEqual(t, first.Webhook, second.Webhook)
	assert.Equal(t, first.APIServer, second.APIServer, "free ports stay")
}

func TestUnreadablePortsFileIsReported(t *testing.T) {
	s := newState(t.TempDir())
	require.NoError(t, os.WriteFile(s.portsFile(), []byte("{not json"), 0o644))
	_, err := s.ports()
	require.Error(t, err)
	assert.Contains(t, err.Error(), "delete it to choose new ports")
}

// The kernel gives ports of its ephemeral range to outgoing connections, so
// a port chosen there can be taken between the check and the listen: every
// chosen port lies in framework.ListenRange, below that range, and a
// remembered one outside it (state of an earlier version) is replaced.
func TestPortsAreChosenBelowTheEphemeralRange(t *testing.T) {
	s := newState(t.TempDir())
	low, high := framework.ListenRange()
	require.NoError(t, os.WriteFile(s.portsFile(), []byte(`{"webhook": `+strconv.Itoa(high+7)+`}`), 0o644))
	p, err := s.ports()
	require.NoError(t, err)
	for _, port := range allPorts(p) {
		assert.LessOrEqual(t, port, high, "ports: %v", p)
		assert.GreaterOrEqual(t, port, low, "ports: %v", p)
	}
	assert.NotEqual(t, high+7, p.Webhook)
}
