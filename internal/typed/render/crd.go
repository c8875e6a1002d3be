package render

import (
	"fmt"
	"slices"
	"strings"
	"sync"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"

	"github.com/lockstep-dev/lockstep/deploy/crds"
)

// Labels and annotations on every typed kind's CRD. The annotations always
// hold the broker, the offering's OSB id and the service name; the labels
// hold the broker and the id too where they fit a label value, so that the
// CRD of an offering can be found by label.
const (
	LabelManagedBy        = "app.kubernetes.io/managed-by"
	ManagedBy             = "lockstep"
	LabelBroker           = Group + "/broker"
	LabelOfferingID       = Group + "/offering-id"
	AnnotationBroker      = Group + "/broker"
	AnnotationOfferingID  = Group + "/offering-id"
	AnnotationServiceName = Group + "/service-name"
)

// mirrored are ServiceInstance's spec fields that a typed kind has too,
// with the same schema and rules.
var mirrored = []string{"brokerName", "externalID", "parametersFrom", "parametersFromGeneration"}

// columns are ServiceInstance's printer columns that a typed kind shows
// too, after its plan.
var columns = []string{"Ready", "In Sync", "Reason", "Age"}

// serviceInstance is the generated ServiceInstance CRD, read once.
var serviceInstance = sync.OnceValues(func() (*apiextensionsv1.CustomResourceDefinition, error) {
	var crd apiextensionsv1.CustomResourceDefinition
	if err := yaml.UnmarshalStrict(crds.ServiceInstance, &crd); err != nil {
		return nil, fmt.Errorf("reading the ServiceInstance CRD: %w", err)
	}
	if len(crd.Spec.Versions) != 1 || crd.Spec.Versions[0].Schema == nil || crd.Spec.Versions[0].Schema.OpenAPIV3Schema == nil {
		return nil, fmt.Errorf("the ServiceInstance CRD has not exactly one version with a schema")
	}
	return &crd, nil
})

// crdParts is what a typed kind's CRD is made of.
type crdParts struct {
	names       Names
	brokerName  string
	serviceID   string
	serviceName string
	description string
	parameters  apiextensionsv1.JSONSchemaProps
	planRule    *apiextensionsv1.ValidationRule
	rules       []apiextensionsv1.ValidationRule // create-only rules on spec
}

// build assembles the CRD: ServiceInstance's spec fields, spec-level
// rules on them and status, a plan, the parameters and the rules.
func build(p crdParts) (*apiextensionsv1.CustomResourceDefinition, error) {
	si, err := serviceInstance()
	if err != nil {
		return nil, err
	}
	siVersion := si.Spec.Versions[0]
	siRoot := siVersion.Schema.OpenAPIV3Schema
	siSpec := siRoot.Properties["spec"]

	plan := apiextensionsv1.JSONSchemaProps{
		Type:        "string",
		MinLength:   ptr[int64](1),
		Description: "Plan is the name of the plan; lockstep's webhook checks that the broker's catalog has it. It may change where the broker allows plan changes.",
	}
	if p.planRule != nil {
		plan.XValidations = apiextensionsv1.ValidationRules{*p.planRule}
	}
	spec := apiextensionsv1.JSONSchemaProps{
		Type: "object",
		Description: fmt.Sprintf("The %s the user wants broker %q to hold, an instance of its service %q.",
			p.names.Kind, p.brokerName, p.serviceName),
		Properties: map[string]apiextensionsv1.JSONSchemaProps{"plan": plan, "parameters": p.parameters},
		Required:   []string{"plan"},
	}
	for _, name := range mirrored {
		prop, ok := siSpec.Properties[name]
		if !ok {
			return nil, fmt.Errorf("the ServiceInstance CRD has no spec.%s", name)
		}
		prop = *prop.DeepCopy()
		for i, r := range prop.XValidations {
			prop.XValidations[i] = renamed(r, p.names.Kind)
		}
		spec.Properties[name] = prop
	}
	for _, r := range siSpec.XValidations {
		if slices.Contains(mirrored, strings.TrimPrefix(r.FieldPath, ".")) {
			spec.XValidations = append(spec.XValidations, renamed(r, p.names.Kind))
		}
	}
	spec.XValidations = append(spec.XValidations, p.rules...)

	root := siRoot.DeepCopy()
	root.Description = p.description
	status := root.Properties["status"]
	status.Description = fmt.Sprintf("What the broker confirmed of the %s: as a ServiceInstance's status.", p.names.Kind)
	root.Properties["status"] = status
	root.Properties["spec"] = spec
	root.Required = []string{"spec"}

	printer := []apiextensionsv1.CustomResourceColumnDefinition{{Name: "Plan", Type: "string", JSONPath: ".spec.plan"}}
	for _, name := range columns {
		i := slices.IndexFunc(siVersion.AdditionalPrinterColumns, func(c apiextensionsv1.CustomResourceColumnDefinition) bool { return c.Name == name })
		if i < 0 {
			return nil, fmt.Errorf("the ServiceInstance CRD has no printer column %q", name)
		}
		printer = append(printer, siVersion.AdditionalPrinterColumns[i])
	}

	crd := &apiextensionsv1.CustomResourceDefinition{}
	crd.APIVersion, crd.Kind = "apiextensions.k8s.io/v1", "CustomResourceDefinition"
	crd.Name = p.names.CRDName()
	crd.Labels = map[string]string{LabelManagedBy: ManagedBy}
	crd.Annotations = map[string]string{
		AnnotationBroker: p.brokerName, AnnotationOfferingID: p.serviceID, AnnotationServiceName: p.serviceName,
	}
	for key, value := range map[string]string{LabelBroker: p.brokerName, LabelOfferingID: p.serviceID} {
		if labelValue(value) {
			crd.Labels[key] = value
		}
	}
	crd.Spec = apiextensionsv1.CustomResourceDefinitionSpec{
		Group: Group,
		Names: apiextensionsv1.CustomResourceDefinitionNames{
			Kind: p.names.Kind, ListKind: p.names.ListKind, Plural: p.names.Plural, Singular: p.names.Singular,
			ShortNames: p.names.ShortNames, Categories: slices.Clone(Categories),
		},
		Scope: apiextensionsv1.NamespaceScoped,
		Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{
			Name: Version, Served: true, Storage: true,
			Schema:                   &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: root},
			Subresources:             &apiextensionsv1.CustomResourceSubresources{Status: &apiextensionsv1.CustomResourceSubresourceStatus{}},
			AdditionalPrinterColumns: printer,
			SelectableFields:         slices.Clone(siVersion.SelectableFields),
		}},
	}
	return crd, nil
}

// renamed is a rule of ServiceInstance with its messages naming kind.
func renamed(r apiextensionsv1.ValidationRule, kind string) apiextensionsv1.ValidationRule {
	r.Message = strings.ReplaceAll(r.Message, "ServiceInstance", kind)
	r.MessageExpression = strings.ReplaceAll(r.MessageExpression, "ServiceInstance", kind)
	return r
}
