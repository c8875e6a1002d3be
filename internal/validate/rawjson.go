package validate

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"reflect"

	"github.com/lockstep-dev/lockstep/internal/jsonnum"
	"k8s.io/apimachinery/pkg/runtime"
)

// rawInfo says where a raw JSON holder keeps its bytes.
type rawInfo struct {
	rawField    int // index of the []byte field; -1: the value itself is the bytes
	objectField int // index of a runtime.Object field (RawExtension), or -1
}

var (
	rawMessageType   = reflect.TypeFor[json.RawMessage]()
	rawExtensionType = reflect.TypeFor[runtime.RawExtension]()
)

// apiextensionsJSONPackages hold the CRD schema type JSON{Raw []byte}. It is
// recognised by name so that this package does not pull in the
// apiextensions API.
var apiextensionsJSONPackages = map[string]bool{
	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1":      true,
	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1beta1": true,
}

// rawInfoFor recognises the types that carry raw JSON: json.RawMessage,
// runtime.RawExtension and apiextensions JSON.
func rawInfoFor(t reflect.Type) (rawInfo, bool) {
	switch {
	case t == rawMessageType:
		return rawInfo{rawField: -1, objectField: -1}, true
	case t == rawExtensionType:
		raw, _ := t.FieldByName("Raw")
		obj, _ := t.FieldByName("Object")
		return rawInfo{rawField: raw.Index[0], objectField: obj.Index[0]}, true
	case t.Kind() == reflect.Struct && t.Name() == "JSON" && apiextensionsJSONPackages[t.PkgPath()]:
		raw, ok := t.FieldByName("Raw")
		if !ok || len(raw.Index) != 1 || raw.Type != reflect.TypeFor[[]byte]() {
			return rawInfo{}, false
		}
		return rawInfo{rawField: raw.Index[0], objectField: -1}, true
	}
	return rawInfo{}, false
}

// rawBytes returns the JSON bytes of a raw holder, without copying.
func rawBytes(e *eqInfo, v reflect.Value) []byte {
	if e.raw.rawField < 0 {
		return v.Bytes()
	}
	return v.Field(e.raw.rawField).Bytes()
}

// rawObjectSet reports whether a RawExtension holds a decoded Object.
func rawObjectSet(e *eqInfo, v reflect.Value) bool {
	return e.raw.objectField >= 0 && !v.Field(e.raw.objectField).IsNil()
}

// rawAbsent reports whether a raw holder holds nothing: no bytes, or null.
func rawAbsent(e *eqInfo, v reflect.Value) bool {
	return !rawObjectSet(e, v) && nullJSON(rawBytes(e, v))
}

// nullJSON reports whether raw JSON is empty or the literal null.
func nullJSON(b []byte) bool {
	b = bytes.TrimSpace(b)
	return len(b) == 0 || string(b) == "null"
}

// rawEqual compares raw JSON holders by JSON meaning: the same bytes, or
// documents that decode to the same value (key order, spacing and number
// spelling aside).
func rawEqual(e *eqInfo, a, b reflect.Value) bool {
	if rawObjectSet(e, a) || rawObjectSet(e, b) {
		return structuralEqual(a, b, 0) || slowEqual(&eqInfo{t: e.t, class: eqMarshal}, a, b)
	}
	ra, rb := rawBytes(e, a), rawBytes(e, b)
	if bytes.Equal(ra, rb) {
		return true
	}
	return jsonBytesEqual(ra, rb)
}

// jsonBytesEqual compares two JSON documents by meaning. Empty input counts
// as null. Documents that do not decode are equal only byte for byte.
func jsonBytesEqual(a, b []byte) bool {
	na, nb := nullJSON(a), nullJSON(b)
	if na || nb {
		return na && nb
	}
	va, errA := decodeJSON(a)
	vb, errB := decodeJSON(b)
	if errA != nil || errB != nil {
		return bytes.Equal(a, b)
	}
	return jsonnum.ValuesEqual(va, vb)
}

var errTrailingData = errors.New("data after the JSON value")

// decodeJSON decodes one JSON document, keeping numbers as written.
func decodeJSON(b []byte) (any, error) {
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return nil, err
	}
	if _, err := d.Token(); err != io.EOF {
		return nil, errTrailingData
	}
	return v, nil
}
