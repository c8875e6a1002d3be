package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"strings"
)

// Ports are the loopback ports of every server devenv starts. They are
// remembered in the state directory so that URLs stay the same across
// restarts; a remembered port that is taken, or that lies in the kernel's
// ephemeral range, is replaced.
type Ports struct {
	APIServer int `json:"apiserver"`
	Etcd      int `json:"etcd"`
	Webhook   int `json:"webhook"`
	Broker    int `json:"broker"`
	Metrics   int `json:"metrics"`
	Health    int `json:"health"`
}

// ports reads the remembered ports, replaces missing, taken or ephemeral
// ones with free ports below the ephemeral range, and remembers the result.
//
// A port of the ephemeral range is free when devenv looks, but the kernel
// hands it out as the local port of any outgoing connection: kube-apiserver
// dialling etcd while it starts can take the webhook's port before lockstep
// listens on it. Below that range only a listener can take a port.
func (s *state) ports() (Ports, error) {
	var p Ports
	raw, err := os.ReadFile(s.portsFile())
	switch {
	case err == nil:
		if err := json.Unmarshal(raw, &p); err != nil {
			return p, fmt.Errorf("reading %s: %w (delete it to choose new ports)", s.portsFile(), err)
		}
	case !errors.Is(err, os.ErrNotExist):
		return p, fmt.Errorf("reading %s: %w", s.portsFile(), err)
	}
	pick := portPicker{low: listenLow, high: ephemeralLow() - 1}
	taken := map[int]bool{}
	for _, port := range []*int{&p.APIServer, &p.Etcd, &p.Webhook, &p.Broker, &p.Metrics, &p.Health} {
		if *port < pick.low || *port > pick.high || taken[*port] || !free(*port) {
			if *port, err = pick.free(taken); err != nil {
				return p, err
			}
		}
		taken[*port] = true
	}
	raw, err = json.MarshalIndent(p, "", "  ")
	if err != nil {
		return p, fmt.Errorf("encoding the ports: %w", err)
	}
	if err := os.WriteFile(s.portsFile(), append(raw, '\n'), 0o644); err != nil {
		return p, fmt.Errorf("remembering the ports in %s: %w", s.portsFile(), err)
	}
	return p, nil
}

// listenLow is the lowest port devenv picks: above the ports that well-known
// services and most development servers listen on.
const listenLow = 20000

// ephemeralLow is the first port of the range the kernel picks local ports
// of outgoing connections from: Linux's ip_local_port_range where it can be
// read, else the IANA range's start, which macOS uses.
func ephemeralLow() int {
	const iana = 49152
	raw, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return iana
	}
	fields := strings.Fields(string(raw))
	if len(fields) != 2 {
		return iana
	}
	low, err := strconv.Atoi(fields[0])
	if err != nil || low <= listenLow+100 {
		// A range that leaves no room below it: pick inside the range and
		// live with the rare collision.
		return 65536
	}
	return low
}

// portPicker picks free loopback ports in [low, high].
type portPicker struct{ low, high int }

// free returns a port of the range that can be listened on and is not in
// taken.
func (r portPicker) free(taken map[int]bool) (int, error) {
	for range 100 {
		port := r.low + rand.IntN(r.high-r.low+1)
		if !taken[port] && free(port) {
			return port, nil
		}
	}
	return 0, fmt.Errorf("finding a free port on 127.0.0.1 between %d and %d: 100 tries found none; stop some of what listens there", r.low, r.high)
}

// free reports whether port can be listened on at 127.0.0.1.
func free(port int) bool {
	ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	if err != nil {
		return false
	}
	_ = ln.Close()
	return true
}
