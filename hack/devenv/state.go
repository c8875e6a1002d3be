package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
)

// state is the layout of the state directory.
type state struct{ dir string }

func newState(dir string) *state { return &state{dir: dir} }

func (s *state) path(parts ...string) string {
	return filepath.Join(append([]string{s.dir}, parts...)...)
}

// etcdDir is etcd's data: the cluster's objects, kept across restarts.
func (s *state) etcdDir() string { return s.path("etcd") }

// apiserverDir holds kube-apiserver's certificates, new at every start.
func (s *state) apiserverDir() string { return s.path("apiserver") }

// controllerManagerDir holds kube-controller-manager's kubeconfig and
// serving certificate, new at every start.
func (s *state) controllerManagerDir() string { return s.path("controller-manager") }

// brokerDir holds the embedded broker's store and work directory.
func (s *state) brokerDir() string { return s.path("broker") }

// kubeconfig is where the kubeconfig for kubectl is written.
func (s *state) kubeconfig() string { return s.path("kubeconfig") }

func (s *state) logDir() string    { return s.path("logs") }
func (s *state) lockFile() string  { return s.path("run.lock") }
func (s *state) portsFile() string { return s.path("ports.json") }

// Ports are the loopback ports of every server devenv starts. They are
// remembered in the state directory so that URLs stay the same across
// restarts; a remembered port that is taken is replaced.
type Ports struct {
	APIServer int `json:"apiserver"`
	Etcd      int `json:"etcd"`
	Webhook   int `json:"webhook"`
	Broker    int `json:"broker"`
	Metrics   int `json:"metrics"`
	Health    int `json:"health"`
}

// ports reads the remembered ports, replaces missing or taken ones with
// free ports, and remembers the result.
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
	taken := map[int]bool{}
	for _, port := range []*int{&p.APIServer, &p.Etcd, &p.Webhook, &p.Broker, &p.Metrics, &p.Health} {
		if *port <= 0 || taken[*port] || !free(*port) {
			if *port, err = freePort(taken); err != nil {
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

// free reports whether port can be listened on at 127.0.0.1.
func free(port int) bool {
	ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	if err != nil {
		return false
	}
	_ = ln.Close()
	return true
}

// freePort asks the kernel for a free loopback port not in taken.
func freePort(taken map[int]bool) (int, error) {
	for range 20 {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return 0, fmt.Errorf("finding a free port on 127.0.0.1: %w", err)
		}
		port := ln.Addr().(*net.TCPAddr).Port
		_ = ln.Close()
		if !taken[port] {
			return port, nil
		}
	}
	return 0, errors.New("finding a free port on 127.0.0.1: the kernel kept offering taken ones")
}
