package admission

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/lockstep-dev/lockstep/internal/journal"
)

func TestRefusalsRepeatWithinTheWindowOnly(t *testing.T) {
	now := clocktesting.NewFakePassiveClock(time.Unix(100, 0))
	r := newRefusalsWithClock(time.Second, now)
	k := journal.Change{UID: "u", Verb: "update", SpecHash: "h"}
	refused := errors.New("no")

	assert.NoError(t, r.get(k))
	r.put(k, refused)
	assert.Same(t, refused, r.get(k))
	assert.NoError(t, r.get(journal.Change{UID: "u", Verb: "update", SpecHash: "other"}), "a different change is asked anew")
	now.SetTime(now.Now().Add(time.Second + time.Millisecond))
	assert.NoError(t, r.get(k), "after the window the broker is asked again")
	r.put(journal.Change{Verb: "provision"}, refused)
	assert.NoError(t, r.get(journal.Change{Verb: "provision"}), "objects without a uid are never remembered")
}
