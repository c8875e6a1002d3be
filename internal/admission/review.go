package admission

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"

	"github.com/go-logr/logr"
	admissionv1 "k8s.io/api/admission/v1"
	admissionv1beta1 "k8s.io/api/admission/v1beta1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
)

// maxReviewSize is the largest AdmissionReview read, as controller-runtime.
const maxReviewSize = 7 << 20

// reviewServer serves a validatingHandler over HTTP. It does what
// controller-runtime's admission.Webhook does (read the AdmissionReview,
// judge its request, write the answer with the request's uid, in the
// review's own version), but reads the review in one pass that also cuts
// its objects into the parts the chain reads. admission.Webhook decodes
// the review twice (once only to learn its apiVersion and kind), copies
// both objects, and leaves them to be read again by the handler: on the
// requests that never reach the broker, that is most of the work.
type reviewServer[T client.Object] struct {
	handler *validatingHandler[T]
	log     logr.Logger
}

// review is an AdmissionReview whose objects are cut into their parts
// while it is read. The outer fields win over the embedded ones of the
// same JSON name.
type review struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Request    *struct {
		admissionv1.AdmissionRequest
		Object    *splitObject `json:"object"`
		OldObject *splitObject `json:"oldObject"`
	} `json:"request"`
}

// ServeHTTP implements http.Handler.
func (s *reviewServer[T]) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	version := admissionv1.SchemeGroupVersion
	body, status, err := readReview(r)
	if err != nil {
		s.log.Info("bad admission request", "error", err.Error())
		s.write(w, version, admission.Errored(status, err))
		return
	}
	var rv review
	if err := unmarshal(body, &rv, "AdmissionReview"); err != nil {
		s.log.Info("bad admission request", "error", err.Error())
		s.write(w, version, admission.Errored(http.StatusBadRequest, err))
		return
	}
	switch gv, _ := schema.ParseGroupVersion(rv.APIVersion); {
	case rv.Kind != "AdmissionReview" || (gv != admissionv1.SchemeGroupVersion && gv != admissionv1beta1.SchemeGroupVersion):
		err = fmt.Errorf("the request is a %s %q, not an AdmissionReview of admission.k8s.io/v1 or v1beta1", rv.Kind, rv.APIVersion)
	case rv.Request == nil:
		err = errors.New("the AdmissionReview carries no request")
	default:
		version = gv
	}
	if err != nil {
		s.log.Info("bad admission request", "error", err.Error())
		s.write(w, version, admission.Errored(http.StatusBadRequest, err))
		return
	}
	// The chain reads the request's user and dry-run flag; its objects
	// are passed on already cut into parts.
	req := admission.Request{AdmissionRequest: rv.Request.AdmissionRequest}
	s.write(w, version, s.judge(r.Context(), req, rv.Request.Object, rv.Request.OldObject))
}

// judge runs the handler as admission.Webhook.Handle does: with a logger
// in the context, a panic answered as an internal error, and the answer
// completed with the request's uid.
//
// The context's logger does not carry the request's uid: the JSON logger
// would encode it on every request, and the chain logs through loggers of
// its own, naming what it acts on. What is logged here names the request.
func (s *reviewServer[T]) judge(ctx context.Context, req admission.Request, object, oldObject *splitObject) (resp admission.Response) {
	defer func() {
		if p := recover(); p != nil {
			s.log.Info("panic while judging an admission request", "requestID", req.UID, "panic", fmt.Sprint(p))
			resp = admission.Errored(http.StatusInternalServerError, fmt.Errorf("panic: %v [recovered]", p))
			resp.UID = req.UID
		}
	}()
	resp = s.handler.handle(logf.IntoContext(ctx, s.log), req, object, oldObject)
	if err := resp.Complete(req); err != nil {
		resp = admission.Errored(http.StatusInternalServerError, fmt.Errorf("encoding the answer: %w", err))
		resp.UID = req.UID
	}
	return resp
}

// readReview reads a request's body, which must be JSON and at most
// maxReviewSize bytes; on failure it also returns the HTTP status to
// answer with.
func readReview(r *http.Request) ([]byte, int32, error) {
	if r.Body == nil || r.Body == http.NoBody {
		return nil, http.StatusBadRequest, errors.New("request body is empty")
	}
	defer func() { _ = r.Body.Close() }()
	if ct := r.Header.Get("Content-Type"); ct != "application/json" {
		return nil, http.StatusBadRequest, fmt.Errorf("contentType=%s, expected application/json", ct)
	}
	body, err := readBody(r.Body, r.ContentLength)
	if err != nil {
		return nil, http.StatusBadRequest, fmt.Errorf("reading the request body: %w", err)
	}
	if len(body) > maxReviewSize {
		return nil, http.StatusRequestEntityTooLarge, fmt.Errorf("request entity is too large; limit is %d bytes", maxReviewSize)
	}
	return body, 0, nil
}

// readBody reads at most maxReviewSize+1 bytes of body into a buffer sized
// from the request's Content-Length, which the API server sends, instead
// of growing a buffer and copying the body over and over as io.ReadAll
// does. A missing or wrong length only costs that growing again.
func readBody(body io.Reader, length int64) ([]byte, error) {
	size := int64(512)
	if length > 0 {
		size = min(length, maxReviewSize) + 1 // +1: room to read EOF without growing
	}
	buf := make([]byte, 0, size)
	limited := io.LimitReader(body, maxReviewSize+1)
	for {
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)] // grow, as io.ReadAll does
		}
		n, err := limited.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if err == io.EOF {
			return buf, nil
		}
		if err != nil {
			return buf, err
		}
	}
}

// write answers with an AdmissionReview of the given version. Like
// admission.Webhook it sets no header: net/http finds the content type
// itself, and over HTTP/2 a header set by the handler costs one more write
// to the connection per answer.
func (s *reviewServer[T]) write(w http.ResponseWriter, version schema.GroupVersion, resp admission.Response) {
	out := admissionv1.AdmissionReview{Response: &resp.AdmissionResponse}
	out.SetGroupVersionKind(version.WithKind("AdmissionReview"))
	if err := json.NewEncoder(w).Encode(out); err != nil {
		s.log.Info("could not write an admission answer", "error", err.Error())
	}
}
