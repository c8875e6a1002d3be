package validate

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/lockstep-dev/lockstep/api/v1alpha1"
)

func TestServiceInstanceSpec(t *testing.T) {
	tests := []struct {
		name  string
		spec  v1alpha1.ServiceInstanceSpec
		paths []string
	}{
		{"valid", v1alpha1.ServiceInstanceSpec{ServiceName: "db", PlanName: "small", ExternalID: "0b6c-42"}, nil},
		{"empty external id is defaulted later", v1alpha1.ServiceInstanceSpec{ServiceName: "db", PlanName: "small"}, nil},
		{"missing names", v1alpha1.ServiceInstanceSpec{}, []string{"spec.serviceName", "spec.planName"}},
		{"slash in external id", v1alpha1.ServiceInstanceSpec{ServiceName: "db", PlanName: "small", ExternalID: "a/b"}, []string{"spec.externalID"}},
		{"too long external id", v1alpha1.ServiceInstanceSpec{ServiceName: "db", PlanName: "small", ExternalID: strings.Repeat("a", 129)}, []string{"spec.externalID"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			errs := ServiceInstanceSpec(&tt.spec, field.NewPath("spec"))
			assert.Equal(t, tt.paths, objectErrorPaths(errs))
		})
	}
}

func TestServiceBindingSpec(t *testing.T) {
	tests := []struct {
		name  string
		spec  v1alpha1.ServiceBindingSpec
		paths []string
	}{
		{"valid", v1alpha1.ServiceBindingSpec{InstanceName: "db", SecretName: "db-creds", ExternalID: "x1"}, nil},
		{"missing instance", v1alpha1.ServiceBindingSpec{}, []string{"spec.instanceName"}},
		{"bad secret name", v1alpha1.ServiceBindingSpec{InstanceName: "db", SecretName: "Not_A_Name"}, []string{"spec.secretName"}},
		{"bad external id", v1alpha1.ServiceBindingSpec{InstanceName: "db", ExternalID: "?x"}, []string{"spec.externalID"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			errs := ServiceBindingSpec(&tt.spec, field.NewPath("spec"))
			assert.Equal(t, tt.paths, objectErrorPaths(errs))
		})
	}
}

func objectErrorPaths(errs field.ErrorList) []string {
	var paths []string
	for _, e := range errs {
		paths = append(paths, e.Field)
	}
	return paths
}
