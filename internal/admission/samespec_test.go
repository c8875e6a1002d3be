package admission

import (
	"reflect"
	"testing"

	"github.com/stretchr/testify/assert"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/lockstep-dev/lockstep/api/v1alpha1"
	"github.com/lockstep-dev/lockstep/internal/journal"
)

// sameInstanceSpec agrees with the journal's SpecHash, which tells a
// respelling of the same parameters from a change.
func TestSameInstanceSpecAgreesWithTheJournal(t *testing.T) {
	base := v1alpha1.ServiceInstanceSpec{BrokerName: "acme", ServiceName: "db", PlanName: "small", ExternalID: "ext-1",
		Parameters: &runtime.RawExtension{Raw: []byte(`{"region":"eu"}`)}}
	variants := map[string]func(*v1alpha1.ServiceInstanceSpec){
		"same":        func(*v1alpha1.ServiceInstanceSpec) {},
		"broker":      func(s *v1alpha1.ServiceInstanceSpec) { s.BrokerName = "other" },
		"service":     func(s *v1alpha1.ServiceInstanceSpec) { s.ServiceName = "queue" },
		"plan":        func(s *v1alpha1.ServiceInstanceSpec) { s.PlanName = "large" },
		"external id": func(s *v1alpha1.ServiceInstanceSpec) { s.ExternalID = "ext-2" },
		"parameters": func(s *v1alpha1.ServiceInstanceSpec) {
			s.Parameters = &runtime.RawExtension{Raw: []byte(`{"region":"us"}`)}
		},
		"parameters respelled": func(s *v1alpha1.ServiceInstanceSpec) {
			s.Parameters = &runtime.RawExtension{Raw: []byte(`{ "region": "eu" }`)}
		},
		"no parameters":    func(s *v1alpha1.ServiceInstanceSpec) { s.Parameters = nil },
		"empty parameters": func(s *v1alpha1.ServiceInstanceSpec) { s.Parameters = &runtime.RawExtension{} },
		"parameters from a Secret": func(s *v1alpha1.ServiceInstanceSpec) {
			s.ParametersFrom = []v1alpha1.ParametersFromSource{{SecretKeyRef: v1alpha1.SecretKeyReference{Name: "s", Key: "k"}}}
		},
		"parameters from, empty":     func(s *v1alpha1.ServiceInstanceSpec) { s.ParametersFrom = []v1alpha1.ParametersFromSource{} },
		"parameters from generation": func(s *v1alpha1.ServiceInstanceSpec) { s.ParametersFromGeneration = 2 },
		"parameters, same content": func(s *v1alpha1.ServiceInstanceSpec) {
			s.Parameters = &runtime.RawExtension{Raw: []byte(`{"region":"eu"}`)}
		},
	}
	for name, change := range variants {
		t.Run(name, func(t *testing.T) {
			other := base
			change(&other)
			same := journal.SpecHash(base) == journal.SpecHash(other)
			assert.Equal(t, same, sameInstanceSpec(&base, &other))
			assert.Equal(t, same, sameInstanceSpec(&other, &base))
		})
	}
	empty := v1alpha1.ServiceInstanceSpec{}
	assert.True(t, sameInstanceSpec(&empty, &v1alpha1.ServiceInstanceSpec{}))
}

// A field added to the spec must be compared by sameInstanceSpec: two specs
// that differ only in it must not count as the same.
func TestSameInstanceSpecComparesEveryField(t *testing.T) {
	typ := reflect.TypeFor[v1alpha1.ServiceInstanceSpec]()
	for i := range typ.NumField() {
		f := typ.Field(i)
		t.Run(f.Name, func(t *testing.T) {
			var a, b v1alpha1.ServiceInstanceSpec
			v := reflect.ValueOf(&b).Elem().Field(i)
			switch v.Kind() {
			case reflect.String:
				v.SetString("x")
			case reflect.Pointer:
				v.Set(reflect.New(v.Type().Elem()))
				if raw, ok := v.Interface().(*runtime.RawExtension); ok {
					raw.Raw = []byte(`{}`)
				}
			case reflect.Int64:
				v.SetInt(1)
			case reflect.Slice:
				v.Set(reflect.MakeSlice(v.Type(), 1, 1))
			default:
				t.Fatalf("field %s of kind %s: teach this test (and sameInstanceSpec) about it", f.Name, v.Kind())
			}
			assert.False(t, sameInstanceSpec(&a, &b), "specs that differ in %s count as the same: compare it in sameInstanceSpec", f.Name)
			assert.False(t, sameInstanceSpec(&a, &b), "specs that differ in %s count as the same", f.Name)
		})
	}
}
