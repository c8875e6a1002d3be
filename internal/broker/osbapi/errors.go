package osbapi

// Error codes the specification defines for the "error" field of an error
// answer.
const (
	ErrorCodeAsyncRequired           = "AsyncRequired"
	ErrorCodeConcurrency             = "ConcurrencyError"
	ErrorCodeRequiresApp             = "RequiresApp"
	ErrorCodeMaintenanceInfoConflict = "MaintenanceInfoConflict"
)

// ErrorResponse is the body of an error answer (4xx, 5xx).
type ErrorResponse struct {
	// Error is a code such as ConcurrencyError; empty when none applies.
	Error string `json:"error,omitempty"`
	// Description is for a person: what went wrong.
	Description string `json:"description,omitempty"`
	// InstanceUsable and UpdateRepeatable may accompany a failed update or
	// deprovision.
	InstanceUsable   *bool `json:"instance_usable,omitempty"`
	UpdateRepeatable *bool `json:"update_repeatable,omitempty"`
}
