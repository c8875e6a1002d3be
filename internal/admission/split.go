package admission

import (
	"fmt"
	"unicode/utf8"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	sigsjson "sigs.k8s.io/json"
)

// splitObject is one raw object of an admission request (req.Object.Raw or
// req.OldObject.Raw) cut into the parts the validating chain reads, each
// still raw: slices of the request's own bytes. Cutting passes over the
// object once without decoding it (members); the status is skipped, and
// each part is decoded only if a check reads it.
type splitObject struct {
	apiVersion, kind, metadata part
	// Spec is the object's spec; an UPDATE compares the old and the new
	// one byte for byte before anything is decoded.
	Spec part
}

// part is the value of one member of an object, kept raw. JSON lets a
// name repeat; the API machinery's decoder then decodes each of its values
// in turn into the same Go value (a later one overrides the earlier ones
// field by field, and null changes nothing), and so does decoding a part.
// The API server never repeats a name, so earlier is nil on its requests.
type part struct {
	// last is the value of the last member of the name; nil when there
	// is none.
	last rawRef
	// earlier are the values of the members of the name before it, in
	// order.
	earlier []rawRef
}

// rawRef is a JSON value kept undecoded, as a slice of the request's own
// bytes. The request's objects live, unchanged, until the answer is
// written, and nothing keeps a rawRef longer (decoding copies what it
// keeps).
type rawRef []byte

// add records one more member of the part's name.
func (p *part) add(value rawRef) {
	if p.last != nil {
		p.earlier = append(p.earlier, p.last)
	}
	p.last = value
}

// single returns the part's value when exactly one member holds it.
func (p *part) single() (rawRef, bool) {
	return p.last, p.last != nil && p.earlier == nil
}

// decode decodes each value of the part in turn into into; nothing when
// the part is absent.
func (p *part) decode(into any, what string) error {
	for _, v := range p.earlier {
		if err := unmarshal(v, into, what); err != nil {
			return err
		}
	}
	if p.last == nil {
		return nil
	}
	return unmarshal(p.last, into, what)
}

// decodeString decodes a part that holds a string, as decode does; a
// string without escapes or bytes beyond ASCII is cut out as it is.
func (p *part) decodeString(into *string, what string) error {
	if v, ok := p.single(); ok && len(v) >= 2 && v[0] == '"' && v[len(v)-1] == '"' && plainASCII(v[1:len(v)-1]) {
		*into = string(v[1 : len(v)-1])
		return nil
	}
	s := *into // decoding into a copy keeps *into off the heap on the fast path
	err := p.decode(&s, what)
	*into = s
	return err
}

// plainASCII reports whether a string's bytes are its value: ASCII
// without escapes (encoding/json turns bytes that are not UTF-8 into
// U+FFFD).
func plainASCII(b []byte) bool {
	for _, c := range b {
		if c == '\\' || c >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

// split cuts a raw object into its parts; nil when there is none.
func split(raw []byte, what string) (*splitObject, error) {
	if len(raw) == 0 {
		return nil, nil
	}
	var o splitObject
	var nameErr error
	err := members(raw, func(m member) bool {
		if !m.Escaped {
			o.set(string(m.Name), m.Value)
			return true
		}
		// The API server never writes a name with escapes.
		var name string
		if name, nameErr = m.decodedName(raw); nameErr != nil {
			return false
		}
		o.set(name, m.Value)
		return true
	})
	if err == nil {
		err = nameErr
	}
	if err != nil {
		return nil, fmt.Errorf("decoding the %s in the admission request: %w", what, err)
	}
	return &o, nil
}

// set adds the value of the member name if it is a part the chain reads.
func (o *splitObject) set(name string, value []byte) {
	switch name {
	case "apiVersion":
		o.apiVersion.add(value)
	case "kind":
		o.kind.add(value)
	case "metadata":
		o.metadata.add(value)
	case "spec":
		o.Spec.add(value)
	}
}

// meta decodes the object's kind and its metadata, without managedFields:
// no check reads them, and they are often most of the object's bytes.
func (o *splitObject) meta(what string) (metav1.TypeMeta, metav1.ObjectMeta, error) {
	var (
		tm metav1.TypeMeta
		om metav1.ObjectMeta
	)
	if err := o.apiVersion.decodeString(&tm.APIVersion, what+"'s apiVersion"); err != nil {
		return tm, om, err
	}
	if err := o.kind.decodeString(&tm.Kind, what+"'s kind"); err != nil {
		return tm, om, err
	}
	for _, v := range o.metadata.earlier {
		if err := decodeMetadata(v, &om, what); err != nil {
			return tm, om, err
		}
	}
	if o.metadata.last == nil {
		return tm, om, nil
	}
	return tm, om, decodeMetadata(o.metadata.last, &om, what)
}

// decodeMetadata decodes one metadata value into om, without its
// managedFields; null changes nothing.
func decodeMetadata(raw rawRef, om *metav1.ObjectMeta, what string) error {
	if string(raw) == "null" {
		return nil
	}
	metadata, err := withoutMember(raw, "managedFields")
	if err != nil {
		return fmt.Errorf("decoding the %s's metadata in the admission request: %w", what, err)
	}
	return unmarshal(metadata, om, what+"'s metadata")
}

// withoutMember returns the JSON object in raw without its members named
// name, however the name is spelled: a copy when it has one, raw itself
// otherwise.
func withoutMember(raw []byte, name string) ([]byte, error) {
	var (
		out            []byte // nil until a member goes
		kept           int
		first, lastEnd int // where the members kept before the first that goes begin and end
		nameErr        error
	)
	err := members(raw, func(m member) bool {
		goes := !m.Escaped && string(m.Name) == name
		if m.Escaped {
			var decoded string
			if decoded, nameErr = m.decodedName(raw); nameErr != nil {
				return false
			}
			goes = decoded == name
		}
		switch {
		case goes && out == nil:
			// Every member before this one stays, as written.
			out = append(make([]byte, 0, len(raw)-(m.End-m.Start)), '{')
			if kept > 0 {
				out = append(out, raw[first:lastEnd]...)
			}
		case !goes && out != nil:
			if kept > 0 {
				out = append(out, ',')
			}
			out = append(out, raw[m.Start:m.End]...)
		}
		if !goes {
			if kept == 0 {
				first = m.Start
			}
			kept, lastEnd = kept+1, m.End
		}
		return true
	})
	if err == nil {
		err = nameErr
	}
	if err != nil || out == nil {
		return raw, err
	}
	return append(out, '}'), nil
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
