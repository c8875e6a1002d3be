package framework

import (
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/client-go/rest"
)

func TestRootHoldsGoMod(t *testing.T) {
	root, err := Root()
	require.NoError(t, err)
	_, err = os.Stat(filepath.Join(root, "go.mod"))
	assert.NoError(t, err)
	_, err = os.Stat(filepath.Join(root, "deploy", "crds"))
	assert.NoError(t, err, "the root is lockstep's repository")
}

func TestLogBufferKeepsConcurrentWrites(t *testing.T) {
	var b LogBuffer
	var wg sync.WaitGroup
	for i := range 10 {
		wg.Go(func() { _, _ = fmt.Fprintf(&b, "line %d\n", i) })
	}
	wg.Wait()
	for i := range 10 {
		assert.Contains(t, b.String(), fmt.Sprintf("line %d\n", i))
	}
}

func TestAsServiceAccount(t *testing.T) {
	tests := []struct {
		name       string
		account    string
		wantGroups []string
	}{
		{"a service account", "system:serviceaccount:lockstep-system:lockstep",
			[]string{"system:serviceaccounts", "system:serviceaccounts:lockstep-system", "system:authenticated"}},
		{"not a service account name", "alice", []string{"system:serviceaccounts", "system:authenticated"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			admin := &rest.Config{Host: "https://127.0.0.1:6443", BearerToken: "admin"}
			got := AsServiceAccount(admin, tt.account)
			assert.Equal(t, tt.account, got.Impersonate.UserName)
			assert.Equal(t, tt.wantGroups, got.Impersonate.Groups)
			assert.Empty(t, admin.Impersonate.UserName, "the administrator's configuration stays as it was")
		})
	}
}

func TestDecode(t *testing.T) {
	objs, err := Decode("---\napiVersion: v1\nkind: Namespace\nmetadata:\n  name: a\n---\n# only a comment\n---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: b\ndata:\n  n: \"1\"\n")
	require.NoError(t, err)
	require.Len(t, objs, 2, "empty documents are skipped")
	assert.Equal(t, "Namespace", objs[0].GetKind())
	assert.Equal(t, "b", objs[1].GetName())

	_, err = Decode("kind: [")
	assert.Error(t, err)
}

func TestRuntimeEnv(t *testing.T) {
	objs, err := Decode(`apiVersion: apps/v1
kind: Deployment
metadata: {name: lockstep, namespace: lockstep-system}
spec:
  template:
    spec:
      containers:
        - name: lockstep
          env:
            - {name: GOGC, value: "400"}
            - {name: GOMEMLIMIT, value: 192MiB}
            - {name: LOCKSTEP_LOG_LEVEL, value: info}
            - name: GOMAXPROCS
              valueFrom: {resourceFieldRef: {resource: limits.cpu}}
`)
	require.NoError(t, err)
	env, err := RuntimeEnv(objs)
	require.NoError(t, err)
	assert.Equal(t, []string{"GOGC=400", "GOMEMLIMIT=192MiB"}, env, "the Go settings with a value; lockstep's own and those the kubelet fills in are not")

	_, err = RuntimeEnv(nil)
	assert.ErrorContains(t, err, "no Deployment")
}

func TestRuntimeEnvOfDeploy(t *testing.T) {
	root, err := Root()
	require.NoError(t, err)
	raw, err := os.ReadFile(filepath.Join(root, "deploy", "manager", "deployment.yaml"))
	require.NoError(t, err)
	objs, err := Decode(string(raw))
	require.NoError(t, err)
	env, err := RuntimeEnv(objs)
	require.NoError(t, err)
	assert.Contains(t, env, "GOGC=400", "deploy/ tunes the garbage collector; the benchmarks run lockstep with the same settings")
}
