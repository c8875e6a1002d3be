package admission

import (
	"testing"

	"github.com/stretchr/testify/assert"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// TestInvalidIsNewInvalid checks that invalid answers exactly what
// apierrors.NewInvalid answers, message and causes included.
func TestInvalidIsNewInvalid(t *testing.T) {
	spec := field.NewPath("spec")
	immutable := field.Invalid(spec.Child("externalID"), "other", "field is immutable")
	tests := []struct {
		name string
		errs field.ErrorList
	}{
		{"none", nil},
		{"one", field.ErrorList{immutable}},
		{"two", field.ErrorList{immutable, field.Required(spec.Child("planName"), "name a plan")}},
		{"a duplicate", field.ErrorList{immutable, field.Forbidden(spec.Child("brokerName"), "create-only"), immutable}},
		{"only duplicates", field.ErrorList{immutable, immutable}},
		{"same body, other fields", field.ErrorList{field.Required(spec.Child("a"), "x"), field.Required(spec.Child("b"), "x")}},
		{"every kind of value", field.ErrorList{
			field.Invalid(spec.Child("parameters", "storageGB"), int64(10), "must be at least 20"),
			field.Invalid(spec.Child("parameters", "tags"), []string{"a", "b"}, "too many"),
			field.Invalid(spec.Child("parameters", "on"), true, "must be false"),
			field.NotSupported(spec.Child("planName"), "huge", []string{"small", "large"}),
			field.TooLong(spec.Child("externalID"), "x", 1),
			field.InternalError(spec.Child("parameters"), assert.AnError),
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, name := range []string{"db", `odd "name"`} {
				want := apierrors.NewInvalid(instanceKind, name, tt.errs)
				assert.Equal(t, want, invalid(instanceKind, name, tt.errs))
			}
		})
	}
}

func BenchmarkInvalid(b *testing.B) {
	errs := field.ErrorList{field.Invalid(field.NewPath("spec", "externalID"), "other", "field is immutable: it is set on create")}
	b.Run("apierrors.NewInvalid", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_ = apierrors.NewInvalid(instanceKind, "orders-db", errs)
		}
	})
	b.Run("invalid", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_ = invalid(instanceKind, "orders-db", errs)
		}
	})
}
