package validate

import (
	"reflect"
	"strings"
)

// FieldType returns the Go type of the field at a dotted JSON path such as
// "spec.target.name" below struct type t (or pointer to struct type),
// naming fields the way the engine and encoding/json do; false when there
// is no such field. Pointers on the way are followed; the field's own type
// is returned as declared.
func FieldType(t reflect.Type, path string) (reflect.Type, bool) {
	for name := range strings.SplitSeq(path, ".") {
		for t.Kind() == reflect.Pointer {
			t = t.Elem()
		}
		if t.Kind() != reflect.Struct {
			return nil, false
		}
		found := false
		for _, f := range jsonFields(t) {
			if f.name == name {
				t, found = f.sf.Type, true
				break
			}
		}
		if !found {
			return nil, false
		}
	}
	return t, true
}
