package admission

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/go-logr/logr"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/lockstep-dev/lockstep/api/v1alpha1"
)

// testReviewServer serves a chain with one check: planName "refuse" is
// refused, "panic" panics; every run is recorded.
func testReviewServer(seen *[]*Attributes[Instance]) *reviewServer[Instance] {
	check := CheckFunc[Instance]{CheckName: "test", Fn: func(_ context.Context, a *Attributes[Instance]) (field.ErrorList, admission.Warnings, error) {
		*seen = append(*seen, a)
		switch a.Object().Spec.PlanName {
		case "refuse":
			return field.ErrorList{field.Forbidden(field.NewPath("spec", "planName"), "refused for the test")}, nil, nil
		case "panic":
			panic("the check fell over")
		}
		return nil, nil, nil
	}}
	return &reviewServer[Instance]{log: logr.Discard(), handler: &validatingHandler[Instance]{
		validator: &Validator[Instance]{
			Kind:         instanceKind,
			SameSpec:     func(old, new Instance) bool { return old.Spec.PlanName == new.Spec.PlanName },
			Checks:       []Check[Instance]{check},
			DeleteChecks: []Check[Instance]{check},
		},
		new:   func() Instance { return &v1alpha1.ServiceInstance{} },
		parts: func(si Instance) (*metav1.ObjectMeta, any) { return &si.ObjectMeta, &si.Spec },
	}}
}

func TestReviewServer(t *testing.T) {
	object := func(plan string) string {
		return `{"apiVersion":"lockstep.dev/v1alpha1","kind":"ServiceInstance","metadata":{"name":"db","namespace":"team","uid":"uid-1",` +
			`"managedFields":[{"manager":"kubectl"}]},"spec":{"serviceName":"db","planName":"` + plan + `"},"status":{"observedGeneration":1}}`
	}
	reviewOf := func(version, op, old, new string) string {
		req := `"uid":"req-1","operation":"` + op + `","userInfo":{"username":"alice","groups":["devs"]},"dryRun":false`
		if old != "" {
			req += `,"oldObject":` + old
		}
		if new != "" {
			req += `,"object":` + new
		}
		return `{"apiVersion":"admission.k8s.io/` + version + `","kind":"AdmissionReview","request":{` + req + `}}`
	}
	tests := []struct {
		name        string
		body        string
		contentType string
		wantVersion string // of the answer; "" means v1
		allowed     bool
		code        int32
		message     string
		checksRun   int
	}{
		{name: "metadata-only update: allowed without a check", body: reviewOf("v1", "UPDATE", object("small"), object("small")), allowed: true},
		{name: "spec update: checked and allowed", body: reviewOf("v1", "UPDATE", object("small"), object("large")), allowed: true, checksRun: 1},
		{name: "create: checked and refused", body: reviewOf("v1", "CREATE", "", object("refuse")),
			code: http.StatusUnprocessableEntity, message: "spec.planName: Forbidden: refused for the test", checksRun: 1},
		{name: "delete: checked on the persisted object", body: reviewOf("v1", "DELETE", object("small"), ""), allowed: true, checksRun: 1},
		{name: "v1beta1 review: answered in v1beta1", body: reviewOf("v1beta1", "UPDATE", object("small"), object("large")),
			wantVersion: "admission.k8s.io/v1beta1", allowed: true, checksRun: 1},
		{name: "create without an object", body: reviewOf("v1", "CREATE", "", ""), code: http.StatusBadRequest, message: "the admission request carries no object"},
		{name: "update without the persisted object", body: reviewOf("v1", "UPDATE", "", object("small")), code: http.StatusBadRequest,
			message: "the admission request carries no persisted object"},
		{name: "malformed review", body: `{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":`, code: http.StatusBadRequest,
			message: "decoding the AdmissionReview in the admission request"},
		{name: "malformed metadata", body: reviewOf("v1", "CREATE", "", `{"metadata":{"name":7},"spec":{}}`), code: http.StatusBadRequest,
			message: "request.object.metadata.ObjectMeta.name of type string"},
		{name: "review without a request", body: `{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview"}`, code: http.StatusBadRequest,
			message: "the AdmissionReview carries no request"},
		{name: "not an AdmissionReview", body: `{"apiVersion":"v1","kind":"Pod","request":{}}`, code: http.StatusBadRequest,
			message: `the request is a Pod "v1", not an AdmissionReview`},
		{name: "empty body", body: "", code: http.StatusBadRequest, message: "request body is empty"},
		{name: "not JSON", body: reviewOf("v1", "UPDATE", object("small"), object("large")), contentType: "application/yaml",
			code: http.StatusBadRequest, message: "contentType=application/yaml, expected application/json"},
		{name: "too large", body: `{"pad":"` + strings.Repeat("x", maxReviewSize) + `"}`, code: http.StatusRequestEntityTooLarge,
			message: "request entity is too large"},
		{name: "a check that panics: internal error, the server goes on", body: reviewOf("v1", "CREATE", "", object("panic")),
			code: http.StatusInternalServerError, message: "panic: the check fell over", checksRun: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var seen []*Attributes[Instance]
			s := testReviewServer(&seen)
			r := httptest.NewRequest(http.MethodPost, ValidateInstancePath, strings.NewReader(tt.body))
			if tt.body == "" {
				r.Body = http.NoBody
			}
			r.Header.Set("Content-Type", "application/json")
			if tt.contentType != "" {
				r.Header.Set("Content-Type", tt.contentType)
			}
			w := httptest.NewRecorder()
			s.ServeHTTP(w, r)

			assert.Equal(t, http.StatusOK, w.Code, "an answer is always a 200 carrying an AdmissionReview")
			var got admissionv1.AdmissionReview
			require.NoError(t, json.Unmarshal(w.Body.Bytes(), &got), w.Body.String())
			want := tt.wantVersion
			if want == "" {
				want = "admission.k8s.io/v1"
			}
			assert.Equal(t, want, got.APIVersion)
			assert.Equal(t, "AdmissionReview", got.Kind)
			require.NotNil(t, got.Response)
			assert.Equal(t, tt.allowed, got.Response.Allowed, "allowed (result %+v)", got.Response.Result)
			require.NotNil(t, got.Response.Result)
			if tt.allowed {
				assert.Equal(t, int32(http.StatusOK), got.Response.Result.Code)
			} else {
				assert.Equal(t, tt.code, got.Response.Result.Code)
				assert.Contains(t, got.Response.Result.Message, tt.message)
			}
			if tt.code != http.StatusBadRequest && tt.code != http.StatusRequestEntityTooLarge {
				assert.Equal(t, "req-1", string(got.Response.UID), "the answer names the request")
			}
			require.Len(t, seen, tt.checksRun, "checks run")
			for _, a := range seen {
				assert.Equal(t, "alice", a.User.Username, "the chain sees who asked")
				assert.False(t, a.DryRun)
				assert.Equal(t, "db", a.Object().Name)
				assert.Equal(t, "ServiceInstance", a.Object().Kind)
				assert.Empty(t, a.Object().ManagedFields)
			}
		})
	}
}

