package env

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"

	"github.com/lockstep-dev/lockstep/api/v1alpha1"
	"github.com/lockstep-dev/lockstep/internal/admission"
)

// SkipAdmissionLabel on a namespace with the value "true" makes the API
// server skip lockstep's serviceinstances webhooks there (the status guard
// still applies).
const SkipAdmissionLabel = "bench.lockstep.dev/skip-admission"

// The end-to-end baselines: copies of the ServiceInstance CRD in groups
// lockstep's webhooks do not match.
var (
	// PlainInstance is the ServiceInstance CRD without any webhook.
	PlainInstance = schema.GroupVersionKind{Group: "plain.bench.lockstep.dev", Version: "v1alpha1", Kind: "ServiceInstance"}
	// CELInstance is the ServiceInstance CRD whose create-only fields
	// (brokerName, serviceName, externalID) are CEL transition rules,
	// self == oldSelf, instead of a webhook.
	CELInstance = schema.GroupVersionKind{Group: "cel.bench.lockstep.dev", Version: "v1alpha1", Kind: "ServiceInstance"}
	// LockstepInstance is lockstep's own ServiceInstance.
	LockstepInstance = v1alpha1.GroupVersion.WithKind("ServiceInstance")
	// PlainBinding is the ServiceBinding CRD without any webhook, in
	// PlainInstance's group.
	PlainBinding = schema.GroupVersionKind{Group: PlainInstance.Group, Version: "v1alpha1", Kind: "ServiceBinding"}
	// LockstepBinding is lockstep's own ServiceBinding.
	LockstepBinding = v1alpha1.GroupVersion.WithKind("ServiceBinding")
	// AllowedInstance and AllowedBinding are the ServiceInstance and
	// ServiceBinding CRDs behind webhooks that allow everything at once
	// (bench/cmd/allow-all; see allowAllWebhooks): what kube-apiserver
	// pays for calling an admission webhook, without any admission work.
	AllowedInstance = schema.GroupVersionKind{Group: "allowed.bench.lockstep.dev", Version: "v1alpha1", Kind: "ServiceInstance"}
	AllowedBinding  = schema.GroupVersionKind{Group: AllowedInstance.Group, Version: "v1alpha1", Kind: "ServiceBinding"}
)

// createOnlyFields are the spec fields api/v1alpha1 tags createonly.
var createOnlyFields = []string{"brokerName", "serviceName", "externalID"}

// CELMessage is what the API server answers when a CEL rule refuses a
// change.
const CELMessage = "create-only field: it cannot be changed after creation"

// baselineCRDs reads lockstep's ServiceInstance and ServiceBinding CRDs
// from root/deploy/crds and returns the plain and CEL copies of the first
// and the plain copy of the second, then the copies of both behind the
// allow-all webhooks.
func baselineCRDs(root string) ([]*apiextensionsv1.CustomResourceDefinition, error) {
	instances, err := readCRD(root, "lockstep.dev_serviceinstances.yaml")
	if err != nil {
		return nil, err
	}
	bindings, err := readCRD(root, "lockstep.dev_servicebindings.yaml")
	if err != nil {
		return nil, err
	}
	copies := []struct {
		orig    *apiextensionsv1.CustomResourceDefinition
		group   string
		withCEL bool
	}{
		{instances, PlainInstance.Group, false},
		{instances, CELInstance.Group, true},
		{bindings, PlainBinding.Group, false},
		{instances, AllowedInstance.Group, false},
		{bindings, AllowedBinding.Group, false},
	}
	crds := make([]*apiextensionsv1.CustomResourceDefinition, 0, len(copies))
	for _, c := range copies {
		crd, err := copyCRD(c.orig, c.group, c.withCEL)
		if err != nil {
			return nil, err
		}
		crds = append(crds, crd)
	}
	return crds, nil
}

