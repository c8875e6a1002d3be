package controllermanager

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// Binary is the name of the kube-controller-manager executable in the
// directory of control plane binaries (KUBEBUILDER_ASSETS).
const Binary = "kube-controller-manager"

// Controllers are the controllers it runs: a namespace's deletion,
// owner-reference garbage collection, the aggregation of ClusterRoles by
// label into edit, view and admin (each typed kind's roles may be), the
// type checking of ValidatingAdmissionPolicies into their status
// (lockstep's policies on its own writes are checked so), and the status
// of ResourceQuotas (their limits and what the namespace holds:
// kube-apiserver's quota admission reads them there, and enforces no quota
// without them). Nothing else is needed by lockstep, and nothing else runs
// (no service account tokens, no node or pod controllers).
var Controllers = []string{"namespace-controller", "garbage-collector-controller", "clusterrole-aggregation-controller",
	"validatingadmissionpolicy-status-controller", "resourcequota-controller"}

// User is the identity it connects as, a cluster admin (system:masters):
// the namespace controller and the garbage collector delete objects of
// every kind.
const User = "system:kube-controller-manager"

// Options say where the binary is and where its files and output go.
type Options struct {
	// Assets is the directory with the control plane binaries
	// (hack/testbin.sh prints it).
	Assets string
	// Dir holds its kubeconfig and serving certificate; created if missing.
	Dir string
	// Out receives its log. When nil, the log goes to LogFile (created
	// or truncated; closed when the process ends), or is discarded.
	Out     io.Writer
	LogFile string
	// StartTimeout bounds the wait until it reports healthy; 1 minute
	// when zero.
	StartTimeout time.Duration
	// StopTimeout is how long Stop waits after SIGTERM before SIGKILL;
	// 10 seconds when zero.
	StopTimeout time.Duration
	// Server, when set, is the URL it reaches kube-apiserver at instead
	// of env's (a front that, as a cluster's load balancer, sends it only
	// to a kube-apiserver that is ready).
	Server string
}

// ControllerManager is a running kube-controller-manager.
type ControllerManager struct {
	cmd         *exec.Cmd
	healthz     string
	stopTimeout time.Duration
	// exited is closed when the process has ended; err is how it ended.
	exited chan struct{}
	err    error
}

// Start runs kube-controller-manager against env's kube-apiserver as a
// new cluster-admin user, and waits until it reports healthy.
func Start(env *envtest.Environment, o Options) (*ControllerManager, error) {
	user, err := env.AddUser(envtest.User{Name: User, Groups: []string{"system:masters"}}, nil)
	if err != nil {
		return nil, fmt.Errorf("adding the kube-controller-manager user to the API server: %w", err)
	}
	kubeconfig, err := user.KubeConfig()
	if err != nil {
		return nil, fmt.Errorf("encoding the kube-controller-manager kubeconfig: %w", err)
	}
	if o.Server != "" {
		if kubeconfig, err = withServer(kubeconfig, o.Server); err != nil {
			return nil, err
		}
	}
	return start(o, kubeconfig)
}

// withServer points every cluster of a kubeconfig at server.
func withServer(kubeconfig []byte, server string) ([]byte, error) {
	cfg, err := clientcmd.Load(kubeconfig)
	if err != nil {
		return nil, fmt.Errorf("reading the kube-controller-manager kubeconfig: %w", err)
	}
	for _, c := range cfg.Clusters {
		c.Server = server
	}
	out, err := clientcmd.Write(*cfg)
	if err != nil {
		return nil, fmt.Errorf("encoding the kube-controller-manager kubeconfig: %w", err)
	}
	return out, nil
}

