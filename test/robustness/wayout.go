package robustness

import (
	"context"
	"fmt"
	"regexp"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/lockstep-dev/lockstep/api/v1alpha1"
	"github.com/lockstep-dev/lockstep/test/robustness/history"
)

// wayOutCommand is the command a refusal names to delete an object
// without its broker.
var wayOutCommand = regexp.MustCompile(`kubectl annotate (serviceinstance|servicebinding) (\S+) -n (\S+) ` + regexp.QuoteMeta(v1alpha1.AnnotationReconcilePolicy) + `=([a-z-]+)`)

// followWayOuts does what a person does with a namespace that stays
// Terminating: reads its conditions (the namespace controller quotes the
// refusals there) and runs the command a refusal names. It returns how
// many it ran.
func (t *traffic) followWayOuts(ctx context.Context) int {
	var namespaces corev1.NamespaceList
	if err := t.env.admin.List(ctx, &namespaces); err != nil {
		return 0
	}
	ran := 0
	for _, ns := range namespaces.Items {
		if ns.DeletionTimestamp == nil || !strings.HasPrefix(ns.Name, namespacePrefix) {
			continue
		}
		for _, c := range ns.Status.Conditions {
			for _, m := range wayOutCommand.FindAllStringSubmatch(c.Message, -1) {
				if t.annotate(ctx, m[1], m[3], m[2], v1alpha1.ReconcilePolicy(m[4])) {
					ran++
				}
			}
		}
	}
	return ran
}

// annotate sets an object's reconcile policy, as kubectl annotate does.
func (t *traffic) annotate(ctx context.Context, kind, namespace, name string, policy v1alpha1.ReconcilePolicy) bool {
	var obj client.Object = &v1alpha1.ServiceInstance{}
	if kind == "servicebinding" {
		obj = &v1alpha1.ServiceBinding{}
	}
	if err := t.env.admin.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, obj); err != nil {
		return false
	}
	if p, _ := v1alpha1.PolicyOf(obj); p == policy {
		return false
	}
	externalID := ""
	switch o := obj.(type) {
	case *v1alpha1.ServiceInstance:
		externalID = o.Spec.ExternalID
	case *v1alpha1.ServiceBinding:
		externalID = o.Spec.ExternalID
	}
	patch := client.RawPatch(types.MergePatchType, fmt.Appendf(nil, `{"metadata":{"annotations":{%q:%q}}}`, v1alpha1.AnnotationReconcilePolicy, policy))
	t.operator.request(ctx, &history.Request{Kind: history.FollowWayOut, Object: objectName(obj), Namespace: namespace, ExternalID: externalID,
		Policy: policy, Detail: fmt.Sprintf("kubectl annotate %s %s -n %s %s=%s, as the Terminating namespace's condition says", kind, name, namespace, v1alpha1.AnnotationReconcilePolicy, policy)},
		func(ctx context.Context) error { return t.env.users.Patch(ctx, obj, patch) })
	return true
}