// allowAllWebhooks are the webhook configurations of AllowedInstance's
// group: kube-apiserver calls them as it calls lockstep's for lockstep's
// kinds (a mutating call on a create; a validating call on a create, an
// update and a delete), and url(path) answers every call at once. It is
// the least a synchronous admission that defaults fields on the server
// costs the API server, whatever the admission then does.
func allowAllWebhooks(url func(path string) string, ca []byte) (*admissionregistrationv1.MutatingWebhookConfiguration, *admissionregistrationv1.ValidatingWebhookConfiguration) {
	rules := func(ops ...admissionregistrationv1.OperationType) []admissionregistrationv1.RuleWithOperations {
		return []admissionregistrationv1.RuleWithOperations{{Operations: ops, Rule: admissionregistrationv1.Rule{
			APIGroups: []string{AllowedInstance.Group}, APIVersions: []string{AllowedInstance.Version},
			Resources: []string{"serviceinstances", "servicebindings"},
		}}}
	}
	client := func(path string) admissionregistrationv1.WebhookClientConfig {
		u := url(path)
		return admissionregistrationv1.WebhookClientConfig{URL: &u, CABundle: ca}
	}
	none, fail, timeout := admissionregistrationv1.SideEffectClassNone, admissionregistrationv1.Fail, int32(5)
	name := "bench-allow-all"
	mutating := &admissionregistrationv1.MutatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: name},
		Webhooks: []admissionregistrationv1.MutatingWebhook{{
			Name: "mutate." + AllowedInstance.Group, ClientConfig: client(admission.MutateInstancePath),
			Rules: rules(admissionregistrationv1.Create), SideEffects: &none, FailurePolicy: &fail, TimeoutSeconds: &timeout,
			AdmissionReviewVersions: []string{"v1"},
		}}}
	validating := &admissionregistrationv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: name},
		Webhooks: []admissionregistrationv1.ValidatingWebhook{{
			Name: "validate." + AllowedInstance.Group, ClientConfig: client(admission.ValidateBindingPath),
			Rules:       rules(admissionregistrationv1.Create, admissionregistrationv1.Update, admissionregistrationv1.Delete),
			SideEffects: &none, FailurePolicy: &fail, TimeoutSeconds: &timeout, AdmissionReviewVersions: []string{"v1"},
		}}}
	return mutating, validating
}

// readCRD decodes the CRD in root/deploy/crds/file.
func readCRD(root, file string) (*apiextensionsv1.CustomResourceDefinition, error) {
	path := filepath.Join(root, "deploy", "crds", file)
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading a CRD of deploy/crds: %w", err)
	}
	var crd apiextensionsv1.CustomResourceDefinition
	if err := yaml.Unmarshal(raw, &crd); err != nil {
		return nil, fmt.Errorf("decoding %s: %w", path, err)
	}
	return &crd, nil
}

// copyCRD moves a CRD to another group, without the CEL rules lockstep's
// CRD carries; withCEL adds self == oldSelf rules to the create-only spec
// fields, the rule a user would write by hand.
func copyCRD(orig *apiextensionsv1.CustomResourceDefinition, group string, withCEL bool) (*apiextensionsv1.CustomResourceDefinition, error) {
	crd := orig.DeepCopy()
	crd.ObjectMeta = metav1.ObjectMeta{Name: crd.Spec.Names.Plural + "." + group}
	crd.Spec.Group = group
	crd.Spec.Names.ShortNames, crd.Spec.Names.Categories = nil, nil
	for i := range crd.Spec.Versions {
		if s := crd.Spec.Versions[i].Schema; s != nil && s.OpenAPIV3Schema != nil {
			withoutRules(s.OpenAPIV3Schema)
		}
	}
	if !withCEL {
		return crd, nil
	}
	for i := range crd.Spec.Versions {
		v := &crd.Spec.Versions[i]
		if v.Schema == nil || v.Schema.OpenAPIV3Schema == nil {
			return nil, fmt.Errorf("CRD %s version %s has no schema", orig.Name, v.Name)
		}
		spec, ok := v.Schema.OpenAPIV3Schema.Properties["spec"]
		if !ok {
			return nil, fmt.Errorf("CRD %s version %s has no spec in its schema", orig.Name, v.Name)
		}
		for _, name := range createOnlyFields {
			prop, ok := spec.Properties[name]
			if !ok {
				return nil, fmt.Errorf("CRD %s version %s has no spec.%s", orig.Name, v.Name, name)
			}
			prop.XValidations = append(prop.XValidations, apiextensionsv1.ValidationRule{Rule: "self == oldSelf", Message: CELMessage})
			spec.Properties[name] = prop
		}
		v.Schema.OpenAPIV3Schema.Properties["spec"] = spec
	}
	return crd, nil
}

