package credentials

import (
	"context"
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/lockstep-dev/lockstep/api/v1alpha1"
	"github.com/lockstep-dev/lockstep/bench/cputime"
)

// BenchmarkTransformsAtTheirBounds is what the most expensive secret
// transforms the bounds accept cost a binding: the check before the
// broker, then the Secret made with a template that takes nearly all the
// steps and escapes every key it ranges over (the row "a template near
// its bounds works" of TestBoundsWhileTheSecretIsMade).
func BenchmarkTransformsAtTheirBounds(b *testing.B) {
	keys := map[string][]byte{}
	for i := range 30 {
		keys[fmt.Sprintf("k%02d", i)] = []byte("<value & more>")
	}
	extra := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "extra"}, Data: keys}
	c := fake.NewClientBuilder().WithObjects(extra).Build()
	binding := &v1alpha1.ServiceBinding{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "b", UID: "uid"},
		Spec: v1alpha1.ServiceBindingSpec{SecretTransforms: []v1alpha1.SecretTransform{addFrom("extra"),
			addTemplate("x", `{{range $k, $v := .}}{{range 40}}{{$k}}={{html $v}};{{end}}{{end}}`)}}}
	creds := map[string]any{"username": "app-user", "password": "hunter2-secret"}
	path := field.NewPath("spec", "secretTransforms")
	stop := cputime.Start(b)
	for b.Loop() {
		if errs := CheckTransforms(binding.Spec.SecretTransforms, path); len(errs) > 0 {
			b.Fatal(errs)
		}
		if _, err := Content(context.Background(), c, binding, Offering{Provider: "acme"}, creds); err != nil {
			b.Fatal(err)
		}
	}
	stop()
}

// BenchmarkTransformsRefusedUnboundedRange is what refusing a template
// of unbounded iteration costs: it is refused from its text, before it
// runs.
func BenchmarkTransformsRefusedUnboundedRange(b *testing.B) {
	ts := []v1alpha1.SecretTransform{addTemplate("x", "{{range 150000000}}{{end}}x")}
	path := field.NewPath("spec", "secretTransforms")
	stop := cputime.Start(b)
	for b.Loop() {
		if errs := CheckTransforms(ts, path); len(errs) == 0 {
			b.Fatal("not refused")
		}
	}
	stop()
}
