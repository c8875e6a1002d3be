package framework

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"sync"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/lockstep-dev/lockstep/internal/app"
	"github.com/lockstep-dev/lockstep/test/framework/controllermanager"
)

// Options say what control plane Start starts.
type Options struct {
	// Name names the suite in the temporary directory and in the log files
	// kept after the run (lockstep-<Name>-...).
	Name string
	// Root is the repository root; Root() when empty.
	Root string
	// Assets is the directory with the control plane binaries; Assets(Root)
	// when empty.
	Assets string
	// ExtraCRDPaths are CRD files or directories installed besides
	// deploy/crds; CRDs are CRDs installed from memory.
	ExtraCRDPaths []string
	CRDs          []*apiextensionsv1.CustomResourceDefinition
	// MutatingWebhooks and ValidatingWebhooks replace the webhook
	// configurations of deploy/webhook/manifests.yaml when either is set.
	// envtest points them at a port on loopback with a CA of its own.
	MutatingWebhooks   []*admissionregistrationv1.MutatingWebhookConfiguration
	ValidatingWebhooks []*admissionregistrationv1.ValidatingWebhookConfiguration
	// Dir is the working directory for kubeconfigs and other files of the
	// run, left in place by Stop; when empty, a temporary directory that
	// Stop removes.
	Dir string
	// NoWebhooks installs the CRDs only: the API server calls no webhook.
	NoWebhooks bool
	// WebhookPort is the port the webhook configurations call on loopback;
	// a free port below the ephemeral range when zero (see FreePort: the
	// webhook server listens only after kube-apiserver has started and
	// dialled out).
	WebhookPort int
	// Configure, when set, adjusts envtest's environment before it starts
	// (etcd's data directory, fixed ports, where the processes log).
	Configure func(*envtest.Environment)
	// ControllerManager runs kube-controller-manager with the namespace,
	// garbage-collector and ClusterRole aggregation controllers, as in a
	// cluster: deleted namespaces go, owned objects are collected, roles
	// labelled to aggregate into edit, view or admin are.
	ControllerManager bool
	// APIServers is how many kube-apiservers serve on one etcd, as in a
	// highly available cluster; with more than one, Config reaches them
	// through a front that, as a load balancer, sends connections only to
	// those that are ready. 0 or 1: envtest's one.
	APIServers int
	// TracingEndpoint, when set, is where kube-apiserver sends its spans
	// (OTLP over gRPC, host:port; an OTLPReceiver's Endpoint), every
	// request sampled: its calls to the webhooks then carry a W3C
	// traceparent.
	TracingEndpoint string
}

// ControlPlane is a running etcd and kube-apiserver (and
// kube-controller-manager when asked for) with lockstep's CRDs and webhook
// configurations installed. Stop it when done.
type ControlPlane struct {
	// Env is envtest's environment; its WebhookInstallOptions hold the
	// serving host, port and certificates of the webhook configurations.
	Env *envtest.Environment
	// Config reaches the API server as a cluster administrator.
	Config *rest.Config
	// Root, Assets and Kubectl are the repository root, the directory of
	// the control plane binaries and the real kubectl in it.
	Root, Assets, Kubectl string
	// Dir holds kubeconfigs and other files of the run (Options.Dir).
	Dir string
	// ControllerManagerLog is kube-controller-manager's log file, kept
	// after the run.
	ControllerManagerLog string

	cm        *controllermanager.ControllerManager
	removeDir bool
	apiMu     sync.Mutex
	api       apiServers
}

