package admission

import (
	"fmt"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/lockstep-dev/lockstep/api/v1alpha1"
)

// typedPaths names the fields of the errors about the model of a typed
// object as the typed object has them: spec.planName is spec.plan; a typed
// object has no spec.serviceName (its kind is the service), so an error
// about it is an error about the kind's service, reported on spec. The
// errors about a ServiceInstance stay as they are.
func typedPaths(si Instance, errs field.ErrorList) field.ErrorList {
	if !v1alpha1.Typed(si) {
		return errs
	}
	out := make(field.ErrorList, 0, len(errs))
	for _, e := range errs {
		c := *e
		switch c.Field {
		case "spec.planName":
			c.Field = "spec.plan"
		case "spec.serviceName":
			c.Field = "spec"
			c.Detail = fmt.Sprintf("kind %s is service %q: %s", si.Kind, si.Spec.ServiceName, c.Detail)
		}
		out = append(out, &c)
	}
	return out
}
