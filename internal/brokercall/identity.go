package brokercall

import (
	authenticationv1 "k8s.io/api/authentication/v1"

	"github.com/lockstep-dev/lockstep/internal/broker/osbclient"
)

// The extra entries of the originating identity of a call lockstep makes
// on its own: on whose behalf, and why.
const (
	// ExtraOnBehalfOf names the user whose change the call completes,
	// corrects or undoes.
	ExtraOnBehalfOf = "lockstep.dev/on-behalf-of"
	// ExtraReason says why lockstep makes the call (see the Reason
	// constants).
	ExtraReason = "lockstep.dev/reason"
)

// Why lockstep calls a broker on its own.
const (
	// ReasonCorrection: resync found drift and applies the object's spec
	// again.
	ReasonCorrection = "drift correction"
	// ReasonCompensation: the operations reconciler undoes or completes an
	// operation whose change the API server did not persist.
	ReasonCompensation = "compensation"
	// ReasonOrphanMitigation: a provision or bind may have left something
	// at the broker that the cluster does not hold.
	ReasonOrphanMitigation = "orphan mitigation"
	// ReasonFollow: the operations reconciler asks how an operation ended.
	ReasonFollow = "follow-up"
	// ReasonFinalizer: an object's delete bypassed admission, and its
	// finalizer deprovisions or unbinds it.
	ReasonFinalizer = "finalizer"
	// ReasonResync: resync reads the object to compare it.
	ReasonResync = "resync"
)

// Who is who a broker call is made for: the user who asks, or lockstep
// itself on someone's behalf.
type Who struct {
	// User asks: the requester of an admission, or lockstep's own
	// identity for the calls it makes on its own.
	User authenticationv1.UserInfo
	// OnBehalfOf names the user whose change a call of lockstep's own
	// completes, corrects or undoes; empty when nobody's (a delete that
	// bypassed admission).
	OnBehalfOf string
	// Reason says why lockstep makes a call on its own; empty for a
	// user's own call.
	Reason string
}

// Requester is a user's own call.
func Requester(u authenticationv1.UserInfo) Who { return Who{User: u} }

// Lockstep is a call lockstep makes on its own, for reason, on behalf of
// user ("" when nobody's).
func (p *Protocol) Lockstep(user, reason string) Who {
	return Who{User: p.Self, OnBehalfOf: user, Reason: reason}
}

// userInfo is who the call names: the user, with on whose behalf and why
// among its extra entries when lockstep makes it on its own.
func (w Who) userInfo() authenticationv1.UserInfo {
	u := *w.User.DeepCopy()
	if w.Reason == "" && w.OnBehalfOf == "" {
		return u
	}
	if u.Extra == nil {
		u.Extra = map[string]authenticationv1.ExtraValue{}
	}
	if w.OnBehalfOf != "" {
		u.Extra[ExtraOnBehalfOf] = authenticationv1.ExtraValue{w.OnBehalfOf}
	}
	if w.Reason != "" {
		u.Extra[ExtraReason] = authenticationv1.ExtraValue{w.Reason}
	}
	return u
}

// identity is the OSB originating identity of the Kubernetes platform
// profile for w.
func (w Who) identity() osbclient.Identity {
	u := w.userInfo()
	id := osbclient.Identity{Username: u.Username, UID: u.UID, Groups: u.Groups}
	if len(u.Extra) > 0 {
		id.Extra = make(map[string][]string, len(u.Extra))
		for k, v := range u.Extra {
			id.Extra[k] = []string(v)
		}
	}
	return id
}

// meta is what travels with every request of one operation: who asks and
// the operation's id.
func (w Who) meta(requestID string) osbclient.RequestMeta {
	return osbclient.RequestMeta{Identity: w.identity(), RequestID: requestID}
}
