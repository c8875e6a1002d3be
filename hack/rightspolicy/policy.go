package main

import (
	"fmt"
	"regexp"
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/lockstep-dev/lockstep/api/v1alpha1"
	"github.com/lockstep-dev/lockstep/internal/controller/marketplace"
	"github.com/lockstep-dev/lockstep/internal/credentials"
	"github.com/lockstep-dev/lockstep/internal/typed/render"
)

// Username is lockstep's username, the one the policies match: its
// service account in its namespace (the chart's template makes that the
// release's).
func Username() string {
	return v1alpha1.ServiceAccountUser(v1alpha1.DefaultNamespace)
}

// objects are the policies and their bindings, a policy and its binding
// per kind, in the order they are written.
func objects() []any {
	var out []any
	for _, p := range []*admissionregistrationv1.ValidatingAdmissionPolicy{secrets(), crds(), clusterRoles()} {
		out = append(out, p, binding(p))
	}
	return out
}

// policy is a policy on lockstep's writes (create, update, delete) of
// resource in group, refused when any validation is false.
func policy(name, group, resource string, variables []admissionregistrationv1.Variable, validations ...admissionregistrationv1.Validation) *admissionregistrationv1.ValidatingAdmissionPolicy {
	for i := range validations {
		validations[i].Reason = ptr.To(metav1.StatusReasonForbidden)
	}
	version := "v1"
	return &admissionregistrationv1.ValidatingAdmissionPolicy{
		TypeMeta:   metav1.TypeMeta{APIVersion: admissionregistrationv1.SchemeGroupVersion.String(), Kind: "ValidatingAdmissionPolicy"},
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
			FailurePolicy: ptr.To(admissionregistrationv1.Fail),
			MatchConstraints: &admissionregistrationv1.MatchResources{
				ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{RuleWithOperations: admissionregistrationv1.RuleWithOperations{
					Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update, admissionregistrationv1.Delete},
					Rule:       admissionregistrationv1.Rule{APIGroups: []string{group}, APIVersions: []string{version}, Resources: []string{resource}},
				}}},
			},
			MatchConditions: []admissionregistrationv1.MatchCondition{{
				Name:       "lockstep",
				Expression: fmt.Sprintf("request.userInfo.username == %s", quote(Username())),
			}},
			Variables:   variables,
			Validations: validations,
		},
	}
}

// binding binds p to every namespace and object, refusing what it refuses.
func binding(p *admissionregistrationv1.ValidatingAdmissionPolicy) *admissionregistrationv1.ValidatingAdmissionPolicyBinding {
	return &admissionregistrationv1.ValidatingAdmissionPolicyBinding{
		TypeMeta:   metav1.TypeMeta{APIVersion: admissionregistrationv1.SchemeGroupVersion.String(), Kind: "ValidatingAdmissionPolicyBinding"},
		ObjectMeta: metav1.ObjectMeta{Name: p.Name},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{
			PolicyName:        p.Name,
			ValidationActions: []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny},
		},
	}
}

// Create, Delete: the operation of the request is one of them.
const (
	isCreate = "request.operation == 'CREATE'"
	isDelete = "request.operation == 'DELETE'"
)

// labelIs is a CEL expression: obj (object or oldObject) has the label
// key with the value.
func labelIs(obj, key, value string) string {
	return fmt.Sprintf("(has(%[1]s.metadata.labels) && %[2]s in %[1]s.metadata.labels && %[1]s.metadata.labels[%[2]s] == %[3]s)", obj, quote(key), quote(value))
}

