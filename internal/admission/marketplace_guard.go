package admission

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sort"
	"strings"

	admissionv1 "k8s.io/api/admission/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/lockstep-dev/lockstep/api/v1alpha1"
)

// MarketplaceGuard refuses every write to ServiceOfferings and ServicePlans
// (create, update, status, delete) by anyone but lockstep: they show what a
// broker's catalog says, and only the catalog sync writes them. The check
// is by identity, so it holds for cluster administrators too. One write is
// let through from anyone: to an object whose owning ServiceBroker is gone
// or being deleted, so that the garbage collector can delete (or orphan)
// what the broker's catalog wrote.
type MarketplaceGuard struct {
	// Writers are the usernames allowed to write: lockstep's own identity,
	// found at start, and LOCKSTEP_STATUS_WRITERS.
	Writers map[string]bool
	// Brokers reads ServiceBrokers, uncached (a broker just deleted must
	// read as gone).
	Brokers client.Reader
}

var _ admission.Handler = &MarketplaceGuard{}

// marketplaceObject is what the guard reads of a ServiceOffering or
// ServicePlan.
type marketplaceObject struct {
	Metadata struct {
		OwnerReferences []metav1.OwnerReference `json:"ownerReferences"`
	} `json:"metadata"`
	Spec struct {
		BrokerName string `json:"brokerName"`
	} `json:"spec"`
}

// Handle implements admission.Handler.
func (g *MarketplaceGuard) Handle(ctx context.Context, req admission.Request) admission.Response {
	if g.Writers[req.UserInfo.Username] {
		return admission.Allowed("")
	}
	raw := req.Object.Raw
	if req.Operation == admissionv1.Delete || len(raw) == 0 {
		raw = req.OldObject.Raw
	}
	var obj marketplaceObject
	if len(raw) > 0 {
		if err := json.Unmarshal(raw, &obj); err != nil {
			return admission.Errored(http.StatusBadRequest, fmt.Errorf("decoding %s %q: %w", req.Kind.Kind, req.Name, err))
		}
	}
	if req.Operation != admissionv1.Create {
		gone, err := g.ownerGone(ctx, obj)
		if err != nil {
			return admission.Errored(http.StatusServiceUnavailable, fmt.Errorf(
				"could not read the ServiceBroker that owns %s %q: %w; nothing was changed: retry", req.Kind.Kind, req.Name, err))
		}
		if gone {
			return admission.Allowed("the owning ServiceBroker is gone or being deleted")
		}
	}
	return admission.Response{AdmissionResponse: admissionResponse(http.StatusForbidden, metav1.StatusReasonForbidden,
		g.refusal(req, obj.Spec.BrokerName))}
}

// ownerGone reports whether the ServiceBroker that owns obj no longer
// exists, is another one by now, or is being deleted.
func (g *MarketplaceGuard) ownerGone(ctx context.Context, obj marketplaceObject) (bool, error) {
	for _, ref := range obj.Metadata.OwnerReferences {
		if ref.Kind != "ServiceBroker" || ref.APIVersion != v1alpha1.GroupVersion.String() {
			continue
		}
		var sb v1alpha1.ServiceBroker
		err := g.Brokers.Get(ctx, client.ObjectKey{Name: ref.Name}, &sb)
		if apierrors.IsNotFound(err) {
			return true, nil
		}
		if err != nil {
			return false, err
		}
		return sb.UID != ref.UID || sb.DeletionTimestamp != nil, nil
	}
	return false, nil
}

// refusal says who writes these objects and what to do instead.
func (g *MarketplaceGuard) refusal(req admission.Request, broker string) string {
	kind := req.Kind.Kind + "s"
	from := "a broker's catalog"
	if broker != "" {
		from = fmt.Sprintf("broker %q's catalog", broker)
	}
	verb := map[admissionv1.Operation]string{admissionv1.Create: "create", admissionv1.Update: "change", admissionv1.Delete: "delete"}[req.Operation]
	if req.SubResource == "status" {
		verb = "change the status of"
	}
	return fmt.Sprintf("%s are written by lockstep from %s; user %q may not %s them (lockstep's identity: %s). "+
		"They change when the broker's catalog does; to remove a broker's offerings and plans, delete its ServiceBroker",
		kind, from, req.UserInfo.Username, verb, g.writers())
}

func (g *MarketplaceGuard) writers() string {
	names := make([]string, 0, len(g.Writers))
	for n := range g.Writers {
		names = append(names, n)
	}
	sort.Strings(names)
	return strings.Join(names, ", ")
}
