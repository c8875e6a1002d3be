package v1alpha1

import (
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/scheme"
)

var (
	// GroupVersion is the API group and version of every lockstep kind.
	GroupVersion = schema.GroupVersion{Group: "lockstep.dev", Version: "v1alpha1"}

	// SchemeBuilder registers the lockstep kinds with a runtime.Scheme.
	SchemeBuilder = &scheme.Builder{GroupVersion: GroupVersion}

	// AddToScheme adds the lockstep kinds to a runtime.Scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)
