package binding

import (
	"context"
	"fmt"

	"github.com/lockstep-dev/lockstep/api/v1alpha1"
	"github.com/lockstep-dev/lockstep/internal/brokercall"
	"github.com/lockstep-dev/lockstep/internal/controller/brokered"
	"github.com/lockstep-dev/lockstep/internal/controller/resync"
	"github.com/lockstep-dev/lockstep/internal/parametersfrom"
)

// Applied is the binding's spec.parameters (a binding cannot be changed,
// so its spec is what was applied), with the digest of what was sent when
// some came from Secrets. A binding has no plan of its own.
func (Kind) Applied(b *v1alpha1.ServiceBinding, status *v1alpha1.ServiceBindingStatus, _ brokered.Target) brokered.Applied {
	return brokered.Applied{
		State:       resync.State{Parameters: resync.Parameters(b.Spec.Parameters), ParametersDigest: status.ParametersDigest},
		FromSecrets: len(b.Spec.ParametersFrom) > 0,
	}
}

// Held is the parameters the broker holds. The credentials a fetch
// returns are dropped unread: they are in the binding's Secret already,
// and go nowhere else.
func (Kind) Held(_ *v1alpha1.ServiceBindingStatus, held brokercall.Held) resync.State {
	return resync.State{Parameters: held.Binding.Parameters}
}

// Rekey writes the digest of the parameters the broker holds under the
// current key, in place of one that verifies against them under an older
// one.
func (Kind) Rekey(status *v1alpha1.ServiceBindingStatus, _ brokered.Target, held resync.State) {
	status.ParametersDigest = parametersfrom.Rekey(status.ParametersDigest, held.Parameters)
}

// Drifted reports drift, never corrects it: a binding cannot be changed
// at its broker.
func (Kind) Drifted(_ context.Context, b *v1alpha1.ServiceBinding, _ brokered.Target, _ brokered.Applied, _ resync.State, d resync.Drift) (resync.Drift, string) {
	return d, fmt.Sprintf("; a binding cannot be changed at its broker: delete servicebinding %s and create it again to apply this spec", b.Name)
}