// secrets: lockstep writes the Secrets of bindings (credentials.Write,
// Adopt, Delete): Opaque, labelled with the binding's UID when created,
// and only those so labelled or controlled by a ServiceBinding are
// changed or deleted. It may also create Opaque Secrets of its own
// configuration in its own namespace, which it never changes afterwards.
// None in kube-system: lockstep's webhooks admit no binding there, and a
// service-account-token Secret there is a token of any service account.
func secrets() *admissionregistrationv1.ValidatingAdmissionPolicy {
	label := quote(credentials.LabelBindingUID)
	return policy("lockstep-secret-writes", "", "secrets",
		[]admissionregistrationv1.Variable{
			{Name: "createdForBinding", Expression: fmt.Sprintf("has(object.metadata.labels) && %[1]s in object.metadata.labels && object.metadata.labels[%[1]s] != ''", label)},
			{Name: "bindingSecret", Expression: fmt.Sprintf("(has(oldObject.metadata.labels) && %[1]s in oldObject.metadata.labels && oldObject.metadata.labels[%[1]s] != '') || "+
				"(has(oldObject.metadata.ownerReferences) && oldObject.metadata.ownerReferences.exists(r, r.apiVersion.startsWith(%[2]s) && r.kind == 'ServiceBinding' && has(r.controller) && r.controller))",
				label, quote(v1alpha1.GroupVersion.Group+"/"))},
		},
		admissionregistrationv1.Validation{
			Expression: fmt.Sprintf("request.namespace != %s", quote(metav1.NamespaceSystem)),
			Message:    "lockstep writes no Secret in kube-system: its webhooks admit no ServiceBinding there",
		},
		admissionregistrationv1.Validation{
			Expression: fmt.Sprintf("%s || !has(object.type) || object.type == %s", isDelete, quote(string(corev1.SecretTypeOpaque))),
			Message:    "lockstep writes only Secrets of type Opaque: the credentials of ServiceBindings, its own configuration",
		},
		admissionregistrationv1.Validation{
			Expression: fmt.Sprintf("!(%s) || variables.createdForBinding || request.namespace == %s", isCreate, quote(v1alpha1.DefaultNamespace)),
			Message: fmt.Sprintf("lockstep creates only the Secrets of ServiceBindings, labelled %s, and Secrets of its own namespace (%s)",
				credentials.LabelBindingUID, v1alpha1.DefaultNamespace),
		},
		admissionregistrationv1.Validation{
			Expression: fmt.Sprintf("%s || variables.bindingSecret", isCreate),
			Message: fmt.Sprintf("lockstep changes and deletes only the Secrets it wrote for ServiceBindings (labelled %s, or controlled by a ServiceBinding)",
				credentials.LabelBindingUID),
		},
	)
}

// crds: lockstep writes the CRDs of typed kinds only (marketplace's
// apply, retiring mark and delete): in their group, labelled as
// lockstep's, with no conversion webhook, which would send every object
// of the kind wherever its clientConfig says.
func crds() *admissionregistrationv1.ValidatingAdmissionPolicy {
	group := quote(render.Group)
	return policy("lockstep-crd-writes", "apiextensions.k8s.io", "customresourcedefinitions", nil,
		admissionregistrationv1.Validation{
			Expression: fmt.Sprintf("%s || (object.spec.group == %s && %s)", isDelete, group, labelIs("object", render.LabelManagedBy, render.ManagedBy)),
			Message: fmt.Sprintf("lockstep writes only the CustomResourceDefinitions of typed kinds: group %s, labelled %s=%s",
				render.Group, render.LabelManagedBy, render.ManagedBy),
		},
		admissionregistrationv1.Validation{
			Expression: fmt.Sprintf("%s || (oldObject.spec.group == %s && %s)", isCreate, group, labelIs("oldObject", render.LabelManagedBy, render.ManagedBy)),
			Message: fmt.Sprintf("lockstep changes and deletes only the CustomResourceDefinitions of typed kinds it created: group %s, labelled %s=%s",
				render.Group, render.LabelManagedBy, render.ManagedBy),
		},
		admissionregistrationv1.Validation{
			Expression: fmt.Sprintf("%s || !has(object.spec.conversion) || object.spec.conversion.strategy == 'None'", isDelete),
			Message:    "the CustomResourceDefinitions of typed kinds have no conversion webhook",
		},
	)
}

// rolePattern matches the name of a typed kind's ClusterRole: the kind's
// plural (a CRD's plural is an RFC 1123 label) and the role's access.
func rolePattern() string {
	var access []string
	for _, r := range marketplace.KindRoles {
		access = append(access, r.Access)
	}
	return "^" + regexp.QuoteMeta(marketplace.RolePrefix) + "[a-z0-9]([-a-z0-9]*[a-z0-9])?:(" + strings.Join(access, "|") + ")$"
}

