package catalog

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/lockstep-dev/lockstep/api/v1alpha1"
	"github.com/lockstep-dev/lockstep/internal/broker/osbclient"
	"github.com/lockstep-dev/lockstep/internal/metrics"
)

// BrokerConfig builds the OSB client configuration of a ServiceBroker,
// reading its credentials from the Secret it references, which must be in
// namespace, lockstep's own (a ServiceBroker written before admission
// checked it is refused here too). Error messages name the Secret and the
// missing key, never a value.
func BrokerConfig(ctx context.Context, secrets client.Reader, sb *v1alpha1.ServiceBroker, namespace string, timeout time.Duration) (osbclient.Config, error) {
	cfg := osbclient.Config{URL: sb.Spec.URL, CABundle: sb.Spec.CABundle, Timeout: timeout, UserAgent: "lockstep", Observe: observe(sb.Name)}
	ref := sb.Spec.AuthSecretRef
	if ref == nil {
		return cfg, nil
	}
	if ref.Namespace != namespace {
		return cfg, fmt.Errorf("spec.authSecretRef names Secret %s/%s, and lockstep reads a broker's credentials only from its own namespace %q: "+
			"move the Secret there and set spec.authSecretRef.namespace to %q", ref.Namespace, ref.Name, namespace, namespace)
	}
	var secret corev1.Secret
	if err := secrets.Get(ctx, client.ObjectKey{Namespace: ref.Namespace, Name: ref.Name}, &secret); err != nil {
		return cfg, fmt.Errorf("reading the broker's credentials from Secret %s/%s: %w", ref.Namespace, ref.Name, err)
	}
	key := func(k string) (string, error) {
		v, ok := secret.Data[k]
		if !ok || len(v) == 0 {
			return "", fmt.Errorf("secret %s/%s has no key %q, needed for %s authentication", ref.Namespace, ref.Name, k, authType(ref))
		}
		return string(v), nil
	}
	switch authType(ref) {
	case v1alpha1.AuthBearer:
		token, err := key("token")
		if err != nil {
			return cfg, err
		}
		cfg.Auth = osbclient.BearerAuth(token)
	default:
		user, err := key("username")
		if err != nil {
			return cfg, err
		}
		password, err := key("password")
		if err != nil {
			return cfg, err
		}
		cfg.Auth = osbclient.BasicAuth(user, password)
	}
	return cfg, nil
}

func authType(ref *v1alpha1.SecretReference) v1alpha1.AuthType {
	if ref.Type == "" {
		return v1alpha1.AuthBasic
	}
	return ref.Type
}

// observe counts every request to the ServiceBroker called broker in
// lockstep's metrics.
func observe(broker string) func(osbclient.Op, int, time.Duration) {
	return func(op osbclient.Op, status int, elapsed time.Duration) {
		metrics.BrokerCall(broker, string(op), status, elapsed)
	}
}
