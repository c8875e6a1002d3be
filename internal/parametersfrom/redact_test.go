package parametersfrom

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

func TestRedact(t *testing.T) {
	params := field.NewPath("spec", "parameters")
	r := Resolved{Sources: map[string]string{"admin": `Secret "a" key "k"`, "port": `Secret "a" key "k"`},
		values: []any{map[string]any{"password": "hunter2"}, jsonNumber("5432")}}
	tests := []struct {
		name    string
		in      *field.Error
		want    string
		notWant []string
	}{
		{name: "an error under a parameter from a Secret loses its value and names the source",
			in:      field.Invalid(params.Child("admin", "password"), "hunter2", `must not be "hunter2"`),
			want:    `spec.parameters.admin.password: Invalid value: must not be (value from a Secret, not shown) (the parameter comes from Secret "a" key "k")`,
			notWant: []string{"hunter2"}},
		{name: "a number from a Secret is hidden where it stands alone",
			in:      field.Invalid(params.Child("port"), 5432, "was 5432; must be below 1024"),
			want:    `spec.parameters.port: Invalid value: was (value from a Secret, not shown); must be below 1024 (the parameter comes from Secret "a" key "k")`,
			notWant: []string{"5432"}},
		{name: "a number from a Secret next to itself is hidden each time",
			in:      field.Invalid(params.Child("size"), 3, "ports 5432 5432,5432"),
			want:    `spec.parameters.size: Invalid value: 3: ports (value from a Secret, not shown) (value from a Secret, not shown),(value from a Secret, not shown)`,
			notWant: []string{"5432"}},
		{name: "an error about another parameter keeps its value, and details lose the Secrets' values",
			in:   field.Invalid(params.Child("size"), 3, `conflicts with {"password":"hunter2"}`),
			want: `spec.parameters.size: Invalid value: 3: conflicts with (value from a Secret, not shown)`, notWant: []string{"hunter2"}},
		{name: "a parameter whose name starts like one from a Secret is not taken for it",
			in:   field.Invalid(params.Child("administrator"), "x", "unknown"),
			want: `spec.parameters.administrator: Invalid value: "x": unknown`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := r.Redact(field.ErrorList{tt.in}, params)
			require.Len(t, got, 1)
			assert.Equal(t, tt.want, got[0].Error())
			for _, n := range tt.notWant {
				assert.NotContains(t, got[0].Error(), n)
			}
		})
	}
	none := Resolved{}
	errs := field.ErrorList{field.Invalid(params.Child("a"), "v", "d")}
	assert.Equal(t, errs, none.Redact(errs, params), "without Secrets nothing changes")
}
