package store

import (
	"encoding/json"
	"time"
)

// SpecRecord is a service offering the broker learned from a registry.
type SpecRecord struct {
	ServiceID string `json:"service_id"`
	Name      string `json:"name"`
	// Registry is the name of the registry the spec came from.
	Registry string `json:"registry"`
	// Source is where in that registry (directory name, image tag): a
	// bundle there that cannot be read keeps this spec as it is.
	Source string `json:"source,omitempty"`
	// Digest identifies the bundle content (manifest and files).
	Digest string `json:"digest"`
	// Bundle is the serialized bundle (manifest and action files), kept so
	// that instances can still run actions after the registry lost it.
	Bundle json.RawMessage `json:"bundle"`
	// Marked specs are hidden from the catalog and refuse new provisions;
	// the sweep deletes them once no instance uses them.
	Marked     bool      `json:"marked,omitempty"`
	MarkReason string    `json:"mark_reason,omitempty"`
	MarkedAt   time.Time `json:"marked_at,omitzero"`
	UpdatedAt  time.Time `json:"updated_at"`
}

// InstanceState is the life-cycle state of a service instance.
type InstanceState string

// Instance states.
const (
	InstanceProvisioning InstanceState = "provisioning"
	InstanceProvisioned  InstanceState = "provisioned"
	// InstanceFailed is an instance whose provision failed; it can only be
	// deprovisioned.
	InstanceFailed InstanceState = "failed"
)

// Instance is a service instance.
type Instance struct {
	ID               string          `json:"id"`
	ServiceID        string          `json:"service_id"`
	PlanID           string          `json:"plan_id"`
	Parameters       json.RawMessage `json:"parameters,omitempty"`
	Context          json.RawMessage `json:"context,omitempty"`
	OrganizationGUID string          `json:"organization_guid,omitempty"`
	SpaceGUID        string          `json:"space_guid,omitempty"`
	DashboardURL     string          `json:"dashboard_url,omitempty"`
	State            InstanceState   `json:"state"`
	// Job is the token of the latest instance operation (provision, update,
	// deprovision), the one last_operation reports.
	Job string `json:"job"`
	// Lock is the token of the job that holds the instance (any operation,
	// bindings included); empty when no job runs on it.
	Lock      string    `json:"lock,omitempty"`
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
}

// BindingState is the life-cycle state of a service binding.
type BindingState string

// Binding states.
const (
	BindingCreating BindingState = "binding"
	BindingBound    BindingState = "bound"
	// BindingFailed is a binding whose bind failed; it can only be unbound.
	BindingFailed BindingState = "failed"
)

// Binding is a service binding. Credentials are kept here and nowhere else.
type Binding struct {
	InstanceID   string          `json:"instance_id"`
	ID           string          `json:"id"`
	ServiceID    string          `json:"service_id"`
	PlanID       string          `json:"plan_id"`
	Parameters   json.RawMessage `json:"parameters,omitempty"`
	BindResource json.RawMessage `json:"bind_resource,omitempty"`
	Context      json.RawMessage `json:"context,omitempty"`
	AppGUID      string          `json:"app_guid,omitempty"`
	State        BindingState    `json:"state"`
	// Job is the token of the job that creates (or deletes) the binding.
	Job         string          `json:"job"`
	Credentials json.RawMessage `json:"credentials,omitempty"`
	CreatedAt   time.Time       `json:"created_at"`
}

// Method is the operation a job carries out; it names the bundle action.
type Method string

// Job methods.
const (
	Provision   Method = "provision"
	Update      Method = "update"
	Deprovision Method = "deprovision"
	Bind        Method = "bind"
	Unbind      Method = "unbind"
)

// JobState is the state of a job.
type JobState string

// Job states. Pending and running both read "in progress" over OSB.
const (
	// JobPending has not started: it waits for its spec (a provision that
	// arrived while the broker was bootstrapping) or for a runner.
	JobPending   JobState = "pending"
	JobRunning   JobState = "in progress"
	JobSucceeded JobState = "succeeded"
	JobFailed    JobState = "failed"
)

// Finished reports whether the state is final.
func (s JobState) Finished() bool { return s == JobSucceeded || s == JobFailed }

// Identity is the parsed X-Broker-API-Originating-Identity header.
type Identity struct {
	Platform string          `json:"platform"`
	Value    json.RawMessage `json:"value"`
}

// JobRequest is what a job applies: the request as the broker accepted it.
type JobRequest struct {
	ServiceID          string          `json:"service_id"`
	PlanID             string          `json:"plan_id"`
	PreviousPlanID     string          `json:"previous_plan_id,omitempty"`
	Parameters         json.RawMessage `json:"parameters,omitempty"`
	PreviousParameters json.RawMessage `json:"previous_parameters,omitempty"`
	Context            json.RawMessage `json:"context,omitempty"`
	OrganizationGUID   string          `json:"organization_guid,omitempty"`
	SpaceGUID          string          `json:"space_guid,omitempty"`
	BindResource       json.RawMessage `json:"bind_resource,omitempty"`
	AppGUID            string          `json:"app_guid,omitempty"`
}

// Job is one run of a bundle action.
type Job struct {
	Token      string   `json:"token"`
	Method     Method   `json:"method"`
	InstanceID string   `json:"instance_id"`
	BindingID  string   `json:"binding_id,omitempty"`
	State      JobState `json:"state"`
	// Description is for a person: what happened, and what to do.
	Description string `json:"description,omitempty"`
	// Error is the technical cause of a failure.
	Error string `json:"error,omitempty"`
	// RunnerID names the broker process that runs (or ran) the job.
	RunnerID string `json:"runner_id,omitempty"`
	// Deferred jobs wait for their spec to be known (bootstrap).
	Deferred bool `json:"deferred,omitempty"`
	// Retry marks a provision that runs again after it failed; its action
	// gets the state the failed attempt saved.
	Retry bool `json:"retry,omitempty"`
	// ActionRan is set once the bundle action was started (a job can
	// fail before: spec gone, invalid parameters, shutdown).
	ActionRan bool `json:"action_ran,omitempty"`
	// Refused is set when the action refused the request (it judged the
	// input unacceptable and changed nothing).
	Refused bool `json:"refused,omitempty"`
	// InstanceUsable and UpdateRepeatable are what a failed action said
	// about the instance (nil: it said nothing).
	InstanceUsable   *bool `json:"instance_usable,omitempty"`
	UpdateRepeatable *bool `json:"update_repeatable,omitempty"`
	// Timeout, when set, bounds the action below the bundle's (or the
	// broker's default) timeout.
	Timeout    time.Duration `json:"timeout,omitempty"`
	Request    JobRequest    `json:"request"`
	Identity   *Identity     `json:"identity,omitempty"`
	RequestID  string        `json:"request_id,omitempty"`
	CreatedAt  time.Time     `json:"created_at"`
	StartedAt  time.Time     `json:"started_at,omitzero"`
	FinishedAt time.Time     `json:"finished_at,omitzero"`
}

// Runner is the heartbeat record of a broker process that runs jobs.
type Runner struct {
	ID        string    `json:"id"`
	Host      string    `json:"host,omitempty"`
	PID       int       `json:"pid,omitempty"`
	Heartbeat time.Time `json:"heartbeat"`
}

// Gone records that the broker deleted an instance or a binding (a
// deprovision or unbind that succeeded), so that last_operation can answer
// 410 Gone for it and 404 for an identifier it never knew.
type Gone struct {
	// Job is the token of the operation that deleted it.
	Job       string    `json:"job"`
	DeletedAt time.Time `json:"deleted_at"`
}