// The chain must see a dry run as one: it never calls the broker then.
func TestReviewServerPassesDryRunOn(t *testing.T) {
	var seen []*Attributes[Instance]
	s := testReviewServer(&seen)
	body := `{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"req-2","operation":"CREATE","dryRun":true,` +
		`"userInfo":{"username":"bob"},"object":{"metadata":{"name":"db"},"spec":{"planName":"small"}}}}`
	r := httptest.NewRequest(http.MethodPost, ValidateInstancePath, strings.NewReader(body))
	r.Header.Set("Content-Type", "application/json")
	s.ServeHTTP(httptest.NewRecorder(), r)
	require.Len(t, seen, 1)
	assert.True(t, seen[0].DryRun)
	assert.Equal(t, "bob", seen[0].User.Username)
}

// headerAtWrite records the headers a handler set before it wrote the body.
type headerAtWrite struct {
	*httptest.ResponseRecorder
	set http.Header
}

func (w *headerAtWrite) Write(b []byte) (int, error) {
	if w.set == nil {
		w.set = w.Header().Clone()
	}
	return w.ResponseRecorder.Write(b)
}

// Over HTTP/2 a header the handler sets costs one more write to the
// connection per answer; the content type is found by net/http.
func TestReviewServerSetsNoHeader(t *testing.T) {
	var seen []*Attributes[Instance]
	s := testReviewServer(&seen)
	body := `{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"req-3","operation":"CREATE",` +
		`"object":{"metadata":{"name":"db"},"spec":{"planName":"small"}}}}`
	r := httptest.NewRequest(http.MethodPost, ValidateInstancePath, strings.NewReader(body))
	r.Header.Set("Content-Type", "application/json")
	w := &headerAtWrite{ResponseRecorder: httptest.NewRecorder()}
	s.ServeHTTP(w, r)
	require.NotNil(t, w.set, "the answer was written")
	assert.Empty(t, w.set)
	assert.Contains(t, w.Body.String(), `"uid":"req-3"`)
}

// TestReadBody checks that the body is read whole whatever Content-Length
// says, and that the buffer sized from a right one never grows.
func TestReadBody(t *testing.T) {
	body := strings.Repeat("x", 3000)
	tests := []struct {
		name   string
		length int64
		// wantCap is the buffer's capacity afterwards; 0: not checked.
		wantCap int
	}{
		{name: "right length", length: 3000, wantCap: 3001},
		{name: "no length", length: -1},
		{name: "length too small", length: 10},
		{name: "length too large", length: 5000, wantCap: 5001},
		{name: "length beyond the limit", length: maxReviewSize * 2, wantCap: maxReviewSize + 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := readBody(iotest.OneByteReader(strings.NewReader(body)), tt.length)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != body {
				t.Fatalf("read %d bytes, want the %d of the body", len(got), len(body))
			}
			if tt.wantCap != 0 && cap(got) != tt.wantCap {
				t.Errorf("buffer capacity %d, want %d", cap(got), tt.wantCap)
			}
		})
	}
	t.Run("over the limit", func(t *testing.T) {
		got, err := readBody(strings.NewReader(strings.Repeat("x", maxReviewSize+10)), maxReviewSize+10)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != maxReviewSize+1 {
			t.Errorf("read %d bytes, want maxReviewSize+1 = %d (enough to tell the body is too large)", len(got), maxReviewSize+1)
		}
	})
	t.Run("read error", func(t *testing.T) {
		if _, err := readBody(iotest.ErrReader(errors.New("connection reset")), 100); err == nil || err.Error() != "connection reset" {
			t.Errorf("error %v, want the reader's", err)
		}
	})
}
