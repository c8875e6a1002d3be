package credentials

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/lockstep-dev/lockstep/api/v1alpha1"
)

// TestBoundsBeforeTheBroker shows each bound that the spec alone decides:
// CheckTransforms, which admission runs before the broker is called (and
// for a dry run), refuses the transforms over it, naming the bound.
func TestBoundsBeforeTheBroker(t *testing.T) {
	path := field.NewPath("spec", "secretTransforms")
	many := make([]v1alpha1.SecretTransform, MaxTransforms+1)
	for i := range many {
		many[i] = remove("k")
	}
	tests := []struct {
		name       string
		transforms []v1alpha1.SecretTransform
		want       string // "" when the transforms pass
	}{
		{name: "a range over a large number that writes nothing",
			transforms: []v1alpha1.SecretTransform{addTemplate("x", "{{range 150000000}}{{end}}x")},
			want:       `spec.secretTransforms[0].addKey.template: Invalid value: "{{range 150000000}}{{end}}x": it may take 1200000015 steps, more than the 100000 a binding's templates and JSON paths may take together`},
		{name: "nested ranges over numbers multiply",
			transforms: []v1alpha1.SecretTransform{addTemplate("x", "{{range 1000}}{{range 1000}}y{{end}}{{end}}")},
			want:       "it may take 10016008 steps, more than the 100000"},
		{name: "a range over a number within the bound",
			transforms: []v1alpha1.SecretTransform{addTemplate("x", "{{range 50}}{{range 100}}y{{end}}{{end}}")}},
		{name: "the steps of several templates add up",
			transforms: []v1alpha1.SecretTransform{addTemplate("a", "{{range 5000}}ab{{end}}"), addTemplate("b", "{{range 5000}}ab{{end}}")},
			want:       `spec.secretTransforms[1].addKey.template: Invalid value: "{{range 5000}}ab{{end}}": with the templates and JSON paths before it, it may take 110016 steps`},
		{name: "a range over a number behind a condition counts as if it ran",
			transforms: []v1alpha1.SecretTransform{addTemplate("x", "{{if .flag}}{{range 1000000}}{{end}}{{end}}")},
			want:       "it may take 8000019 steps"},
		{name: "a range over the keys counts once before the broker",
			transforms: []v1alpha1.SecretTransform{addTemplate("x", "{{range $k, $v := .}}{{range $k2, $v2 := $}}{{$k}}{{end}}{{end}}")}},
		{name: "a template longer than the bound",
			transforms: []v1alpha1.SecretTransform{addTemplate("x", strings.Repeat("a", MaxTemplateBytes+1))},
			want:       "spec.secretTransforms[0].addKey.template: Too long: may not be more than 4096 bytes"},
		{name: "a template that defines another",
			transforms: []v1alpha1.SecretTransform{addTemplate("x", `{{define "a"}}{{template "a"}}{{end}}{{template "a"}}`)},
			want:       "it defines or calls other templates"},
		{name: "a block is a definition too",
			transforms: []v1alpha1.SecretTransform{addTemplate("x", `{{block "a" .}}x{{end}}`)},
			want:       "it defines or calls other templates"},
		{name: "a template cannot name the step function",
			transforms: []v1alpha1.SecretTransform{addTemplate("x", `{{_step 1}}`)},
			want:       `not a Go template: template: value:1: function "_step" not defined`},
		{name: "a JSON path longer than the bound",
			transforms: []v1alpha1.SecretTransform{addJSONPath("x", "{."+strings.Repeat("a", MaxJSONPathBytes)+"}")},
			want:       "spec.secretTransforms[0].addKey.jsonPath: Too long: may not be more than 512 bytes"},
		{name: "a JSON path that ranges",
			transforms: []v1alpha1.SecretTransform{addJSONPath("x", "{range .a[*]}{.b}{end}")},
			want:       `it uses "range": a JSON path here finds one value, and may not range`},
		{name: "a JSON path with a union",
			transforms: []v1alpha1.SecretTransform{addJSONPath("x", "{.a['b','c']}")},
			want:       "it uses a union ([a,b])"},
		{name: "a JSON path that descends twice",
			transforms: []v1alpha1.SecretTransform{addJSONPath("x", "{..a..b}")},
			want:       "it descends recursively (..) 2 times or more; a JSON path may do it at most 1 time(s)"},
		{name: "a JSON path that descends once, with a filter",
			transforms: []v1alpha1.SecretTransform{addJSONPath("x", `{..hosts[?(@.role=="primary")].name}`)}},
		{name: "more transforms than the bound",
			transforms: many,
			want:       "spec.secretTransforms: Too many: 33: must have at most 32 items"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			errs := CheckTransforms(tt.transforms, path)
			if tt.want == "" {
				assert.Empty(t, errs)
				return
			}
			require.NotEmpty(t, errs)
			assert.Contains(t, errs.ToAggregate().Error(), tt.want)
		})
	}
}

