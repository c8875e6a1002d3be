package plugin

import (
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/lockstep-dev/lockstep/api/v1alpha1"
)

// Version is the plugin's version, set at build time (-ldflags -X).
var Version = "v0.1.0"

// session is what every command shares: the kubeconfig flags (kubectl's
// own: --kubeconfig, --context, -n, ...), the streams and lockstep's
// namespace.
type session struct {
	flags   *genericclioptions.ConfigFlags
	streams genericiooptions.IOStreams
	// lockstepNamespace is where lockstep keeps the records of deletes in a
	// namespace that was being deleted.
	lockstepNamespace string
	// poll is how often a command that waits reads its object again.
	poll time.Duration
}

// NewCommand returns `kubectl lockstep` with every subcommand.
func NewCommand(streams genericiooptions.IOStreams) *cobra.Command {
	s := &session{flags: genericclioptions.NewConfigFlags(true), streams: streams, poll: 500 * time.Millisecond}
	root := &cobra.Command{
		Use:   "kubectl-lockstep",
		Short: "Service instances and bindings, carried out at their broker by lockstep",
		Long: "kubectl lockstep shows what the registered brokers offer, provisions and binds, and explains " +
			"what lockstep did and why an object or a namespace is not where it should be.",
		Version:       Version,
		SilenceUsage:  true,
		SilenceErrors: true,
		Annotations:   map[string]string{cobra.CommandDisplayNameAnnotation: "kubectl lockstep"},
	}
	root.SetIn(streams.In)
	root.SetOut(streams.Out)
	root.SetErr(streams.ErrOut)
	s.flags.AddFlags(root.PersistentFlags())
	root.PersistentFlags().StringVar(&s.lockstepNamespace, "lockstep-namespace", v1alpha1.DefaultNamespace,
		"lockstep's own namespace, where it keeps the records of deletes in namespaces that were being deleted")
	root.AddCommand(
		s.marketplaceCommand(),
		s.describeCommand(),
		s.provisionCommand(),
		s.bindCommand(),
		s.historyCommand(),
		s.whyCommand(),
		s.detachCommand(),
		s.adoptCommand(),
	)
	return root
}

// Run runs kubectl lockstep with args and returns the exit code: what a
// command refuses, or the API server refused, is printed on the error
// stream as kubectl prints it.
func Run(args []string, streams genericiooptions.IOStreams) int {
	cmd := NewCommand(streams)
	cmd.SetArgs(args)
	if err := cmd.Execute(); err != nil {
		fmt.Fprintln(streams.ErrOut, FormatError(err))
		return 1
	}
	return 0
}

// scheme knows the Kubernetes kinds and lockstep's.
func scheme() *runtime.Scheme {
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		panic(err) // static registration
	}
	if err := v1alpha1.AddToScheme(s); err != nil {
		panic(err)
	}
	return s
}

// client returns a client as the user of the kubeconfig, and the namespace
// the flags or the kubeconfig name. The API server's warnings are printed
// as kubectl prints them.
func (s *session) client() (client.Client, string, error) {
	cfg, err := s.flags.ToRESTConfig()
	if err != nil {
		return nil, "", err
	}
	cfg = rest.CopyConfig(cfg)
	cfg.WarningHandler = rest.NewWarningWriter(s.streams.ErrOut, rest.WarningWriterOptions{Deduplicate: true})
	c, err := client.New(cfg, client.Options{Scheme: scheme()})
	if err != nil {
		return nil, "", err
	}
	ns, _, err := s.flags.ToRawKubeConfigLoader().Namespace()
	if err != nil {
		return nil, "", err
	}
	return c, ns, nil
}

func (s *session) out() io.Writer { return s.streams.Out }