// clusterRoles: lockstep writes a typed kind's edit and view ClusterRoles
// only (marketplace's applyRoles, deleteRoles): labelled as lockstep's,
// each granting no more than marketplace.KindRoles says on that kind
// alone, with no aggregationRule, and with no label that aggregates it
// anywhere but into the standard roles KindRoles names for it.
func clusterRoles() *admissionregistrationv1.ValidatingAdmissionPolicy {
	verbs, aggregation := "[]", "[]"
	var allowed []string
	for _, r := range marketplace.KindRoles {
		allowed = append(allowed, fmt.Sprintf("%s (%s)", strings.Join(r.AggregateTo, ", "), r.Access))
	}
	for i := len(marketplace.KindRoles) - 1; i >= 0; i-- {
		r := marketplace.KindRoles[i]
		cond := fmt.Sprintf("request.name.endsWith(%s)", quote(":"+r.Access))
		verbs = fmt.Sprintf("%s ? %s : %s", cond, list(r.Verbs), verbs)
		aggregation = fmt.Sprintf("%s ? %s : %s", cond, list(r.AggregateTo), aggregation)
	}
	group := quote(render.Group)
	return policy("lockstep-clusterrole-writes", "rbac.authorization.k8s.io", "clusterroles",
		[]admissionregistrationv1.Variable{
			{Name: "kindRole", Expression: fmt.Sprintf("request.name.matches(%s)", quote(rolePattern()))},
			{Name: "plural", Expression: "request.name.split(':')[2]"},
			{Name: "verbs", Expression: verbs},
			{Name: "aggregation", Expression: aggregation},
		},
		admissionregistrationv1.Validation{
			Expression: "variables.kindRole",
			Message:    fmt.Sprintf("lockstep writes only the ClusterRoles of typed kinds: %s<plural>:edit and :view", marketplace.RolePrefix),
		},
		admissionregistrationv1.Validation{
			Expression: fmt.Sprintf("%s || %s", isDelete, labelIs("object", render.LabelManagedBy, render.ManagedBy)),
			Message:    fmt.Sprintf("the ClusterRoles lockstep writes are labelled %s=%s", render.LabelManagedBy, render.ManagedBy),
		},
		admissionregistrationv1.Validation{
			Expression: fmt.Sprintf("%s || %s", isCreate, labelIs("oldObject", render.LabelManagedBy, render.ManagedBy)),
			Message:    fmt.Sprintf("lockstep changes and deletes only the ClusterRoles it created (labelled %s=%s)", render.LabelManagedBy, render.ManagedBy),
		},
		admissionregistrationv1.Validation{
			Expression: fmt.Sprintf("%s || !has(object.aggregationRule)", isDelete),
			Message:    "the ClusterRoles of typed kinds have no aggregationRule",
		},
		admissionregistrationv1.Validation{
			Expression: fmt.Sprintf("%s || !variables.kindRole || !has(object.rules) || object.rules.all(r, "+
				"has(r.apiGroups) && r.apiGroups == [%s] && (!has(r.nonResourceURLs) || size(r.nonResourceURLs) == 0) && has(r.resources) && has(r.verbs) && "+
				"r.resources.all(res, res == variables.plural ? r.verbs.all(v, v in variables.verbs) : (res == variables.plural + '/status' && r.verbs.all(v, v in %s))))",
				isDelete, group, list(marketplace.StatusVerbs)),
			Message: fmt.Sprintf("a typed kind's ClusterRole grants only what its access (edit or view) grants, on that kind's objects and their status in %s", render.Group),
		},
		admissionregistrationv1.Validation{
			Expression: fmt.Sprintf("%s || !variables.kindRole || !has(object.metadata.labels) || object.metadata.labels.all(k, k == %s || k.startsWith(%s) || k in variables.aggregation)",
				isDelete, quote(render.LabelManagedBy), quote(render.Group+"/")),
			Message: fmt.Sprintf("a typed kind's ClusterRole carries lockstep's labels and no aggregation label but %s", strings.Join(allowed, " or ")),
		},
	)
}

// quote is s as a CEL string literal.
func quote(s string) string {
	return "'" + strings.NewReplacer(`\`, `\\`, "'", `\'`).Replace(s) + "'"
}

// list is ss as a CEL list of strings.
func list(ss []string) string {
	q := make([]string, len(ss))
	for i, s := range ss {
		q[i] = quote(s)
	}
	return "[" + strings.Join(q, ", ") + "]"
}
