package marketplace

import (
	"bytes"
	"encoding/json"
	"reflect"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/lockstep-dev/lockstep/api/v1alpha1"
)

// The catalog sync writes an object only when what it holds differs from
// what the catalog says; these functions decide. Raw JSON (schemas,
// metadata) is compared as JSON values, since the API server may give it
// back with other spacing or key order.

// OfferingSpecChanged reports whether the stored offering's spec, broker
// label or owner differ from the desired one's.
func OfferingSpecChanged(stored, desired *v1alpha1.ServiceOffering) bool {
	a, b := stored.Spec, desired.Spec
	if !sameJSON(a.Metadata, b.Metadata) {
		return true
	}
	a.Metadata, b.Metadata = nil, nil
	return !equality.Semantic.DeepEqual(a, b) || metaChanged(&stored.ObjectMeta, &desired.ObjectMeta)
}

// PlanSpecChanged reports whether the stored plan's spec, broker label or
// owner differ from the desired one's.
func PlanSpecChanged(stored, desired *v1alpha1.ServicePlan) bool {
	a, b := stored.Spec, desired.Spec
	if !sameJSON(a.Metadata, b.Metadata) || !sameSchemas(a.Schemas, b.Schemas) {
		return true
	}
	a.Metadata, b.Metadata, a.Schemas, b.Schemas = nil, nil, nil, nil
	return !equality.Semantic.DeepEqual(a, b) || metaChanged(&stored.ObjectMeta, &desired.ObjectMeta)
}

// StatusChanged returns the status to write: stored's, with desired's
// removed flag and conditions set on it (a condition keeps its transition
// time while its status stays); and whether it differs from stored's.
func StatusChanged(stored, desired v1alpha1.MarketplaceStatus) (v1alpha1.MarketplaceStatus, bool) {
	next := *stored.DeepCopy()
	next.RemovedFromCatalog = desired.RemovedFromCatalog
	for _, c := range desired.Conditions {
		meta.SetStatusCondition(&next.Conditions, c)
	}
	return next, !equality.Semantic.DeepEqual(next, stored)
}

// OfferingStatusChanged returns the offering status to write: stored's,
// with desired's removed flag, conditions and typed kind set on it (the
// TypedKindReady condition goes when desired has none); and whether it
// differs from stored's.
func OfferingStatusChanged(stored, desired v1alpha1.ServiceOfferingStatus) (v1alpha1.ServiceOfferingStatus, bool) {
	next := *stored.DeepCopy()
	next.MarketplaceStatus, _ = StatusChanged(stored.MarketplaceStatus, desired.MarketplaceStatus)
	if meta.FindStatusCondition(desired.Conditions, v1alpha1.ConditionTypedKindReady) == nil {
		meta.RemoveStatusCondition(&next.Conditions, v1alpha1.ConditionTypedKindReady)
	}
	next.TypedKind = desired.TypedKind.DeepCopy()
	return next, !equality.Semantic.DeepEqual(next, stored)
}

// metaChanged reports whether the broker label or the owner differ.
func metaChanged(stored, desired *metav1.ObjectMeta) bool {
	return stored.Labels[v1alpha1.LabelBroker] != desired.Labels[v1alpha1.LabelBroker] ||
		!equality.Semantic.DeepEqual(stored.OwnerReferences, desired.OwnerReferences)
}

func sameSchemas(a, b *v1alpha1.PlanSchemas) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	return sameJSON(a.InstanceCreate, b.InstanceCreate) && sameJSON(a.InstanceUpdate, b.InstanceUpdate) &&
		sameJSON(a.BindingCreate, b.BindingCreate)
}

// sameJSON compares two raw JSON values as values. Equal bytes are the
// common case (the API server gives back the compact, key-sorted JSON that
// Desired writes) and cost no decoding.
func sameJSON(a, b *runtime.RawExtension) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	if bytes.Equal(a.Raw, b.Raw) {
		return true
	}
	var va, vb any
	if json.Unmarshal(a.Raw, &va) != nil || json.Unmarshal(b.Raw, &vb) != nil {
		return string(a.Raw) == string(b.Raw)
	}
	return reflect.DeepEqual(va, vb)
}
