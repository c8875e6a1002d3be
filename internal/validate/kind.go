package validate

import (
	"fmt"
	"reflect"
)

// TagKey is the struct tag key that carries a field's policy.
const TagKey = "lockstep"

// Kind is the policy of one field.
type Kind uint8

const (
	// CreateOnly fields may be set when the object is created and never
	// change afterwards: not set, not removed, not changed.
	CreateOnly Kind = iota + 1
	// ReadOnly fields are written by lockstep only: users leave them out on
	// create and never change them on update.
	ReadOnly
)

// String names the kind the way error messages do.
func (k Kind) String() string {
	switch k {
	case CreateOnly:
		return "create-only"
	case ReadOnly:
		return "read-only"
	default:
		return fmt.Sprintf("Kind(%d)", uint8(k))
	}
}

// Rule is one line of a compiled policy: the JSON path template of a tagged
// field and its kind. In Path, "[*]" stands for any slice index or map key.
type Rule struct {
	Path string
	Kind Kind
}

// tagValues maps every valid value of the lockstep tag to its kind.
var tagValues = map[string]Kind{
	"createonly": CreateOnly,
	"readonly":   ReadOnly,
}

// policyTag returns the kind named by a field's lockstep tag: 0 when the
// field has no such tag, an error when the tag holds anything else than
// "createonly" or "readonly".
func policyTag(sf reflect.StructField) (Kind, error) {
	value, ok := sf.Tag.Lookup(TagKey)
	if !ok {
		return 0, nil
	}
	if k, ok := tagValues[value]; ok {
		return k, nil
	}
	return 0, fmt.Errorf("unknown %s tag value %q: use %q or %q", TagKey, value, "createonly", "readonly")
}