// Start starts the control plane and installs lockstep's CRDs and webhook
// configurations.
func Start(o Options) (_ *ControlPlane, err error) {
	if o.Name == "" {
		return nil, errors.New("framework: Options.Name is empty")
	}
	if o.Root == "" {
		if o.Root, err = Root(); err != nil {
			return nil, err
		}
	}
	if o.Assets == "" {
		if o.Assets, err = Assets(o.Root); err != nil {
			return nil, err
		}
	}
	cp := &ControlPlane{Root: o.Root, Assets: o.Assets, Kubectl: filepath.Join(o.Assets, "kubectl")}
	cp.Dir = o.Dir
	if cp.Dir == "" {
		if cp.Dir, err = os.MkdirTemp("", "lockstep-"+o.Name+"-"); err != nil {
			return nil, fmt.Errorf("creating a working directory: %w", err)
		}
		cp.removeDir = true
	}
	// kubectl keeps its discovery cache per address: another test
	// package's kube-apiserver may have had this one before, with other
	// resources, and kubectl would then say "the server doesn't have a
	// resource type". Each control plane's kubectl has a cache of its own.
	if err = os.Setenv("KUBECACHEDIR", filepath.Join(cp.Dir, "kubecache")); err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			_ = cp.Stop()
		}
	}()
	if o.WebhookPort == 0 && !o.NoWebhooks {
		if o.WebhookPort, err = FreePort(); err != nil {
			return nil, err
		}
	}
	webhooks := envtest.WebhookInstallOptions{LocalServingHost: "127.0.0.1", LocalServingPort: o.WebhookPort}
	switch {
	case o.NoWebhooks:
		webhooks = envtest.WebhookInstallOptions{}
	case o.MutatingWebhooks != nil || o.ValidatingWebhooks != nil:
		webhooks.MutatingWebhooks, webhooks.ValidatingWebhooks = o.MutatingWebhooks, o.ValidatingWebhooks
	default:
		webhooks.Paths = []string{filepath.Join(o.Root, "deploy", "webhook", "manifests.yaml")}
	}
	cp.Env = &envtest.Environment{
		BinaryAssetsDirectory: o.Assets,
		CRDDirectoryPaths:     append([]string{filepath.Join(o.Root, "deploy", "crds")}, o.ExtraCRDPaths...),
		CRDs:                  o.CRDs,
		ErrorIfCRDPathMissing: true,
		WebhookInstallOptions: webhooks,
	}
	if o.Configure != nil {
		o.Configure(cp.Env)
	}
	if o.TracingEndpoint != "" {
		path, err := writeTracingConfig(cp.Dir, o.TracingEndpoint)
		if err != nil {
			return nil, err
		}
		cp.Env.ControlPlane.GetAPIServer().Configure().Set("tracing-config-file", path)
	}
	if cp.Config, err = cp.Env.Start(); err != nil {
		return nil, fmt.Errorf("starting kube-apiserver and etcd from %s: %w", o.Assets, err)
	}
	if o.APIServers > 1 || o.ControllerManager {
		if err := cp.startAPIServers(o.APIServers, o.ControllerManager); err != nil {
			return nil, err
		}
	}
	if o.APIServers > 1 {
		cp.Config.Host = "https://" + cp.api.front.Addr()
	}
	if o.ControllerManager {
		cp.ControllerManagerLog = filepath.Join(os.TempDir(), "lockstep-"+o.Name+"-kube-controller-manager.log")
		cp.cm, err = controllermanager.Start(cp.Env, controllermanager.Options{
			Assets: o.Assets, Dir: filepath.Join(cp.Dir, "kcm"), LogFile: cp.ControllerManagerLog,
			Server: "https://" + cp.api.front.Addr(),
		})
		if err != nil {
			return nil, fmt.Errorf("%w (its log: %s)", err, cp.ControllerManagerLog)
		}
	}
	return cp, nil
}

// Stop stops kube-controller-manager, kube-apiserver and etcd, and removes
// the working directory unless Options.Dir named it.
func (cp *ControlPlane) Stop() error {
	var errs []error
	if cp.cm != nil {
		if err := cp.cm.Stop(); err != nil {
			errs = append(errs, err)
		}
		cp.cm = nil
	}
	if err := cp.stopAPIServers(); err != nil {
		errs = append(errs, fmt.Errorf("stopping the kube-apiservers started after envtest's: %w", err))
	}
	if cp.Env != nil {
		if err := cp.Env.Stop(); err != nil {
			errs = append(errs, fmt.Errorf("stopping kube-apiserver and etcd: %w", err))
		}
	}
	if cp.removeDir {
		_ = os.RemoveAll(cp.Dir)
	}
	return errors.Join(errs...)
}

// Client is a client with lockstep's scheme, as the cluster administrator.
func (cp *ControlPlane) Client() (client.Client, error) {
	c, err := client.New(cp.Config, client.Options{Scheme: app.Scheme()})
	if err != nil {
		return nil, fmt.Errorf("creating a client: %w", err)
	}
	return c, nil
}

// apiAddr is kube-apiserver's host and port.
func (cp *ControlPlane) apiAddr() string {
	if u, err := url.Parse(cp.Config.Host); err == nil && u.Host != "" {
		return u.Host
	}
	return cp.Config.Host
}

// WebhookAddr is the address the API server calls the webhooks at.
func (cp *ControlPlane) WebhookAddr() string {
	o := cp.Env.WebhookInstallOptions
	return net.JoinHostPort(o.LocalServingHost, strconv.Itoa(o.LocalServingPort))
}
