package schema

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestLocate(t *testing.T) {
	doc := object{
		"list":   []any{object{"name": "a"}},
		"labels": object{"app.kubernetes.io/name": "x", "0": "zero"},
		"a/b":    object{"c~d": "y"},
	}
	tests := []struct {
		tokens    []string
		wantPath  string // below spec.parameters
		wantPtr   string
		wantValue any
		wantFound bool
	}{
		{nil, "spec.parameters", "/", doc, true},
		{[]string{"list", "0", "name"}, "spec.parameters.list[0].name", "/list/0/name", "a", true},
		{[]string{"list", "1"}, "spec.parameters.list[1]", "/list/1", nil, false},
		{[]string{"list", "01"}, "spec.parameters.list.01", "/list/01", nil, false},
		{[]string{"labels", "0"}, "spec.parameters.labels.0", "/labels/0", "zero", true},
		{[]string{"labels", "app.kubernetes.io/name"}, "spec.parameters.labels[app.kubernetes.io/name]", "/labels/app.kubernetes.io~1name", "x", true},
		{[]string{"a/b", "c~d"}, "spec.parameters.a/b.c~d", "/a~1b/c~0d", "y", true},
		{[]string{"missing", "deeper"}, "spec.parameters.missing.deeper", "/missing/deeper", nil, false},
	}
	for _, tt := range tests {
		t.Run(tt.wantPtr, func(t *testing.T) {
			p, v, found := locate(doc, tt.tokens)
			assert.Equal(t, tt.wantPath, fieldPath(paramsPath, p).String())
			assert.Equal(t, tt.wantPtr, pointer(tt.tokens))
			assert.Equal(t, tt.wantValue, v)
			assert.Equal(t, tt.wantFound, found)
		})
	}
}

func TestPathString(t *testing.T) {
	assert.Equal(t, "storage.class", path{member("storage"), member("class")}.String())
	assert.Equal(t, "list[0].name", path{member("list"), element(0), member("name")}.String())
	assert.Equal(t, "[a.b].c", path{member("a.b"), member("c")}.String())
	assert.Equal(t, "x[]", path{member("x"), member("")}.String())
}
