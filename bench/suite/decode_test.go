package suite

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	sigsjson "sigs.k8s.io/json"

	"github.com/lockstep-dev/lockstep/api/v1alpha1"
	"github.com/lockstep-dev/lockstep/internal/app"
)

// BenchmarkDecodeInstance compares two ways of decoding the ServiceInstance
// of an AdmissionReview (the realistic object of the admission benchmark,
// managedFields and status included): the way controller-runtime's
// admission.WithValidator decodes (runtime.DecodeInto with the scheme's
// universal deserializer, which first parses the whole object with
// encoding/json to find its apiVersion and kind), and a direct decode into
// the Go type with sigs.k8s.io/json (what the API server's own JSON
// serializer uses underneath). The admission benchmark's profile shows
// the first as most of lockstep's extra CPU per request.
func BenchmarkDecodeInstance(b *testing.B) {
	raw, err := json.Marshal(instance("bench-admission", "orders-db", acme, "db", "small", `{"storageGB":10}`))
	require.NoError(b, err)
	decoder := serializer.NewCodecFactory(app.Scheme()).UniversalDeserializer()
	b.Run("universal-deserializer", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var si v1alpha1.ServiceInstance
			if err := runtime.DecodeInto(decoder, raw, &si); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("sigs-json", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var si v1alpha1.ServiceInstance
			if err := sigsjson.UnmarshalCaseSensitivePreserveInts(raw, &si); err != nil {
				b.Fatal(err)
			}
		}
	})
}
