package admission

// The preflight tries a change first as a server-side dry run of the same
// request, as lockstep: creating, updating or deleting a ServiceInstance or
// a ServiceBinding (an object of a typed kind lockstep holds every verb
// on) with dryRun=All. Kubernetes RBAC has no verb for a dry run alone, so
// the ClusterRole grants create and update.
//
// +kubebuilder:rbac:groups=lockstep.dev,resources=serviceinstances;servicebindings,verbs=create;update

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/go-logr/logr"
	admissionv1 "k8s.io/api/admission/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/lockstep-dev/lockstep/api/v1alpha1"
)

// PreflightOptions say when lockstep tries a change first as a dry run.
type PreflightOptions struct {
	// On is the cluster-wide default (LOCKSTEP_PREFLIGHT); a
	// ServiceBroker's spec.preflight overrides it for its broker.
	On bool
	// Client makes the dry runs; nil makes none.
	Client dynamic.Interface
	// Self is lockstep's own user name: a dry run by it is its own
	// preflight, which its validating webhooks allow at once.
	Self string
}

// FieldManager names lockstep's preflight dry runs.
const FieldManager = "lockstep-preflight"

// preflight tries the change a request asks for, before the broker is
// called, as a server-side dry run of the same request by lockstep: the
// API server runs it through the rest of admission (the other validating
// webhooks, whose sideEffects must be None or NoneOnDryRun, policy
// engines, ResourceQuota) and storage's own checks, and changes nothing.
// A refusal there is the request's answer, and nothing is sent to the
// broker. lockstep's own validating webhooks recognise the dry run
// (dryRun, lockstep's user) and allow it at once, so it neither recurses
// nor costs a second check.
//
// The dry run is lockstep's, not the requester's: a policy that decides by
// the user sees lockstep's service account (docs/quotas.md says what that
// changes). When the dry run cannot be made at all (a webhook that does
// not support dry runs, the API server busy), the change goes on as
// without the preflight, with a warning.
type preflight[T client.Object] struct {
	opts PreflightOptions
	// brokers reads the ServiceBrokers (the cache), for their
	// spec.preflight.
	brokers client.Reader
	log     logr.Logger
}

func (p *preflight[T]) Name() string { return "preflight" }

func (p *preflight[T]) Admit(ctx context.Context, a *Attributes[T], t *Target) (admission.Warnings, error) {
	if p.opts.Client == nil || t.Entry == nil || !p.on(ctx, t.Entry.Broker) {
		return nil, nil
	}
	if a.Operation == admissionv1.Delete && a.Old.GetDeletionTimestamp() != nil {
		// A delete again: the object's first delete was let through.
		return nil, nil
	}
	req, err := admission.RequestFromContext(ctx)
	if err != nil {
		return nil, nil
	}
	err = p.try(ctx, req)
	if err == nil {
		return nil, nil
	}
	what := map[admissionv1.Operation]string{admissionv1.Create: "create", admissionv1.Update: "change", admissionv1.Delete: "delete"}[a.Operation]
	if refusal, ok := refusedInPreflight(err, p.opts.Self); ok {
		stays := map[admissionv1.Operation]string{admissionv1.Create: "nothing was created", admissionv1.Update: "nothing was changed",
			admissionv1.Delete: "nothing was deleted"}[a.Operation]
		status := refusal.Status()
		status.Message = fmt.Sprintf("%s; lockstep tried this %s first as a dry run (its preflight), and the API server refused it: %s and the broker was not called",
			strings.TrimSuffix(status.Message, "."), what, stays)
		return nil, &apierrors.StatusError{ErrStatus: status}
	}
	p.log.Info("the preflight could not try the change; going on without it", "object", client.ObjectKeyFromObject(a.Object()).String(),
		"operation", string(a.Operation), "error", err.Error())
	return admission.Warnings{fmt.Sprintf("lockstep could not try this %s first as a dry run (%v); should the API server refuse it after lockstep, "+
		"lockstep undoes at the broker what it carried out", what, err)}, nil
}

