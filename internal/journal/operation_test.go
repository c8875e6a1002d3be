package journal

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/lockstep-dev/lockstep/api/v1alpha1"
)

// About tells the holder of a lock that changes the asking object from
// one that changes another object of the same id: another namespace or
// name, or another kind of the same namespace and name.
func TestOperationAbout(t *testing.T) {
	si := Key{Kind: v1alpha1.KindServiceInstance, Namespace: "team", Name: "db", ExternalID: "ext-1"}
	typed := Key{Kind: "Db", APIGroup: "services.lockstep.dev", Namespace: "team", Name: "db", ExternalID: "ext-1"}
	tests := []struct {
		name   string
		holder Operation
		key    Key
		about  bool
	}{
		{name: "the same ServiceInstance", holder: Operation{Kind: v1alpha1.KindServiceInstance, Namespace: "team", Name: "db"}, key: si, about: true},
		{name: "the same typed object", holder: Operation{Kind: "Db", APIGroup: "services.lockstep.dev", Namespace: "team", Name: "db"}, key: typed, about: true},
		{name: "another name", holder: Operation{Kind: v1alpha1.KindServiceInstance, Namespace: "team", Name: "other"}, key: si},
		{name: "another namespace", holder: Operation{Kind: v1alpha1.KindServiceInstance, Namespace: "other", Name: "db"}, key: si},
		{name: "a typed object named as the ServiceInstance", holder: Operation{Kind: "Db", APIGroup: "services.lockstep.dev", Namespace: "team", Name: "db"}, key: si},
		{name: "a ServiceInstance named as the typed object", holder: Operation{Kind: v1alpha1.KindServiceInstance, Namespace: "team", Name: "db"}, key: typed},
		{name: "a lock that names no kind: taken to be of the asking object's", holder: Operation{Namespace: "team", Name: "db"}, key: typed, about: true},
		{name: "a lock that names no object", holder: Operation{}, key: si, about: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.about, tt.holder.About(tt.key))
		})
	}
}
