// Package typedkinds runs the instance reconciler on the objects of each
// typed kind (a kind of its own for a broker's service, in group
// services.lockstep.dev; see internal/typed/render), from the moment the
// kind's CustomResourceDefinition is established until before it goes,
// without a restart:
//
//   - watcher.go: Watcher, the controller of lockstep's CRDs (labelled
//     app.kubernetes.io/managed-by=lockstep, in the typed kinds' group),
//     which starts one kind's informer, and its controller once the
//     replica is elected, when its CRD is established, and stops them,
//     removing the informer from the cache, when the CRD is gone, no
//     longer established, or being deleted with none of its objects left
//     (the API server deletes a CRD's objects first, and lockstep's
//     finalizer lets each go);
//   - index.go: the informers' index of spec.externalID, which admission
//     reads to find which object holds an external id;
//   - kind.go: New, one kind's reconciler: internal/controller/instance's,
//     over the model of the kind's objects (internal/typed/object);
//   - objects.go: the reader and client through which that reconciler
//     reads the objects as the model and writes their metadata and status
//     back;
//   - source.go: the sources of a controller that starts and stops while
//     the manager runs, which leave no handler behind on shared informers.
//
// The informers run in every replica (every replica serves admission);
// the controllers in the elected replica only.
//
// +kubebuilder:rbac:groups=apiextensions.k8s.io,resources=customresourcedefinitions,verbs=get;list;watch
// +kubebuilder:rbac:groups=services.lockstep.dev,resources=*,verbs=get;list;watch;patch
// +kubebuilder:rbac:groups=services.lockstep.dev,resources=*/status,verbs=patch
package typedkinds