// on reports whether broker's changes are tried first.
func (p *preflight[T]) on(ctx context.Context, broker string) bool {
	var sb v1alpha1.ServiceBroker
	if err := p.brokers.Get(ctx, client.ObjectKey{Name: broker}, &sb); err == nil && sb.Spec.Preflight != nil {
		return *sb.Spec.Preflight
	}
	return p.opts.On
}

// try makes the dry run of req's change.
func (p *preflight[T]) try(ctx context.Context, req admission.Request) error {
	gvr := schema.GroupVersionResource{Group: req.Resource.Group, Version: req.Resource.Version, Resource: req.Resource.Resource}
	r := p.opts.Client.Resource(gvr).Namespace(req.Namespace)
	dryRun := []string{metav1.DryRunAll}
	switch req.Operation {
	case admissionv1.Create, admissionv1.Update:
		u := &unstructured.Unstructured{}
		if err := u.UnmarshalJSON(req.Object.Raw); err != nil {
			return fmt.Errorf("reading the object: %w", err)
		}
		u.SetManagedFields(nil)
		if req.Operation == admissionv1.Create {
			// As the request has them before the API server sets them.
			u.SetUID("")
			u.SetResourceVersion("")
			u.SetCreationTimestamp(metav1.Time{})
			u.SetGeneration(0)
			_, err := r.Create(ctx, u, metav1.CreateOptions{DryRun: dryRun, FieldManager: FieldManager})
			return err
		}
		_, err := r.Update(ctx, u, metav1.UpdateOptions{DryRun: dryRun, FieldManager: FieldManager})
		return err
	case admissionv1.Delete:
		old := &unstructured.Unstructured{}
		if err := old.UnmarshalJSON(req.OldObject.Raw); err != nil {
			return fmt.Errorf("reading the object: %w", err)
		}
		uid := old.GetUID()
		return r.Delete(ctx, req.Name, metav1.DeleteOptions{DryRun: dryRun, Preconditions: &metav1.Preconditions{UID: &uid}})
	}
	return nil
}

// refusedInPreflight reports whether err, the answer to a preflight, is a
// refusal the request itself would get: a 4xx (another webhook's or a
// policy's denial, a quota, a conflict, an object gone), or a webhook the
// API server could not call (failurePolicy Fail). What refuses lockstep
// rather than the change is not: a webhook that does not support dry
// runs, lockstep's own missing rights (self), its credentials, the API
// server shedding load. Then the preflight cannot judge, and the change
// goes on.
func refusedInPreflight(err error, self string) (apierrors.APIStatus, bool) {
	var status apierrors.APIStatus
	if !errors.As(err, &status) {
		return nil, false
	}
	s := status.Status()
	switch {
	case strings.Contains(s.Message, "does not support dry run"):
		return nil, false
	case s.Code == http.StatusForbidden && self != "" && strings.Contains(s.Message, fmt.Sprintf("User %q cannot ", self)):
		return nil, false
	case s.Code == http.StatusUnauthorized, s.Code == http.StatusRequestTimeout, s.Code == http.StatusTooManyRequests:
		return nil, false
	case s.Code >= 400 && s.Code < 500:
		return status, true
	case s.Code == http.StatusInternalServerError && strings.Contains(s.Message, "failed calling webhook"):
		return status, true
	}
	return nil, false
}

// ownPreflight reports whether req is one of lockstep's preflights: a dry
// run by lockstep itself, and for a create or an update one that names
// lockstep's preflight as its field manager (whoever shares lockstep's
// identity, as a test's client may, is still checked on its own dry runs).
func ownPreflight(req admission.Request, self string) bool {
	if self == "" || req.DryRun == nil || !*req.DryRun || req.UserInfo.Username != self {
		return false
	}
	if req.Operation == admissionv1.Delete {
		return true
	}
	var options struct {
		FieldManager string `json:"fieldManager"`
	}
	return json.Unmarshal(req.Options.Raw, &options) == nil && options.FieldManager == FieldManager
}
