package validate

import (
	"regexp"

	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/lockstep-dev/lockstep/api/v1alpha1"
	"github.com/lockstep-dev/lockstep/internal/credentials"
)

// externalIDPattern is what lockstep accepts as an OSB instance_id or
// binding_id: it goes into URL paths, so no slashes, spaces or query
// characters.
var externalIDPattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$`)

const externalIDRule = "must be 1-128 characters: letters, digits, '.', '_' or '-', starting with a letter or digit (it is the OSB id in the broker's URLs); leave it empty to get a UUID"

// ServiceInstanceSpec checks the basic shape of an instance's spec: required
// names and a usable external id. Catalog and schema checks come separately.
func ServiceInstanceSpec(spec *v1alpha1.ServiceInstanceSpec, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	if spec.ServiceName == "" {
		errs = append(errs, field.Required(path.Child("serviceName"), "name the service from the broker's catalog"))
	}
	if spec.PlanName == "" {
		errs = append(errs, field.Required(path.Child("planName"), "name the plan from the broker's catalog"))
	}
	errs = append(errs, externalID(spec.ExternalID, path.Child("externalID"))...)
	return errs
}

// ServiceBindingSpec checks the basic shape of a binding's spec.
func ServiceBindingSpec(spec *v1alpha1.ServiceBindingSpec, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	if spec.InstanceName == "" {
		errs = append(errs, field.Required(path.Child("instanceName"), "name the ServiceInstance to bind, in the same namespace"))
	}
	if spec.SecretName != "" {
		for _, msg := range validation.IsDNS1123Subdomain(spec.SecretName) {
			errs = append(errs, field.Invalid(path.Child("secretName"), spec.SecretName, "not a valid Secret name: "+msg))
		}
	}
	errs = append(errs, externalID(spec.ExternalID, path.Child("externalID"))...)
	errs = append(errs, credentials.CheckTransforms(spec.SecretTransforms, path.Child("secretTransforms"))...)
	return errs
}

func externalID(id string, path *field.Path) field.ErrorList {
	if id == "" || externalIDPattern.MatchString(id) {
		return nil
	}
	return field.ErrorList{field.Invalid(path, id, externalIDRule)}
}
