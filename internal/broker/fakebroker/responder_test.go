package fakebroker_test

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lockstep-dev/lockstep/internal/broker/fakebroker"
)

func TestResponderComesAfterQueuesAndBeforeAlways(t *testing.T) {
	b := fakebroker.New(t)
	o := newOSB(t, b)
	var asked []fakebroker.Request
	b.SetResponder(func(r fakebroker.Request) (fakebroker.Respond, bool) {
		asked = append(asked, r)
		if r.InstanceID == "i2" {
			return fakebroker.Respond{Status: 503, Description: "maintenance"}, true
		}
		return fakebroker.Respond{}, false
	})
	b.Always(fakebroker.OpProvision, fakebroker.Respond{Status: 500})
	b.Script(fakebroker.OpProvision, fakebroker.Respond{Status: 418})

	assert.Equal(t, 418, o.provision("i1", small, ``), "a queued answer first")
	assert.Equal(t, 503, o.provision("i2", small, ``), "then the responder")
	assert.Equal(t, 500, o.provision("i3", small, ``), "then Always, when the responder keeps the default")
	assert.Equal(t, []fakebroker.Request{
		{Op: fakebroker.OpProvision, InstanceID: "i2"},
		{Op: fakebroker.OpProvision, InstanceID: "i3"},
	}, asked)

	b.Reset()
	assert.Equal(t, 201, o.provision("i4", small, ``), "Reset removes the responder")
}

func TestAsyncEndsAfterItsTimeWithoutPolls(t *testing.T) {
	b := fakebroker.New(t)
	o := newOSB(t, b)
	b.Script(fakebroker.OpProvision, fakebroker.Respond{Async: &fakebroker.Async{InProgressPolls: 1 << 20, After: 50 * time.Millisecond}})
	require.Equal(t, 202, o.provision("i1", small, `{"storageGB": 3}`))
	require.Eventually(t, func() bool { _, ok := b.Instance("i1"); return ok }, 10*time.Second, 10*time.Millisecond,
		"the broker finishes on its own, although nobody polls")
	ops := b.Operations()
	require.Len(t, ops, 1)
	assert.True(t, ops[0].Done)
	assert.False(t, ops[0].Failed)

	b.Script(fakebroker.OpDeprovision, fakebroker.Respond{Async: &fakebroker.Async{Fail: true, InProgressPolls: 1 << 20, After: time.Millisecond}})
	require.Equal(t, 202, o.deprovision("i1", small))
	require.Eventually(t, func() bool {
		for _, op := range b.Operations() {
			if op.Op == fakebroker.OpDeprovision {
				return op.Done && op.Failed
			}
		}
		return false
	}, 10*time.Second, 10*time.Millisecond, "a failing operation ends failed")
	_, ok := b.Instance("i1")
	assert.True(t, ok, "and changes nothing")
	code, state := o.lastOperation("i1", "")
	assert.Equal(t, 200, code)
	assert.Equal(t, "failed", string(state))
}

func TestAsyncUnlessRefused(t *testing.T) {
	b := fakebroker.New(t)
	o := newOSB(t, b)
	async := fakebroker.Respond{Async: &fakebroker.Async{UnlessRefused: true}}
	b.Always(fakebroker.OpUpdate, async)
	assert.Equal(t, 400, o.update("missing", small, `{}`), "the refusal at once: nothing to update")
	assert.Empty(t, b.Operations())
	require.Equal(t, 201, o.provision("i1", small, ``))
	assert.Equal(t, 202, o.update("i1", large, `{}`), "what the broker carries out is asynchronous")
}

func TestCredentialMarker(t *testing.T) {
	b := fakebroker.New(t, fakebroker.WithCredentialMarker("SECRET-MARK-"))
	o := newOSB(t, b)
	require.Equal(t, 201, o.provision("i1", small, ``))
	require.Equal(t, 201, o.bind("i1", "b1", ``))
	bnd, ok := b.Binding("i1", "b1")
	require.True(t, ok)
	pass, _ := bnd.Credentials["password"].(string)
	assert.True(t, strings.HasPrefix(pass, "SECRET-MARK-"), "password %q", pass)
	assert.Contains(t, bnd.Credentials["uri"], "SECRET-MARK-")
}

func TestCreationsCountEveryCreation(t *testing.T) {
	b := fakebroker.New(t)
	o := newOSB(t, b)
	require.Equal(t, 201, o.provision("i1", small, ``))
	require.Equal(t, 200, o.provision("i1", small, ``), "an identical repeat creates nothing")
	require.Equal(t, 201, o.bind("i1", "b1", ``))
	require.Equal(t, 200, o.unbind("i1", "b1"))
	require.Equal(t, 200, o.deprovision("i1", small))
	require.Equal(t, 201, o.provision("i1", small, ``))
	instances, bindings := b.Creations()
	assert.Equal(t, map[string]int{"i1": 2}, instances)
	assert.Equal(t, map[string]int{"i1/b1": 1}, bindings)
}
