package render

import (
	"context"
	"fmt"

	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Validate checks a CRD as the API server does when it is created: names,
// structural schema, CEL rules and their cost.
func Validate(crd *apiextensionsv1.CustomResourceDefinition) field.ErrorList {
	in := crd.DeepCopy()
	apiextensionsv1.SetObjectDefaults_CustomResourceDefinition(in)
	var internal apiextensions.CustomResourceDefinition
	if err := apiextensionsv1.Convert_v1_CustomResourceDefinition_To_apiextensions_CustomResourceDefinition(in, &internal, nil); err != nil {
		return field.ErrorList{field.InternalError(nil, fmt.Errorf("converting the CRD: %w", err))}
	}
	return validation.ValidateCustomResourceDefinition(context.Background(), &internal)
}