// start writes the kubeconfig into o.Dir, runs the binary and waits until
// it is healthy.
func start(o Options, kubeconfig []byte) (*ControllerManager, error) {
	if o.StartTimeout == 0 {
		o.StartTimeout = time.Minute
	}
	if o.StopTimeout == 0 {
		o.StopTimeout = 10 * time.Second
	}
	binary := filepath.Join(o.Assets, Binary)
	if _, err := os.Stat(binary); err != nil {
		return nil, fmt.Errorf("%s is not in %s: run `bash hack/testbin.sh` to build it: %w", Binary, o.Assets, err)
	}
	if err := os.MkdirAll(o.Dir, 0o700); err != nil {
		return nil, fmt.Errorf("creating %s: %w", o.Dir, err)
	}
	kubeconfigPath := filepath.Join(o.Dir, "kubeconfig")
	if err := os.WriteFile(kubeconfigPath, kubeconfig, 0o600); err != nil {
		return nil, fmt.Errorf("writing the kube-controller-manager kubeconfig: %w", err)
	}
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	out, closeLog, err := logTo(o)
	if err != nil {
		return nil, err
	}
	cm := &ControllerManager{
		cmd:         exec.Command(binary, Args(kubeconfigPath, o.Dir, port)...),
		healthz:     "https://" + net.JoinHostPort("127.0.0.1", strconv.Itoa(port)) + "/healthz",
		stopTimeout: o.StopTimeout,
		exited:      make(chan struct{}),
	}
	cm.cmd.Stdout, cm.cmd.Stderr = out, out
	if err := cm.cmd.Start(); err != nil {
		closeLog()
		return nil, fmt.Errorf("starting %s: %w", binary, err)
	}
	go func() {
		defer close(cm.exited)
		cm.err = cm.cmd.Wait()
		closeLog()
	}()
	if err := cm.waitHealthy(o.StartTimeout); err != nil {
		_ = cm.Stop()
		return nil, err
	}
	return cm, nil
}

// logTo returns where the log goes and how to close it.
func logTo(o Options) (io.Writer, func(), error) {
	switch {
	case o.Out != nil:
		return o.Out, func() {}, nil
	case o.LogFile != "":
		f, err := os.Create(o.LogFile)
		if err != nil {
			return nil, nil, fmt.Errorf("creating the kube-controller-manager log: %w", err)
		}
		return f, func() { _ = f.Close() }, nil
	default:
		return io.Discard, func() {}, nil
	}
}

// Args are kube-controller-manager's flags: the controllers above, no
// leader election (one process), the kubeconfig's own credentials for
// every controller (there is no service account token controller), and
// health served on loopback at port.
func Args(kubeconfig, certDir string, port int) []string {
	return []string{
		"--kubeconfig=" + kubeconfig,
		"--controllers=" + strings.Join(Controllers, ","),
		"--use-service-account-credentials=false",
		"--leader-elect=false",
		"--bind-address=127.0.0.1",
		"--secure-port=" + strconv.Itoa(port),
		"--cert-dir=" + certDir,
	}
}

// waitHealthy polls /healthz until it answers 200, the process ends or
// timeout passes.
func (cm *ControllerManager) waitHealthy(timeout time.Duration) error {
	client := &http.Client{
		Timeout: time.Second,
		// Its serving certificate is self-signed; only health is asked.
		Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}, //nolint:gosec // a liveness probe on loopback
	}
	defer client.CloseIdleConnections()
	err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, timeout, true, func(context.Context) (bool, error) {
		select {
		case <-cm.exited:
			return false, fmt.Errorf("kube-controller-manager exited while starting (%v); its log says why", cm.err)
		default:
		}
		return healthy(client, cm.healthz), nil
	})
	if wait.Interrupted(err) {
		return fmt.Errorf("kube-controller-manager did not report healthy at %s within %s; its log says why", cm.healthz, timeout)
	}
	return err
}

func healthy(c *http.Client, url string) bool {
	resp, err := c.Get(url)
	if err != nil {
		return false
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	_ = resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

// Stop asks kube-controller-manager to stop (SIGTERM), kills it if it
// still runs after the stop timeout, and waits until it is gone.
func (cm *ControllerManager) Stop() error {
	select {
	case <-cm.exited:
		return nil // already gone; how it ended was reported while it ran
	default:
	}
	if err := cm.cmd.Process.Signal(syscall.SIGTERM); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("stopping kube-controller-manager (pid %d): %w", cm.cmd.Process.Pid, err)
	}
	select {
	case <-cm.exited:
		return nil
	case <-time.After(cm.stopTimeout):
	}
	if err := cm.cmd.Process.Kill(); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("killing kube-controller-manager (pid %d): %w", cm.cmd.Process.Pid, err)
	}
	<-cm.exited
	return nil
}

// Done is closed when the process has ended, stopped or on its own.
func (cm *ControllerManager) Done() <-chan struct{} { return cm.exited }

// Err is how the process ended, once Done is closed.
func (cm *ControllerManager) Err() error {
	<-cm.exited
	return cm.err
}

// freePort asks the kernel for a free loopback port.
func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("finding a free port on 127.0.0.1 for kube-controller-manager: %w", err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	_ = ln.Close()
	return port, nil
}
