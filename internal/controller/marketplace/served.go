package marketplace

import (
	"context"
	"fmt"

	"k8s.io/client-go/discovery"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/lockstep-dev/lockstep/internal/typed/render"
)

// servedNames are the names of the resources the API server serves
// outside the group of typed kinds (render.ServedNames), read from its
// discovery when a claim wants a kind: no new typed kind takes one of
// them, and no kind a short name one of them has. A group whose
// discovery fails is left out (the others are read); only when none can
// be read is it an error, and the pass runs again.
func (s *sync) servedNames(ctx context.Context, claims []*claim) (render.Taken, error) {
	if s.discovery == nil || len(claims) == 0 {
		return nil, nil
	}
	_, lists, err := s.discovery.ServerGroupsAndResources()
	if err != nil {
		if len(lists) == 0 || !discovery.IsGroupDiscoveryFailedError(err) {
			return nil, fmt.Errorf("reading the API server's discovery, to keep the typed kinds' names apart from the resources it serves: %w", err)
		}
		log.FromContext(ctx).Info("some API groups could not be read from discovery; the typed kinds' names are checked against the others", "error", err.Error())
	}
	return render.ServedNames(lists), nil
}
