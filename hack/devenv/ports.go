package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"

	"github.com/lockstep-dev/lockstep/test/framework"
)

// Ports are the loopback ports of every server devenv starts. They are
// remembered in the state directory so that URLs stay the same across
// restarts; a remembered port that is taken, or that lies outside the
// range framework.FreePort picks from (in the kernel's ephemeral range,
// where an outgoing connection can take it before the server listens), is
// replaced.
type Ports struct {
	APIServer int `json:"apiserver"`
	Etcd      int `json:"etcd"`
	Webhook   int `json:"webhook"`
	Broker    int `json:"broker"`
	Metrics   int `json:"metrics"`
	Health    int `json:"health"`
}

// ports reads the remembered ports, replaces missing, taken or ephemeral
// ones with free ports, and remembers the result.
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
	low, high := framework.ListenRange()
	taken := map[int]bool{}
	for _, port := range []*int{&p.APIServer, &p.Etcd, &p.Webhook, &p.Broker, &p.Metrics, &p.Health} {
		if *port < low || *port > high || taken[*port] || !framework.PortFree(*port) {
			if *port, err = framework.FreePortExcept(taken); err != nil {
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
