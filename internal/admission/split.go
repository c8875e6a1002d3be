package admission

import (
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	sigsjson "sigs.k8s.io/json"
)

// splitObject is one raw object of an admission request (req.Object.Raw or
// req.OldObject.Raw) cut into the parts the validating chain reads: its
// metadata decoded (without managedFields), its spec not yet. Cutting
// passes over the object once; the status is skipped.
//
// The metadata is decoded in the same pass because every request reads the
// old object's, and every request that gets past the raw spec comparison
// the new object's: kept raw, it would be passed over again, managedFields
// included, which are often most of the object's bytes.
type splitObject struct {
	metav1.TypeMeta `json:",inline"`
	Metadata        leanMeta `json:"metadata"`
	Spec            rawRef   `json:"spec"`
}

// split cuts a raw object into its parts; nil when there is none.
func split(raw []byte, what string) (*splitObject, error) {
	if len(raw) == 0 {
		return nil, nil
	}
	var o splitObject
	if err := unmarshal(raw, &o, what); err != nil {
		return nil, err
	}
	return &o, nil
}

// rawRef is a JSON value kept undecoded, as a slice of the request's own
// bytes: unlike json.RawMessage it copies nothing. The request's objects
// live, unchanged, until the answer is written, and nothing keeps a rawRef
// longer (decoding copies what it keeps).
type rawRef []byte

// UnmarshalJSON implements json.Unmarshaler.
func (r *rawRef) UnmarshalJSON(b []byte) error {
	*r = b
	return nil
}

// leanMeta is an object's metadata without its managedFields, which no
// check reads and which are often the largest part of the object. The
// outer field wins over the embedded one of the same JSON name.
type leanMeta struct {
	metav1.ObjectMeta
	ManagedFields skipped `json:"managedFields"`
}

// skipped is a JSON value that is passed over without being kept.
type skipped struct{}

// UnmarshalJSON implements json.Unmarshaler.
func (*skipped) UnmarshalJSON([]byte) error { return nil }

// unmarshal decodes JSON as the API machinery's serializer does
// (case-sensitive field names, integers kept as integers).
func unmarshal(raw []byte, into any, what string) error {
	if len(raw) == 0 {
		return fmt.Errorf("the admission request carries no %s", what)
	}
	if err := sigsjson.UnmarshalCaseSensitivePreserveInts(raw, into); err != nil {
		return fmt.Errorf("decoding the %s in the admission request: %w", what, err)
	}
	return nil
}
