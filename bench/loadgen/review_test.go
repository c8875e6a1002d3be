package loadgen

import (
	"context"
	"encoding/json"
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/lockstep-dev/lockstep/internal/certs"
)

// webhook answers every AdmissionReview with answer, over HTTP/2 and TLS.
func webhook(t *testing.T, answer func(*admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse) (*httptest.Server, []byte) {
	t.Helper()
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/broken" {
			http.Error(w, "no", http.StatusInternalServerError)
			return
		}
		var review admissionv1.AdmissionReview
		if err := json.NewDecoder(r.Body).Decode(&review); err != nil || review.Request == nil {
			http.Error(w, "bad review", http.StatusBadRequest)
			return
		}
		resp := answer(review.Request)
		resp.UID = review.Request.UID
		review.Response, review.Request = resp, nil
		_ = json.NewEncoder(w).Encode(review)
	}))
	srv.EnableHTTP2 = true
	srv.StartTLS()
	t.Cleanup(srv.Close)
	return srv, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
}

func review(op admissionv1.Operation) []byte {
	raw, err := json.Marshal(admissionv1.AdmissionReview{
		TypeMeta: metav1.TypeMeta{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview"},
		Request:  &admissionv1.AdmissionRequest{UID: "u1", Operation: op},
	})
	if err != nil {
		panic(err)
	}
	return raw
}

func TestReviewClient(t *testing.T) {
	srv, ca := webhook(t, func(req *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
		if req.Operation == admissionv1.Delete {
			return &admissionv1.AdmissionResponse{Result: &metav1.Status{Code: http.StatusUnprocessableEntity, Message: "create-only field"}}
		}
		return &admissionv1.AdmissionResponse{Allowed: true}
	})
	c, err := NewReviewClient(ca, 5*time.Second)
	require.NoError(t, err)
	defer c.Close()

	tests := []struct {
		name    string
		path    string
		op      admissionv1.Operation
		want    Expect
		wantErr string
	}{
		{name: "allowed as expected", op: admissionv1.Update, want: Expect{Allowed: true}},
		{name: "rejected as expected", op: admissionv1.Delete, want: Expect{Code: http.StatusUnprocessableEntity}},
		{name: "rejected with any code", op: admissionv1.Delete, want: Expect{}},
		{name: "allowed but a rejection was expected", op: admissionv1.Update, want: Expect{Code: http.StatusUnprocessableEntity}, wantErr: "allowed, expected a rejection"},
		{name: "rejected but expected allowed", op: admissionv1.Delete, want: Expect{Allowed: true}, wantErr: "rejected (HTTP 422: create-only field)"},
		{name: "rejected with another code", op: admissionv1.Delete, want: Expect{Code: http.StatusConflict}, wantErr: "expected HTTP 409"},
		{name: "a server error is an error", path: "/broken", op: admissionv1.Update, want: Expect{Allowed: true}, wantErr: "HTTP 500"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			body := review(tt.op)
			do := c.Reviews(srv.URL+tt.path, func(int) []byte { return body }, tt.want)
			err := do(context.Background(), 0)
			if tt.wantErr == "" {
				assert.NoError(t, err)
				return
			}
			require.Error(t, err)
			assert.Contains(t, err.Error(), tt.wantErr)
		})
	}
}

func TestReviewClientTrustsOnlyItsCA(t *testing.T) {
	srv, _ := webhook(t, func(*admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
		return &admissionv1.AdmissionResponse{Allowed: true}
	})
	other, err := certs.Generate([]string{"127.0.0.1"}, time.Hour)
	require.NoError(t, err)
	c, err := NewReviewClient(other.CACert, 5*time.Second)
	require.NoError(t, err)
	defer c.Close()
	_, err = c.Post(context.Background(), srv.URL, review(admissionv1.Update))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "certificate")

	_, err = NewReviewClient([]byte("not pem"), time.Second)
	assert.ErrorContains(t, err, "no PEM certificate")
}

func TestReviewClientUnderLoad(t *testing.T) {
	srv, ca := webhook(t, func(*admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
		return &admissionv1.AdmissionResponse{Allowed: true}
	})
	c, err := NewReviewClient(ca, 5*time.Second)
	require.NoError(t, err)
	defer c.Close()
	body := review(admissionv1.Update)
	res, err := Run(context.Background(), Load{Concurrency: 8, Requests: 50, MaxDuration: 30 * time.Second}, 0,
		Work{Do: c.Reviews(srv.URL, func(int) []byte { return body }, Expect{Allowed: true})})
	require.NoError(t, err)
	assert.Equal(t, 50, res.Completed())
	assert.Zero(t, res.Errors, "%v", res.FirstError)
}
