package validate

import (
	"encoding/json"
	"strings"

	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// shapes has one field of every Go shape the engine handles.
type shapes struct {
	Str       string               `json:"str,omitempty" lockstep:"createonly"`
	Int       int                  `json:"int,omitempty" lockstep:"createonly"`
	Uint      uint16               `json:"uint,omitempty" lockstep:"createonly"`
	Bool      bool                 `json:"bool,omitempty" lockstep:"createonly"`
	Float     float64              `json:"float,omitempty" lockstep:"createonly"`
	PtrStr    *string              `json:"ptrStr,omitempty" lockstep:"createonly"`
	PtrStruct *leaf                `json:"ptrStruct,omitempty" lockstep:"createonly"`
	Walked    *leaf                `json:"walked,omitempty"`
	Nested    leaf                 `json:"nested"`
	Strs      []string             `json:"strs,omitempty" lockstep:"createonly"`
	Leaves    []leaf               `json:"leaves,omitempty"`
	LeafPtrs  []*leaf              `json:"leafPtrs,omitempty"`
	Arr       [2]leaf              `json:"arr"`
	StrMap    map[string]string    `json:"strMap,omitempty" lockstep:"createonly"`
	LeafMap   map[string]leaf      `json:"leafMap,omitempty"`
	IntMap    map[int]leaf         `json:"intMap,omitempty"`
	Raw       runtime.RawExtension `json:"raw,omitempty" lockstep:"createonly"`
	RawMsg    json.RawMessage      `json:"rawMsg,omitempty" lockstep:"createonly"`
	Any       any                  `json:"any,omitempty" lockstep:"createonly"`
	Time      *metav1.Time         `json:"time,omitempty" lockstep:"createonly"`
	Qty       resource.Quantity    `json:"qty,omitempty" lockstep:"createonly"`
	RO        string               `json:"ro,omitempty" lockstep:"readonly"`
	ROStruct  *leaf                `json:"roStruct,omitempty" lockstep:"readonly"`
	Free      string               `json:"free,omitempty"`
	Hidden    string               `json:"-"`
	promoted
	*Deep
	Named  namedPart  `json:"named"`
	Inline inlinePart `json:",inline"`
}

type leaf struct {
	ID   string `json:"id,omitempty" lockstep:"createonly"`
	Name string `json:"name,omitempty"`
	Sec  string `json:"sec,omitempty" lockstep:"readonly"`
}

// promoted is unexported and embedded: its fields appear in the parent.
type promoted struct {
	Promoted string `json:"promoted,omitempty" lockstep:"createonly"`
}

// Deep is embedded through a pointer.
type Deep struct {
	DeepID string `json:"deepID,omitempty" lockstep:"createonly"`
}

type namedPart struct {
	Inner string `json:"inner,omitempty" lockstep:"createonly"`
}

type inlinePart struct {
	Inlined string `json:"inlined,omitempty" lockstep:"createonly"`
}

func ptr[T any](v T) *T { return &v }

// describe summarises errors as "path what", what being set, unset,
// changed or readonly, checked against the error type they must have.
func describe(errs field.ErrorList) []string {
	out := []string{}
	for _, e := range errs {
		what := "UNEXPECTED " + string(e.Type) + ": " + e.Detail
		switch {
		case e.Type == field.ErrorTypeInvalid && strings.HasPrefix(e.Detail, "create-only field: it cannot be set after creation"):
			what = "set"
		case e.Type == field.ErrorTypeForbidden && strings.HasPrefix(e.Detail, "create-only field: it cannot be removed after creation"):
			what = "unset"
		case e.Type == field.ErrorTypeInvalid && strings.HasPrefix(e.Detail, "create-only field: it cannot be changed after creation"):
			what = "changed"
		case e.Type == field.ErrorTypeForbidden && strings.HasPrefix(e.Detail, "read-only field: set by lockstep, not by users"):
			what = "readonly"
		}
		out = append(out, e.Field+" "+what)
	}
	return out
}
