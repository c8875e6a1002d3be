package main

import (
	"path/filepath"
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
