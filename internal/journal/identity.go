package journal

import (
	authenticationv1 "k8s.io/api/authentication/v1"

	"github.com/lockstep-dev/lockstep/internal/osbclient"
)

// Identity turns the requester's user info into the OSB originating
// identity of the Kubernetes platform profile.
func Identity(u authenticationv1.UserInfo) osbclient.Identity {
	id := osbclient.Identity{Username: u.Username, UID: u.UID, Groups: u.Groups}
	if len(u.Extra) > 0 {
		id.Extra = make(map[string][]string, len(u.Extra))
		for k, v := range u.Extra {
			id.Extra[k] = []string(v)
		}
	}
	return id
}
