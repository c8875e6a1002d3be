package brokercall

import (
	"testing"

	"github.com/stretchr/testify/assert"
	authenticationv1 "k8s.io/api/authentication/v1"
)

// A user's own call names the user; a call lockstep makes on its own
// names lockstep, on whose behalf and why.
func TestWhoNamesTheCaller(t *testing.T) {
	alice := authenticationv1.UserInfo{Username: "alice", UID: "a-1", Groups: []string{"devs"},
		Extra: map[string]authenticationv1.ExtraValue{"scopes": {"x"}}}
	p := &Protocol{Self: authenticationv1.UserInfo{Username: "system:serviceaccount:lockstep-system:lockstep", Groups: []string{"system:serviceaccounts"}}}

	id := Requester(alice).identity()
	assert.Equal(t, "alice", id.Username)
	assert.Equal(t, []string{"devs"}, id.Groups)
	assert.Equal(t, map[string][]string{"scopes": {"x"}}, id.Extra)

	id = p.Lockstep("alice", ReasonCompensation).identity()
	assert.Equal(t, "system:serviceaccount:lockstep-system:lockstep", id.Username)
	assert.Equal(t, map[string][]string{ExtraOnBehalfOf: {"alice"}, ExtraReason: {ReasonCompensation}}, id.Extra)
	assert.Nil(t, p.Self.Extra, "lockstep's own identity is not changed")

	id = p.Lockstep("", ReasonFinalizer).identity()
	assert.Equal(t, map[string][]string{ExtraReason: {ReasonFinalizer}}, id.Extra, "nobody's behalf is not claimed")
}
