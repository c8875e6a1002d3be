package main

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestIsLeftover(t *testing.T) {
	const state = "/work/repo/.state"
	tests := []struct {
		name string
		argv []string
		want bool
	}{
		{"our etcd", []string{"/cache/testbin/etcd", "--advertise-client-urls=http://127.0.0.1:1", "--data-dir=/work/repo/.state/etcd"}, true},
		{"our kube-apiserver", []string{"/cache/testbin/kube-apiserver", "--bind-address=127.0.0.1", "--cert-dir=/work/repo/.state/apiserver"}, true},
		{"our kube-controller-manager", []string{"/cache/testbin/kube-controller-manager", "--kubeconfig=/work/repo/.state/controller-manager/kubeconfig", "--leader-elect=false"}, true},
		{"a test's kube-controller-manager", []string{"/cache/testbin/kube-controller-manager", "--kubeconfig=/tmp/lockstep-e2e-1/kubeconfig"}, false},
		{"a test's etcd", []string{"/cache/testbin/etcd", "--data-dir=/tmp/k8s_test_framework_1"}, false},
		{"another checkout", []string{"/cache/testbin/etcd", "--data-dir=/work/repo/.state-other/etcd"}, false},
		{"another program naming the state", []string{"/usr/bin/vim", "--x=/work/repo/.state/kubeconfig"}, false},
		{"the state directory itself, not inside it", []string{"etcd", "--data-dir=/work/repo/.state"}, false},
		{"empty", nil, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, isLeftover(tt.argv, state))
		})
	}
}
