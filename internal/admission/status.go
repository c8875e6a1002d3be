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
// who could write it could make the cluster lie about the broker.
type StatusGuard struct {
	// Writers are the usernames allowed to write status: lockstep's own
	// identity, found at start, and any configured in addition.
	Writers map[string]bool
}

var _ admission.Handler = &StatusGuard{}

// Handle implements admission.Handler.
func (g *StatusGuard) Handle(_ context.Context, req admission.Request) admission.Response {
	if req.SubResource != "status" || g.Writers[req.UserInfo.Username] {
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