// webhookConfigs reads root/deploy/webhook/manifests.yaml and adds the
// SkipAdmissionLabel namespace selector to the serviceinstances webhooks.
func webhookConfigs(root string) ([]*admissionregistrationv1.MutatingWebhookConfiguration, []*admissionregistrationv1.ValidatingWebhookConfiguration, error) {
	path := filepath.Join(root, "deploy", "webhook", "manifests.yaml")
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, nil, fmt.Errorf("reading the webhook configurations: %w", err)
	}
	var (
		mutating   []*admissionregistrationv1.MutatingWebhookConfiguration
		validating []*admissionregistrationv1.ValidatingWebhookConfiguration
	)
	reader := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(raw)))
	for {
		doc, err := reader.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, nil, fmt.Errorf("reading %s: %w", path, err)
		}
		var meta metav1.TypeMeta
		if err := yaml.Unmarshal(doc, &meta); err != nil {
			return nil, nil, fmt.Errorf("decoding %s: %w", path, err)
		}
		switch meta.Kind {
		case "MutatingWebhookConfiguration":
			var c admissionregistrationv1.MutatingWebhookConfiguration
			if err := yaml.Unmarshal(doc, &c); err != nil {
				return nil, nil, fmt.Errorf("decoding %s: %w", path, err)
			}
			for i := range c.Webhooks {
				c.Webhooks[i].NamespaceSelector = skipSelector(c.Webhooks[i].NamespaceSelector, c.Webhooks[i].Rules)
			}
			mutating = append(mutating, &c)
		case "ValidatingWebhookConfiguration":
			var c admissionregistrationv1.ValidatingWebhookConfiguration
			if err := yaml.Unmarshal(doc, &c); err != nil {
				return nil, nil, fmt.Errorf("decoding %s: %w", path, err)
			}
			for i := range c.Webhooks {
				c.Webhooks[i].NamespaceSelector = skipSelector(c.Webhooks[i].NamespaceSelector, c.Webhooks[i].Rules)
			}
			validating = append(validating, &c)
		case "":
			continue // an empty document
		default:
			return nil, nil, fmt.Errorf("%s: unexpected kind %q", path, meta.Kind)
		}
	}
	if len(mutating) == 0 || len(validating) == 0 {
		return nil, nil, fmt.Errorf("%s: expected mutating and validating webhook configurations", path)
	}
	return mutating, validating, nil
}

// skipSelector adds `SkipAdmissionLabel notin (true)` to the selector of a
// webhook whose rules name serviceinstances.
func skipSelector(sel *metav1.LabelSelector, rules []admissionregistrationv1.RuleWithOperations) *metav1.LabelSelector {
	matches := false
	for _, r := range rules {
		if slices.Contains(r.Resources, "serviceinstances") {
			matches = true
		}
	}
	if !matches {
		return sel
	}
	if sel == nil {
		sel = &metav1.LabelSelector{}
	}
	sel.MatchExpressions = append(sel.MatchExpressions, metav1.LabelSelectorRequirement{
		Key: SkipAdmissionLabel, Operator: metav1.LabelSelectorOpNotIn, Values: []string{"true"},
	})
	return sel
}

// withoutRules removes every x-kubernetes-validations rule from a schema.
func withoutRules(s *apiextensionsv1.JSONSchemaProps) {
	s.XValidations = nil
	for k, p := range s.Properties {
		withoutRules(&p)
		s.Properties[k] = p
	}
	if s.Items != nil && s.Items.Schema != nil {
		withoutRules(s.Items.Schema)
	}
	if s.AdditionalProperties != nil && s.AdditionalProperties.Schema != nil {
		withoutRules(s.AdditionalProperties.Schema)
	}
}
