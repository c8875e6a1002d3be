package admission

import (
	"context"
	"fmt"
	"net/http"
	"sort"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
)

// StatusGuard refuses changes to the status of lockstep's objects by anyone
// but lockstep itself: status says what the broker confirmed, and a user
// who could write it could make the cluster lie about the broker. The
// operation records (BrokerOperation) have no status subresource (each is
// written once, with its answer): no one but lockstep creates or changes
// one at all. Deleting a record stays open to whoever RBAC lets.
type StatusGuard struct {
	// Writers are the usernames allowed to write status: lockstep's own
	// identity, found at start, and any configured in addition.
	Writers map[string]bool
}

var _ admission.Handler = &StatusGuard{}

// Handle implements admission.Handler.
func (g *StatusGuard) Handle(_ context.Context, req admission.Request) admission.Response {
	if g.Writers[req.UserInfo.Username] {
		return admission.Allowed("")
	}
	if req.Resource.Resource == "brokeroperations" && req.SubResource == "" {
		return admission.Response{AdmissionResponse: admissionResponse(http.StatusForbidden, metav1.StatusReasonForbidden, fmt.Sprintf(
			"the operation record %q is written by lockstep only, with what the broker answered; user %q may read or delete records, not %s them (lockstep's identity: %s)",
			req.Name, req.UserInfo.Username, strings.ToLower(string(req.Operation)), g.writers()))}
	}
	if req.SubResource != "status" {
		return admission.Allowed("")
	}
	return admission.Response{AdmissionResponse: admissionResponse(http.StatusForbidden, metav1.StatusReasonForbidden, fmt.Sprintf(
		"the status of %s %q is written by lockstep only, from what the broker confirmed; user %q may change the spec instead (lockstep's identity: %s)",
		req.Kind.Kind, req.Name, req.UserInfo.Username, g.writers()))}
}

func (g *StatusGuard) writers() string {
	names := make([]string, 0, len(g.Writers))
	for n := range g.Writers {
		names = append(names, n)
	}
	sort.Strings(names)
	return strings.Join(names, ", ")
}
