package framework

import (
	"net"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestFreePortIsBelowTheEphemeralRange: a free port lies in ListenRange,
// which ends below the kernel's ephemeral range, and is not one of taken
// or one something listens on.
func TestFreePortIsBelowTheEphemeralRange(t *testing.T) {
	low, high := ListenRange()
	require.Less(t, low, high)
	taken := map[int]bool{}
	for range 20 {
		port, err := FreePortExcept(taken)
		require.NoError(t, err)
		assert.GreaterOrEqual(t, port, low)
		assert.LessOrEqual(t, port, high)
		assert.False(t, taken[port], "a taken port was offered again")
		taken[port] = true
	}

	port, err := FreePort()
	require.NoError(t, err)
	ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	require.NoError(t, err)
	defer func() { _ = ln.Close() }()
	assert.False(t, PortFree(port), "a port something listens on is not free")
}
