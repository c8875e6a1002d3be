package server

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/lockstep-dev/lockstep/internal/broker/embedded/lifecycle"
	"github.com/lockstep-dev/lockstep/internal/broker/embedded/store"
	"github.com/lockstep-dev/lockstep/internal/broker/osbapi"
)

// Options configure the server.
type Options struct {
	Service *lifecycle.Service
	// Username and Password are the basic-auth credentials; an empty
	// Username disables authentication.
	Username string
	Password string
	// RetryAfter is sent with last_operation answers that are in progress;
	// zero sends none.
	RetryAfter time.Duration
	Logger     *slog.Logger
}

// Server serves the OSB API.
type Server struct {
	opts Options
	mux  *http.ServeMux
}

// New returns the OSB API handler.
func New(opts Options) *Server {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	s := &Server{opts: opts, mux: http.NewServeMux()}
	const inst = "/v2/service_instances/{instance_id}"
	const bind = inst + "/service_bindings/{binding_id}"
	s.mux.HandleFunc("GET /v2/catalog", s.catalog)
	s.mux.HandleFunc("PUT "+inst, s.provision)
	s.mux.HandleFunc("PATCH "+inst, s.updateInstance)
	s.mux.HandleFunc("DELETE "+inst, s.deprovision)
	s.mux.HandleFunc("GET "+inst, s.getInstance)
	s.mux.HandleFunc("GET "+inst+"/last_operation", s.instanceLastOperation)
	s.mux.HandleFunc("PUT "+bind, s.bind)
	s.mux.HandleFunc("DELETE "+bind, s.unbind)
	s.mux.HandleFunc("GET "+bind, s.getBinding)
	s.mux.HandleFunc("GET "+bind+"/last_operation", s.bindingLastOperation)
	return s
}

type ctxKey int

const (
	keyIdentity ctxKey = iota
	keyRequestID
)

// ServeHTTP checks the headers every OSB request needs, then routes.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	rec := &statusRecorder{ResponseWriter: w, status: http.StatusOK}
	requestID := r.Header.Get(osbapi.HeaderRequestIdentity)
	if requestID != "" {
		rec.Header().Set(osbapi.HeaderRequestIdentity, requestID)
	}
	defer func() {
		s.opts.Logger.Info("osb request", "method", r.Method, "path", r.URL.Path, "status", rec.status,
			"request_id", requestID, "duration", time.Since(start))
	}()

	if s.opts.Username != "" && !authorized(r, s.opts.Username, s.opts.Password) {
		rec.Header().Set("WWW-Authenticate", `Basic realm="lockstep-broker"`)
		writeJSON(rec, http.StatusUnauthorized, osbapi.ErrorResponse{Description: "authentication failed: this broker needs HTTP basic authentication with its configured username and password"})
		return
	}
	if err := checkVersion(r.Header.Get(osbapi.HeaderAPIVersion)); err != nil {
		writeJSON(rec, http.StatusPreconditionFailed, osbapi.ErrorResponse{Description: err.Error()})
		return
	}
	identity, err := parseIdentity(r.Header.Get(osbapi.HeaderOriginatingIdentity))
	if err != nil {
		writeJSON(rec, http.StatusBadRequest, osbapi.ErrorResponse{Description: err.Error()})
		return
	}
	if _, pattern := s.mux.Handler(r); pattern == "" {
		s.noEndpoint(rec, r)
		return
	}
	ctx := context.WithValue(r.Context(), keyIdentity, identity)
	ctx = context.WithValue(ctx, keyRequestID, requestID)
	s.mux.ServeHTTP(rec, r.WithContext(ctx))
}

// noEndpoint answers 405 for a path served with other methods, else 404.
func (s *Server) noEndpoint(w http.ResponseWriter, r *http.Request) {
	var allowed []string
	for _, m := range []string{http.MethodGet, http.MethodPut, http.MethodPatch, http.MethodDelete} {
		probe := r.Clone(r.Context())
		probe.Method = m
		if _, pattern := s.mux.Handler(probe); pattern != "" {
			allowed = append(allowed, m)
		}
	}
	if len(allowed) == 0 {
		writeJSON(w, http.StatusNotFound, osbapi.ErrorResponse{Description: "no OSB endpoint " + r.Method + " " + r.URL.Path})
		return
	}
	w.Header().Set("Allow", strings.Join(allowed, ", "))
	writeJSON(w, http.StatusMethodNotAllowed, osbapi.ErrorResponse{Description: fmt.Sprintf("%s does not take %s (it takes %s)", r.URL.Path, r.Method, strings.Join(allowed, ", "))})
}

func common(r *http.Request) lifecycle.Common {
	id, _ := r.Context().Value(keyIdentity).(*store.Identity)
	rid, _ := r.Context().Value(keyRequestID).(string)
	return lifecycle.Common{
		AcceptsIncomplete: r.URL.Query().Get("accepts_incomplete") == "true",
		Identity:          id,
		RequestID:         rid,
	}
}

func (s *Server) retryAfter(w http.ResponseWriter, op osbapi.LastOperationResponse) {
	if s.opts.RetryAfter > 0 && op.State == osbapi.StateInProgress {
		secs := int(s.opts.RetryAfter.Round(time.Second) / time.Second)
		w.Header().Set("Retry-After", strconv.Itoa(max(secs, 1)))
	}
}

type statusRecorder struct {
	http.ResponseWriter
	status int
}

func (r *statusRecorder) WriteHeader(code int) {
	r.status = code
	r.ResponseWriter.WriteHeader(code)
}
