package framework

import (
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"strings"
)

// FreePort returns a loopback port that nothing listens on, below the
// kernel's ephemeral range.
//
// A port the kernel offers for 127.0.0.1:0 lies in the ephemeral range,
// which is also where it takes the local port of every outgoing
// connection: between the check and the listen, kube-apiserver dialling
// etcd or a webhook can take it, and the server that was to listen on it
// fails with "address already in use". Below that range only a listener
// can take a port.
func FreePort() (int, error) {
	return FreePortExcept(nil)
}

// FreePortExcept is FreePort for a port not in taken (ports chosen for
// servers that do not listen yet).
func FreePortExcept(taken map[int]bool) (int, error) {
	low, high := ListenRange()
	for range 100 {
		port := low + rand.IntN(high-low+1)
		if !taken[port] && PortFree(port) {
			return port, nil
		}
	}
	return 0, fmt.Errorf("finding a free port on 127.0.0.1 between %d and %d: 100 tries found none; stop some of what listens there", low, high)
}

// PortFree reports whether port can be listened on at 127.0.0.1.
func PortFree(port int) bool {
	ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	if err != nil {
		return false
	}
	_ = ln.Close()
	return true
}

// listenLow is the lowest port FreePort picks: above the ports well-known
// services and most development servers listen on.
const listenLow = 20000

// ListenRange is the range FreePort picks from: from listenLow to just
// below the ephemeral range (Linux's ip_local_port_range where it can be
// read, else the IANA range that macOS uses). When the ephemeral range
// leaves no room below it, the range runs to 65535, and a rare collision
// with an outgoing connection is possible again.
func ListenRange() (low, high int) {
	const iana = 49152
	ephemeral := iana
	if raw, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range"); err == nil {
		if fields := strings.Fields(string(raw)); len(fields) == 2 {
			if n, err := strconv.Atoi(fields[0]); err == nil {
				ephemeral = n
			}
		}
	}
	if ephemeral <= listenLow+100 {
		return listenLow, 65535
	}
	return listenLow, ephemeral - 1
}
