package server

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"

	"github.com/lockstep-dev/lockstep/internal/broker/embedded/lifecycle"
	"github.com/lockstep-dev/lockstep/internal/broker/osbapi"
)

// maxBody bounds a request body.
const maxBody = 1 << 20

func writeJSON(w http.ResponseWriter, status int, body any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(body)
}

var statusOf = map[lifecycle.Kind]int{
	lifecycle.BadRequest:    http.StatusBadRequest,
	lifecycle.NotFound:      http.StatusNotFound,
	lifecycle.Conflict:      http.StatusConflict,
	lifecycle.Gone:          http.StatusGone,
	lifecycle.Unprocessable: http.StatusUnprocessableEntity,
	lifecycle.Internal:      http.StatusInternalServerError,
}

func writeError(w http.ResponseWriter, err error) {
	var e *lifecycle.Error
	if !errors.As(err, &e) {
		writeJSON(w, http.StatusInternalServerError, osbapi.ErrorResponse{Description: err.Error()})
		return
	}
	writeJSON(w, statusOf[e.Kind], osbapi.ErrorResponse{Error: e.Code, Description: e.Description})
}

// decode reads a JSON request body into v.
func decode(w http.ResponseWriter, r *http.Request, v any) bool {
	raw, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBody))
	if tooLarge := (*http.MaxBytesError)(nil); errors.As(err, &tooLarge) {
		writeJSON(w, http.StatusRequestEntityTooLarge, osbapi.ErrorResponse{
			Description: fmt.Sprintf("the request body is larger than the %d bytes this broker reads", tooLarge.Limit)})
		return false
	}
	if err != nil {
		writeJSON(w, http.StatusBadRequest, osbapi.ErrorResponse{Description: fmt.Sprintf("read the request body: %v", err)})
		return false
	}
	if err := json.Unmarshal(raw, v); err != nil {
		writeJSON(w, http.StatusBadRequest, osbapi.ErrorResponse{Description: fmt.Sprintf("the request body is not the JSON object this endpoint takes: %v", err)})
		return false
	}
	return true
}

// maintenanceConflict refuses a maintenance_info: this broker's plans have
// none.
func maintenanceConflict(w http.ResponseWriter, mi *osbapi.MaintenanceInfo) bool {
	if mi == nil || mi.Version == "" {
		return false
	}
	writeJSON(w, http.StatusUnprocessableEntity, osbapi.ErrorResponse{Error: osbapi.ErrorCodeMaintenanceInfoConflict,
		Description: fmt.Sprintf("maintenance_info.version %q does not match the catalog: this broker's plans have no maintenance_info", mi.Version)})
	return true
}
