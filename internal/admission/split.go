package admission

import (
	"fmt"
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	sigsjson "sigs.k8s.io/json"
)

// splitObject is one raw object of an admission request (req.Object.Raw or
// req.OldObject.Raw) cut into the parts the validating chain reads, each
// still raw: a slice of the request's own bytes. Cutting passes over the
// object once without decoding it (members); the status is skipped, and
// each part is decoded only if a check reads it.
type splitObject struct {
	apiVersion, kind, metadata rawRef
	// Spec is the object's spec; an UPDATE compares the old and the new
	// one byte for byte before anything is decoded.
	Spec rawRef
}

// rawRef is a JSON value kept undecoded, as a slice of the request's own
// bytes. The request's objects live, unchanged, until the answer is
// written, and nothing keeps a rawRef longer (decoding copies what it
// keeps).
type rawRef []byte

// split cuts a raw object into its parts; nil when there is none.
func split(raw []byte, what string) (*splitObject, error) {
	if len(raw) == 0 {
		return nil, nil
	}
	var o splitObject
	var escaped []member
	err := members(raw, func(m member) bool {
		if m.Escaped {
			escaped = append(escaped, m)
			return true
		}
		o.set(string(m.Name), m.Value)
		return true
	})
	// A name written with escapes is decoded before it is compared; the
	// API server never writes one, so this costs nothing on its requests.
	for _, m := range escaped {
		if err != nil {
			break
		}
		var name string
		if err = sigsjson.UnmarshalCaseSensitivePreserveInts(raw[m.Start:m.Start+len(m.Name)+2], &name); err == nil {
			o.set(name, m.Value)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("decoding the %s in the admission request: %w", what, err)
	}
	return &o, nil
}

// set keeps the value of the member name if it is a part the chain reads.
func (o *splitObject) set(name string, value []byte) {
	switch name {
	case "apiVersion":
		o.apiVersion = value
	case "kind":
		o.kind = value
	case "metadata":
		o.metadata = value
	case "spec":
		o.Spec = value
	}
}

// meta decodes the object's kind and its metadata, without managedFields:
// no check reads them, and they are often most of the object's bytes.
func (o *splitObject) meta(what string) (metav1.TypeMeta, metav1.ObjectMeta, error) {
	var (
		tm metav1.TypeMeta
		om metav1.ObjectMeta
	)
	var err error
	if tm.APIVersion, err = jsonString(o.apiVersion, what+"'s apiVersion"); err != nil {
		return tm, om, err
	}
	if tm.Kind, err = jsonString(o.kind, what+"'s kind"); err != nil {
		return tm, om, err
	}
	if len(o.metadata) == 0 {
		return tm, om, nil
	}
	metadata, err := withoutMember(o.metadata, "managedFields")
	if err != nil {
		return tm, om, fmt.Errorf("decoding the %s's metadata in the admission request: %w", what, err)
	}
	return tm, om, unmarshal(metadata, &om, what+"'s metadata")
}

// jsonString decodes a raw JSON string; "" when there is none.
func jsonString(raw []byte, what string) (string, error) {
	if len(raw) == 0 {
		return "", nil
	}
	if len(raw) >= 2 && raw[0] == '"' && raw[len(raw)-1] == '"' && !slices.Contains(raw, '\\') {
		return string(raw[1 : len(raw)-1]), nil
	}
	var s string
	return s, unmarshal(raw, &s, what)
}

// withoutMember returns the JSON object in raw without its member name (a
// copy when it has one, raw itself otherwise).
func withoutMember(raw []byte, name string) ([]byte, error) {
	start, end := -1, -1
	err := members(raw, func(m member) bool {
		if !m.Escaped && string(m.Name) == name {
			start, end = m.Start, m.End
			return false
		}
		return true
	})
	if err != nil || start < 0 {
		return raw, err
	}
	end = skipSpace(raw, end)
	if end < len(raw) && raw[end] == ',' {
		// Not the last member: its comma goes with it.
		end++
	} else {
		// The last member: the comma before it goes, if any.
		i := start - 1
		for i >= 0 && isSpace(raw[i]) {
			i--
		}
		if i >= 0 && raw[i] == ',' {
			start = i
		}
	}
	out := make([]byte, 0, len(raw)-(end-start))
	return append(append(out, raw[:start]...), raw[end:]...), nil
}

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
