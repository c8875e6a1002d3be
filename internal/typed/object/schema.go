package object

import (
	"fmt"

	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/lockstep-dev/lockstep/internal/typed/render"
)

// SchemaChecker checks objects of a typed kind against the schema of its
// CRD as the API server does before the validating webhooks run, with the
// API server's words: on an update, an error in a value the update leaves
// as it was is let through (ratcheting), as the API server lets it
// through. It does not run the CRD's CEL rules (lockstep's own checks say
// what they say).
type SchemaChecker struct {
	validator validation.SchemaValidator
}

// NewSchemaChecker is the checker of the objects of crd, a typed kind's
// CRD.
func NewSchemaChecker(crd *apiextensionsv1.CustomResourceDefinition) (*SchemaChecker, error) {
	for _, v := range crd.Spec.Versions {
		if v.Name != render.Version || v.Schema == nil || v.Schema.OpenAPIV3Schema == nil {
			continue
		}
		var internal apiextensions.JSONSchemaProps
		if err := apiextensionsv1.Convert_v1_JSONSchemaProps_To_apiextensions_JSONSchemaProps(v.Schema.OpenAPIV3Schema, &internal, nil); err != nil {
			return nil, fmt.Errorf("reading the schema of CRD %s: %w", crd.Name, err)
		}
		validator, _, err := validation.NewSchemaValidator(&internal)
		if err != nil {
			return nil, fmt.Errorf("reading the schema of CRD %s: %w", crd.Name, err)
		}
		return &SchemaChecker{validator: validator}, nil
	}
	return nil, fmt.Errorf("CRD %s has no schema of version %s", crd.Name, render.Version)
}

// Check returns the errors the API server finds in object new (old: the
// object as it was, for an update; nil for a create).
func (c *SchemaChecker) Check(new, old map[string]any) field.ErrorList {
	if old == nil {
		return validation.ValidateCustomResource(nil, new, c.validator)
	}
	return validation.ValidateCustomResourceUpdate(nil, new, old, c.validator, validation.WithRatcheting(nil))
}