// TestBoundsWhileTheSecretIsMade shows each bound that the credentials
// decide: the Secret's content is refused, naming the bound, as a
// transform that does not fit the credentials (orphan mitigation undoes
// the bind), and never showing a value.
func TestBoundsWhileTheSecretIsMade(t *testing.T) {
	big := strings.Repeat("z", 300<<10)
	half := strings.Repeat("h", 400<<10)
	quarter := strings.Repeat("q", 250_000)
	keys := map[string][]byte{}
	for i := range 30 {
		keys[fmt.Sprintf("k%02d", i)] = []byte("v")
	}
	tests := []struct {
		name       string
		creds      map[string]any
		extra      map[string][]byte // the Secret "extra" the transforms may copy
		transforms []v1alpha1.SecretTransform
		clock      func() time.Duration // nil: the thread's CPU time
		bound      string               // the bound refused, "" for none
		want       string
	}{
		{name: "ranges over the keys, nested, take their steps",
			extra:      keys,
			transforms: []v1alpha1.SecretTransform{addFrom("extra"), addTemplate("x", "{{range $a, $_ := .}}{{range $b, $_ := $}}{{range $c, $_ := $}}{{range $d, $_ := $}}{{end}}{{end}}{{end}}{{end}}")},
			bound:      BoundSteps, want: "it takes more than the 100000 steps a binding's templates and JSON paths may take together"},
		{name: "a range over a number made at run time",
			transforms: []v1alpha1.SecretTransform{addTemplate("x", "{{range (len .password)}}{{range 9999}}{{end}}{{end}}")},
			bound:      BoundSteps},
		{name: "a template that writes too much",
			transforms: []v1alpha1.SecretTransform{addTemplate("x", `{{range 100}}{{printf "%9999d" 0}}{{end}}`)},
			bound:      BoundOutput, want: "it makes a value of more than 262144 bytes, the most a template or JSON path may make"},
		{name: "a template that prints a key again and again",
			creds:      map[string]any{"big": big},
			transforms: []v1alpha1.SecretTransform{addTemplate("x", `{{.big}}{{.big}}`)},
			bound:      BoundOutput},
		{name: "a template that makes much and writes nothing",
			transforms: []v1alpha1.SecretTransform{addTemplate("x", `{{range 100}}{{$x := printf "%999999d" 0}}{{end}}`)},
			bound:      BoundWork, want: "its functions would make, compare or look up"},
		{name: "a template that escapes much",
			creds:      map[string]any{"big": big},
			transforms: []v1alpha1.SecretTransform{addTemplate("x", `{{range 10}}{{$x := html $.big}}{{end}}`)},
			bound:      BoundWork},
		{name: "a template that compares much",
			creds:      map[string]any{"a": half, "b": half + ""},
			transforms: []v1alpha1.SecretTransform{addTemplate("x", `{{range 10}}{{if eq $.a $.b}}{{end}}{{end}}`)},
			bound:      BoundWork},
		{name: "a template that looks up a long key",
			creds:      map[string]any{"a": half},
			transforms: []v1alpha1.SecretTransform{addTemplate("x", `{{range 20}}{{$x := index $ $.a}}{{end}}`)},
			bound:      BoundWork},
		{name: "a template that runs too long",
			clock:      ticking(25 * time.Millisecond),
			transforms: []v1alpha1.SecretTransform{addTemplate("x", `{{range 100}}y{{end}}`)},
			bound:      BoundTime, want: "it runs longer than 20ms, the time a binding's templates may run together"},
		{name: "a template over a Secret larger than a Secret may be",
			creds:      map[string]any{"a": half, "b": half, "c": half},
			transforms: []v1alpha1.SecretTransform{addTemplate("x", `{{.a}}`)},
			bound:      BoundSecret, want: "more than a Secret may hold (1048576 bytes)"},
		{name: "transforms that make a Secret larger than a Secret may be",
			creds:      map[string]any{"a": quarter, "b": quarter, "c": quarter, "d": quarter},
			transforms: []v1alpha1.SecretTransform{addTemplate("e", `{{.a}}`)},
			bound:      BoundSecret},
		{name: "a JSON path that visits large credentials",
			creds:      map[string]any{"cert": big, "host": "db"},
			transforms: []v1alpha1.SecretTransform{addJSONPath("x", `{..host}`)},
			bound:      BoundSteps},
		{name: "a JSON path that finds a value too large",
			creds:      map[string]any{"cert": big},
			transforms: []v1alpha1.SecretTransform{addJSONPath("x", `{.cert}`)},
			bound:      BoundOutput},
		{name: "a JSON path that descends once, within the bound",
			creds:      map[string]any{"conn": map[string]any{"hosts": []any{map[string]any{"role": "primary", "name": "a"}, map[string]any{"role": "replica", "name": "b"}}}},
			transforms: []v1alpha1.SecretTransform{addJSONPath("x", `{..hosts[?(@.role=="primary")].name}`)}},
		{name: "a template near its bounds works",
			extra:      keys,
			transforms: []v1alpha1.SecretTransform{addFrom("extra"), addTemplate("x", `{{range $k, $v := .}}{{range 40}}{{$k}}={{html $v}};{{end}}{{end}}`)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.clock != nil {
				defer func(c func() time.Duration) { clock = c }(clock)
				clock = tt.clock
			}
			creds := tt.creds
			if creds == nil {
				creds = map[string]any{"username": "app-user", "password": "hunter2-secret"}
			}
			extra := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "extra"}, Data: tt.extra}
			b := &v1alpha1.ServiceBinding{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "b", UID: "uid"},
				Spec: v1alpha1.ServiceBindingSpec{SecretTransforms: tt.transforms}}
			start := time.Now()
			_, err := Content(context.Background(), fake.NewClientBuilder().WithObjects(extra).Build(), b, Offering{Provider: "acme"}, creds)
			elapsed := time.Since(start)
			if tt.bound == "" {
				require.NoError(t, err)
				return
			}
			require.Error(t, err)
			var te *TransformError
			require.ErrorAs(t, err, &te, "a bound is a transform that does not fit")
			var bound *BoundError
			require.True(t, errors.As(err, &bound), "the refusal names the bound: %v", err)
			assert.Equal(t, tt.bound, bound.Bound)
			assert.Contains(t, err.Error(), tt.want)
			for _, v := range []string{"hunter2-secret", big[:64], half[:64]} {
				assert.NotContains(t, err.Error(), v, "no value in a refusal")
			}
			t.Logf("refused in %s: %v", elapsed, err)
		})
	}
}

// ticking is a clock that moves on by step at every reading.
func ticking(step time.Duration) func() time.Duration {
	var now time.Duration
	return func() time.Duration {
		now += step
		return now
	}
}
