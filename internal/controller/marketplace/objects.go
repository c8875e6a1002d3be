package marketplace

import (
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// ptrUID is obj's UID, for a delete that must not hit a newer object of
// the same name.
func ptrUID(obj client.Object) *types.UID {
	uid := obj.GetUID()
	return &uid
}
