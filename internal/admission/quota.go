package admission

// kube-apiserver charges every create to the ResourceQuotas of its
// namespace after the webhooks allowed it; lockstep decides the same
// before its broker call, from the quotas in its cache (list, watch, in
// every namespace).
//
// +kubebuilder:rbac:groups="",resources=resourcequotas,verbs=list;watch

import (
	"context"
	"fmt"
	"net/http"
	"strings"

	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/lockstep-dev/lockstep/internal/quota"
)

// resourceQuotas refuses a create that kube-apiserver's ResourceQuota
// admission would refuse after lockstep allowed it, before the broker is
// called, with kube-apiserver's status (403 Forbidden) and words, and
// what they mean: the quota, its limit and its use, and that the broker
// was not called. It counts objects as kube-apiserver does
// (count/<resource>.<group> of the resource the request names, so that
// an object of a typed kind counts as its own resource), from the
// quotas in the cache and the creates this replica has in flight
// (quota.InFlight). A dry run is checked too, and holds nothing.
type resourceQuotas[T client.Object] struct {
	// quotas reads ResourceQuotas (the manager's cache); nil checks
	// nothing.
	quotas client.Reader
	// inFlight counts the creates this replica is deciding or has just
	// allowed.
	inFlight *quota.InFlight
	// resource and kind are the chain's own, for a request that does not
	// name them (tests).
	resource schema.GroupResource
	kind     schema.GroupKind
}

func (l *resourceQuotas[T]) Name() string { return "resource-quota" }

func (l *resourceQuotas[T]) Limit(ctx context.Context, a *Attributes[T], _ *Target) (func(bool), error) {
	if a.Operation != admissionv1.Create || l.quotas == nil {
		return nil, nil
	}
	obj := a.New
	var quotas corev1.ResourceQuotaList
	if err := l.quotas.List(ctx, &quotas, client.InNamespace(obj.GetNamespace())); err != nil {
		return nil, unavailable("could not read the ResourceQuotas of namespace %q, which the API server checks this create against after lockstep: %v; "+
			"nothing was created and the broker was not called: retry", obj.GetNamespace(), err)
	}
	if len(quotas.Items) == 0 {
		return nil, nil
	}
	gr, kind := l.resource, ""
	if req, err := admission.RequestFromContext(ctx); err == nil && req.Resource.Resource != "" {
		gr, kind = schema.GroupResource{Group: req.Resource.Group, Resource: req.Resource.Resource}, req.Kind.Kind
	}
	if kind == "" {
		kind = objectKind(obj, l.kind).Kind
	}
	release, refusal := l.inFlight.Admit(quotas.Items, quota.ResourceName(gr), !a.DryRun)
	if refusal != nil {
		return nil, quotaRefusal(gr, kind, obj, refusal)
	}
	return release, nil
}

// quotaRefusal is kube-apiserver's refusal (403, its message first, so
// that whatever reads its words finds them), followed by what it means.
func quotaRefusal(gr schema.GroupResource, kind string, obj client.Object, r *quota.Refusal) error {
	var msg strings.Builder
	msg.WriteString(r.Error())
	ns := obj.GetNamespace()
	if r.Unknown {
		fmt.Fprintf(&msg, ": ResourceQuota %q of namespace %q limits %s, and records no use of them yet, so the API server would refuse this create after lockstep; "+
			"nothing was created and the broker was not called: retry once the resource quota controller has counted them (kubectl describe quota %s -n %s)",
			r.Quota, ns, gr.String(), r.Quota, ns)
	} else {
		fmt.Fprintf(&msg, ": ResourceQuota %q of namespace %q limits %s to %s and counts %s in use", r.Quota, ns, gr.String(), r.Hard.String(), r.Used.String())
		if r.InFlight > 0 {
			fmt.Fprintf(&msg, " (and %d more being created)", r.InFlight)
		}
		fmt.Fprintf(&msg, ", so the API server would refuse this create after lockstep; nothing was created and the broker was not called; "+
			"delete a %s of this namespace first, or ask a cluster administrator to raise the quota (kubectl describe quota %s -n %s)", kind, r.Quota, ns)
	}
	return &apierrors.StatusError{ErrStatus: metav1.Status{
		Status: metav1.StatusFailure, Code: http.StatusForbidden, Reason: metav1.StatusReasonForbidden,
		Details: &metav1.StatusDetails{Group: gr.Group, Kind: gr.Resource, Name: obj.GetName()},
		Message: msg.String(),
	}}
}
