package osbapi

// State is the state of an asynchronous operation.
type State string

// The states last_operation reports.
const (
	StateInProgress State = "in progress"
	StateSucceeded  State = "succeeded"
	StateFailed     State = "failed"
)

// Final reports whether s ends the operation.
func (s State) Final() bool { return s == StateSucceeded || s == StateFailed }

// LastOperationResponse is the body of GET .../last_operation.
type LastOperationResponse struct {
	State       State  `json:"state"`
	Description string `json:"description,omitempty"`
	// InstanceUsable says, after a failed update or deprovision, whether
	// the instance is still there and usable.
	InstanceUsable *bool `json:"instance_usable,omitempty"`
	// UpdateRepeatable says whether a failed update may be sent again.
	UpdateRepeatable *bool `json:"update_repeatable,omitempty"`
}
