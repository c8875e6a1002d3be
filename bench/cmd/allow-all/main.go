// Command allow-all is the baseline of lockstep's admission benchmark: a
// controller-runtime webhook server with the same TLS setup as lockstep's
// (webhook.NewServer with a host, a port, a certificate directory holding
// tls.crt and tls.key, and lockstep's TLS settings: HTTP/1.1 only unless
// LOCKSTEP_ENABLE_HTTP2, LOCKSTEP_TLS_MIN_VERSION), serving lockstep's webhook paths with
// handlers that allow every request. -mode says how much of the request a
// handler reads first:
//
//	allow       nothing beyond the AdmissionReview envelope: the baseline
//	typed       decodes the old and new ServiceInstance as lockstep's
//	            validator does (controller-runtime's admission.WithValidator),
//	            then allows: the floor of any typed validator built that way
//	spec-first  compares the raw specs of an UPDATE first and decodes the
//	            objects (sigs.k8s.io/json, straight into the Go type) only
//	            when they differ: a cheaper way to the same decision
//
//	allow-all -mode allow -host 127.0.0.1 -port 9444 -cert-dir /path/to/certs
//
// It runs until SIGTERM or SIGINT.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"

	"k8s.io/apimachinery/pkg/runtime"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/webhook"
	cradmission "sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/lockstep-dev/lockstep/internal/admission"
	"github.com/lockstep-dev/lockstep/internal/app"
)

func main() {
	mode := flag.String("mode", "allow", "allow, typed or spec-first (see the package documentation)")
	host := flag.String("host", "127.0.0.1", "address to bind to")
	port := flag.Int("port", 9444, "TLS port")
	certDir := flag.String("cert-dir", "certs", "directory with tls.crt and tls.key")
	flag.Parse()
	h, err := instanceHandler(*mode, app.Scheme())
	var cfg app.Config
	if err == nil {
		cfg, err = app.LoadConfig()
	}
	if err == nil {
		err = serve(ctrl.SetupSignalHandler(), webhook.Options{Host: *host, Port: *port, CertDir: *certDir, TLSOpts: app.TLSOptions(cfg)}, h)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "allow-all:", err)
		os.Exit(1)
	}
}

// serve runs the webhook server until ctx ends: instance serves
// ServiceInstance validation, every other path allows at once.
func serve(ctx context.Context, o webhook.Options, instance *cradmission.Webhook) error {
	srv := webhook.NewServer(o)
	allow := allowAll()
	for _, path := range []string{admission.MutateInstancePath, admission.MutateBindingPath, admission.ValidateBindingPath, admission.ValidateStatusPath} {
		srv.Register(path, allow)
	}
	srv.Register(admission.ValidateInstancePath, instance)
	if err := srv.Start(ctx); err != nil {
		return fmt.Errorf("serving on %s:%d with the certificates in %s: %w", o.Host, o.Port, o.CertDir, err)
	}
	return nil
}

// instanceHandler is the ServiceInstance validation handler of a mode.
func instanceHandler(mode string, scheme *runtime.Scheme) (*cradmission.Webhook, error) {
	switch mode {
	case "allow":
		return allowAll(), nil
	case "typed":
		return cradmission.WithValidator[instance](scheme, noopValidator{}), nil
	case "spec-first":
		return &cradmission.Webhook{Handler: specFirst{}}, nil
	}
	return nil, fmt.Errorf("-mode %q: must be allow, typed or spec-first", mode)
}
