package parametersfrom

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/lockstep-dev/lockstep/api/v1alpha1"
)

// Current resolves an object's parameters with the Secrets' current
// values, for a controller that applies a persisted spec again (a drift
// correction, a compensation): the merged parameters, their digest when
// some came from Secrets, or an error naming the reference that does not
// resolve (never a value).
func Current(ctx context.Context, reader client.Reader, namespace string, params *runtime.RawExtension,
	from []v1alpha1.ParametersFromSource) (*runtime.RawExtension, string, error) {
	if len(from) == 0 {
		return params, "", nil
	}
	if reader == nil {
		return nil, "", fmt.Errorf("spec.parametersFrom cannot be resolved: no Secret reader configured")
	}
	res, errs, err := Resolve(ctx, reader, namespace, params, from, field.NewPath("spec", "parametersFrom"), 0)
	if err != nil {
		return nil, "", err
	}
	if len(errs) > 0 {
		return nil, "", fmt.Errorf("spec.parametersFrom does not resolve: %w", errs.ToAggregate())
	}
	if !res.FromSecrets() {
		return res.Parameters, "", nil
	}
	digest, err := Digest(res.Parameters.Raw)
	return res.Parameters, digest, err
}
