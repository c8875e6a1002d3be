package robustness

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/lockstep-dev/lockstep/api/v1alpha1"
)

func TestGateHoldsBackTheVerbsItIsAskedTo(t *testing.T) {
	g := newGate()
	ctx := context.Background()
	leave := g.enter(ctx, v1alpha1.VerbUpdate)
	quiet, release := g.hold(ctx, []v1alpha1.Verb{v1alpha1.VerbUpdate}, 50*time.Millisecond)
	assert.False(t, quiet, "an update is in flight")
	release()

	leave()
	quiet, release = g.hold(ctx, []v1alpha1.Verb{v1alpha1.VerbUpdate}, time.Minute)
	assert.True(t, quiet)
	g.enter(ctx, v1alpha1.VerbProvision)() // other verbs go on
	entered := make(chan struct{})
	go func() { g.enter(ctx, v1alpha1.VerbUpdate)(); close(entered) }()
	select {
	case <-entered:
		t.Fatal("an update got in while updates are held back")
	case <-time.After(50 * time.Millisecond):
	}
	release()
	<-entered
}
