package typedkinds

import (
	"sigs.k8s.io/controller-runtime/pkg/cache"

	"github.com/lockstep-dev/lockstep/api/v1alpha1"
	"github.com/lockstep-dev/lockstep/internal/controller/brokered"
	"github.com/lockstep-dev/lockstep/internal/controller/instance"
	"github.com/lockstep-dev/lockstep/internal/typed/object"
)

// New returns the instance reconciler of the objects of kind: the
// reconciler of ServiceInstances, made with c, reading the objects of
// kind from cache (and past it from c.APIReader) as the model, and
// writing their metadata and status from it.
func New(c brokered.Config, cache cache.Cache, kind object.Kind) *brokered.Reconciler[*v1alpha1.ServiceInstance, v1alpha1.ServiceInstanceStatus] {
	typed := c
	typed.Client = writer{Client: c.Client, reader: reader{Reader: c.Client, typed: cache, kind: kind}}
	typed.APIReader = reader{Reader: c.APIReader, typed: c.APIReader, kind: kind}
	return instance.NewTyped(typed, kind)
}
