package validate

import (
	"reflect"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestFieldType(t *testing.T) {
	type inner struct {
		Name string `json:"name"`
	}
	type Embedded struct {
		Promoted int64 `json:"promoted"`
	}
	type outer struct {
		Embedded
		Ref     *inner `json:"ref,omitempty"`
		Plain   inner  `json:"plain"`
		Skipped string `json:"-"`
		NoTag   bool
	}
	tests := []struct {
		path string
		want reflect.Type
	}{
		{"ref", reflect.TypeFor[*inner]()},
		{"ref.name", reflect.TypeFor[string]()},
		{"plain.name", reflect.TypeFor[string]()},
		{"promoted", reflect.TypeFor[int64]()},
		{"NoTag", reflect.TypeFor[bool]()},
		{"Skipped", nil},
		{"missing", nil},
		{"ref.name.deeper", nil},
	}
	for _, tt := range tests {
		got, ok := FieldType(reflect.TypeFor[*outer](), tt.path)
		assert.Equal(t, tt.want != nil, ok, tt.path)
		assert.Equal(t, tt.want, got, tt.path)
	}
}
