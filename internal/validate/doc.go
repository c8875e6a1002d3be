// Package validate holds lockstep's static admission checks as pure
// functions: it takes typed objects and returns a field.ErrorList (and
// warnings), and knows nothing of webhooks, HTTP or AdmissionRequests.
//
// Its core is a generic field-policy engine: the policy of a field is stated
// in a struct tag, compiled once per type, and checked on create and update.
//
// # Tag format
//
// The contract that the API types (and the generator that writes them)
// follow. A struct field carries at most one of:
//
//	`lockstep:"createonly"`  set at creation, never set, removed or changed afterwards
//	`lockstep:"readonly"`    written by lockstep only: absent on create, unchanged on update
//
// Nothing else is valid: any other value, a tag on a field JSON does not
// show (unexported, `json:"-"`), a tag on an embedded struct whose fields are
// promoted (tag those fields instead), or on a field without a JSON form
// (chan, func, complex) makes Compile fail with an error naming the field.
//
// A tag on a field of struct, pointer, slice or map type covers the whole
// value, compared as one. Inside a create-only value, read-only tags still
// say that the nested fields must be absent when the value is created; other
// nested tags add nothing (the outer tag already forbids every change).
//
// # Paths and walking
//
// Untagged fields are walked into: nested structs, pointers, slices and
// arrays, maps, embedded structs. Paths use JSON names as encoding/json does:
// the name from `json:"name,omitempty"`, else the Go field name; `json:"-"`
// fields are skipped; fields of embedded structs without a JSON name (or of
// struct fields tagged `json:",inline"`) are promoted into the parent, and of
// several fields with one name the shallowest wins. Errors name concrete
// paths such as spec.serviceName, spec.items[2].id and spec.labels[team].
//
// Slice elements are matched by index and map values by key. A rule inside
// an element applies to elements present in both the old and the new object;
// an element only in the new object is created (its create-only fields may
// be set, its read-only fields must be absent); an element only in the old
// object was removed, which is allowed unless an enclosing field is tagged.
// Types with an Equal method, their own JSON form or raw JSON are leaves:
// tags inside them are not looked at.
//
// # Equality
//
// A value is absent when it is a nil pointer, a nil or empty slice or map,
// null or empty raw JSON, or the zero value of its type; absent values are
// all equal, and an absent field equals a zero one. A non-nil pointer is
// present even when it points to a zero value (JSON writes it), unless what
// it points to is written as null (null raw JSON, a zero metav1.Time), which
// reads back as a nil pointer. Present values are compared deeply, never by
// pointer:
//   - json.RawMessage, runtime.RawExtension and apiextensions JSON by JSON
//     meaning: equal bytes, else both documents decoded and compared (key
//     order, spacing and number spelling do not matter);
//   - types with an Equal(T) or Equal(*T) bool method (metav1.Time,
//     resource.Quantity): field by field, else by calling Equal;
//   - other types that marshal themselves: field by field, else by JSON;
//   - structs by their JSON-visible fields, slices and arrays element by
//     element, maps key by key, interfaces by dynamic type and value.
//
// # Compiling and checking
//
// Compile (or For[T]) turns a type into a *Policy, cached per type; recursive
// types compile to a finite graph. Policy.Rules lists the rules as path
// templates. Policy.ValidateCreate and Policy.ValidateUpdate (and the generic
// ValidateCreate[T] and ValidateUpdate[T]) report every violation at once,
// in field order with map keys sorted, as field.ErrorList entries that name
// the path, the old and new value (compact JSON, cut to 120 bytes) and the
// rule, for example:
//
//	spec.serviceName: Invalid value: "large": create-only field: it cannot be changed after creation (was "small"); delete and recreate the object to change it
//
// Checking an unchanged object passed by pointer does not allocate. A value
// nested more than 1000 levels deep (only possible with recursive types) is
// reported as one internal error instead of being walked further.
//
// # CEL rules
//
// Subpackage celrules derives CEL validation rules for the CRDs from the
// same compiled policies (`make generate` writes them), so that the API
// server refuses what CEL can express before the webhook is called; this
// engine still checks everything. FieldType resolves a JSON path to its Go
// type with the engine's field naming, for that derivation.
//
// # Validation hooks
//
// Hooks[T] is a registry of extra checks for one kind, added without
// touching the engine: Register(name, fn) adds a Hook[T], a
// func(old, new T) (field.ErrorList, []string) whose old is the zero value on
// create; Run(old, new) runs the hooks in registration order and returns all
// their errors and warnings. A hook that panics is reported as an internal
// error naming it, and the other hooks still run.
package validate
