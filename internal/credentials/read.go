package credentials

import (
	"context"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// CacheFirst reads binding Secrets' metadata from Cache, which holds every
// Secret lockstep wrote (those labelled LabelBindingUID, see CacheSecrets),
// and from Direct only when Cache has none of that name: such a Secret may still exist
// unlabelled (a user's, or lockstep's before its label was written), or
// be newer than the cache. A Secret lockstep owns is so read without a
// request to the API server.
type CacheFirst struct {
	Cache  client.Reader
	Direct client.Reader
}

var _ client.Reader = CacheFirst{}

// Get reads one Secret: from Cache, or from Direct if Cache has none.
func (r CacheFirst) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	err := r.Cache.Get(ctx, key, obj, opts...)
	if !apierrors.IsNotFound(err) {
		return err
	}
	return r.Direct.Get(ctx, key, obj, opts...)
}

// List lists from Direct: the cache holds only labelled Secrets.
func (r CacheFirst) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	return r.Direct.List(ctx, list, opts...)
}
