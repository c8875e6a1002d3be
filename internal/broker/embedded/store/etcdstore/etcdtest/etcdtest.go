package etcdtest

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/lockstep-dev/lockstep/test/framework"
)

// Binary returns the path of the etcd binary, or skips the test with a
// message saying how to get it when KUBEBUILDER_ASSETS is unset.
func Binary(t testing.TB) string {
	t.Helper()
	dir := os.Getenv("KUBEBUILDER_ASSETS")
	if dir == "" {
		t.Skip("KUBEBUILDER_ASSETS is not set, so there is no etcd binary for the etcd store tests: " +
			"run `make test` (it always sets it), or export KUBEBUILDER_ASSETS=$(bash hack/testbin.sh)")
	}
	bin := filepath.Join(dir, "etcd")
	if _, err := os.Stat(bin); err != nil {
		t.Fatalf("KUBEBUILDER_ASSETS=%s holds no etcd binary (%v): run bash hack/testbin.sh", dir, err)
	}
	return bin
}

// Etcd is a running etcd process.
type Etcd struct {
	// Endpoint is the client URL, http://127.0.0.1:<port>.
	Endpoint string
	cmd      *exec.Cmd
	output   *framework.LogBuffer
	done     chan struct{}
}

// Start starts etcd and waits until it answers; the process is stopped and
// its data removed when t ends.
func Start(t testing.TB) *Etcd {
	t.Helper()
	bin := Binary(t)
	dataDir := t.TempDir()
	clientPort, peerPort := freePort(t), freePort(t)
	client := "http://127.0.0.1:" + strconv.Itoa(clientPort)
	peer := "http://127.0.0.1:" + strconv.Itoa(peerPort)
	cmd := exec.Command(bin,
		"--name", "lockstep-test",
		"--data-dir", dataDir,
		"--listen-client-urls", client,
		"--advertise-client-urls", client,
		"--listen-peer-urls", peer,
		"--initial-advertise-peer-urls", peer,
		"--initial-cluster", "lockstep-test="+peer,
		"--log-level", "error",
	)
	out := &framework.LogBuffer{}
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start etcd %s: %v", bin, err)
	}
	e := &Etcd{Endpoint: client, cmd: cmd, output: out, done: make(chan struct{})}
	go func() { _ = cmd.Wait(); close(e.done) }()
	t.Cleanup(e.stop)
	if err := e.waitReady(30 * time.Second); err != nil {
		t.Fatalf("etcd did not become ready: %v\netcd output:\n%s", err, out.String())
	}
	return e
}

// Client returns a client of this etcd, closed when t ends.
func (e *Etcd) Client(t testing.TB) *clientv3.Client {
	t.Helper()
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{e.Endpoint}, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		t.Fatalf("etcd client: %v", err)
	}
	t.Cleanup(func() { _ = cli.Close() })
	return cli
}

func (e *Etcd) waitReady(limit time.Duration) error {
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{e.Endpoint}, DialTimeout: time.Second, Logger: zap.NewNop()})
	if err != nil {
		return err
	}
	defer func() { _ = cli.Close() }()
	var last error
	err = wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, limit, true, func(context.Context) (bool, error) {
		select {
		case <-e.done:
			return false, fmt.Errorf("etcd exited early")
		default:
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		_, last = cli.Get(ctx, "ready-check")
		cancel()
		return last == nil, nil
	})
	if wait.Interrupted(err) {
		return fmt.Errorf("no answer within %s: %w", limit, last)
	}
	return err
}

func (e *Etcd) stop() {
	if e.cmd.Process == nil {
		return
	}
	_ = syscall.Kill(-e.cmd.Process.Pid, syscall.SIGTERM)
	select {
	case <-e.done:
	case <-time.After(10 * time.Second):
		_ = syscall.Kill(-e.cmd.Process.Pid, syscall.SIGKILL)
		<-e.done
	}
}

func freePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("pick a free port: %v", err)
	}
	defer func() { _ = l.Close() }()
	return l.Addr().(*net.TCPAddr).Port
}
