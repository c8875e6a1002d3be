package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// OperationPhase is where a BrokerOperation stands in its life.
// +kubebuilder:validation:Enum=Pending;InProgress;Succeeded;Failed;Committed;Orphaned;Compensated
type OperationPhase string

// The phases of a BrokerOperation.
const (
	// PhasePending: written, the broker not yet called or its answer not
	// yet recorded (write-ahead). A record has no phase until then; the
	// operations reconciler treats the empty phase as Pending.
	PhasePending OperationPhase = "Pending"
	// PhaseInProgress: the broker accepted and is still working.
	PhaseInProgress OperationPhase = "InProgress"
	// PhaseSucceeded: the broker confirmed; persistence not yet confirmed.
	PhaseSucceeded OperationPhase = "Succeeded"
	// PhaseFailed: the broker refused or failed; nothing changed.
	PhaseFailed OperationPhase = "Failed"
	// PhaseCommitted: the broker and the API server agree.
	PhaseCommitted OperationPhase = "Committed"
	// PhaseOrphaned: the broker carried it out but the object never
	// persisted; compensation is due.
	PhaseOrphaned OperationPhase = "Orphaned"
	// PhaseCompensated: an orphaned operation was undone.
	PhaseCompensated OperationPhase = "Compensated"
)

// TargetKind is the kind of object a broker operation changes:
// ServiceInstance, ServiceBinding, or the kind of an instance of a typed
// kind (in group services.lockstep.dev; OperationTarget.APIGroup says so).
// +kubebuilder:validation:Pattern=`^[A-Z][A-Za-z0-9]*$`
// +kubebuilder:validation:MaxLength=63
type TargetKind string

// The kinds of lockstep.dev a broker operation changes.
const (
	KindServiceInstance TargetKind = "ServiceInstance"
	KindServiceBinding  TargetKind = "ServiceBinding"
)

// OperationTarget is the object a BrokerOperation changes.
type OperationTarget struct {
	// Kind is ServiceInstance, ServiceBinding, or the kind of a typed
	// instance (then APIGroup is its group).
	Kind TargetKind `json:"kind"`
	// APIGroup is the group of Kind when it is not lockstep.dev: the group
	// of typed kinds for an instance of a typed kind. Empty means
	// lockstep.dev.
	// +optional
	APIGroup string `json:"apiGroup,omitempty"`
	// Name of the object.
	Name string `json:"name"`
	// Namespace of the object. A record lives next to its object, except
	// the record of a delete in a namespace that is being deleted (which
	// accepts no new objects): that one lives in lockstep's own namespace.
	// Empty means the record's own namespace.
	// +optional
	Namespace string `json:"namespace,omitempty"`
	// UID of the object.
	// +optional
	UID types.UID `json:"uid,omitempty"`
	// ExternalID is the OSB instance_id or binding_id.
	ExternalID string `json:"externalID"`
	// InstanceID is the OSB instance_id of a binding's instance.
	// +optional
	InstanceID string `json:"instanceID,omitempty"`
}

// Requester is who asked for the change. Never any credentials.
type Requester struct {
	// Username of the Kubernetes user.
	Username string `json:"username"`
	// UID of the Kubernetes user.
	// +optional
	UID string `json:"uid,omitempty"`
	// Groups of the Kubernetes user.
	// +optional
	Groups []string `json:"groups,omitempty"`
}

// BrokerOperationSpec is what an operation applies. It is written once, by
// lockstep, before the broker is called.
type BrokerOperationSpec struct {
	// Target is the object the operation changes.
	Target OperationTarget `json:"target" lockstep:"createonly"`
	// BrokerName is the ServiceBroker called.
	BrokerName string `json:"brokerName" lockstep:"createonly"`
	// ServiceID and PlanID are the OSB ids the operation uses (for an update:
	// the plan it moves to), so that it can be followed or undone even when
	// the target is gone.
	ServiceID string `json:"serviceID" lockstep:"createonly"`
	PlanID    string `json:"planID" lockstep:"createonly"`
	// PreviousPlanID is, for an update that changes the plan, the plan the
	// instance had before it: the specification asks last_operation about
	// an update with the plan from before the update.
	// +optional
	PreviousPlanID string `json:"previousPlanID,omitempty" lockstep:"createonly"`
	// Verb is what is asked of the broker.
	Verb Verb `json:"verb" lockstep:"createonly"`
	// Requester is who asked.
	Requester Requester `json:"requester" lockstep:"createonly"`
	// SpecHash is a hash of the spec the operation applies.
	// +optional
	SpecHash string `json:"specHash,omitempty" lockstep:"createonly"`
	// ParametersDigest is, for an object with spec.parametersFrom, a
	// digest (HMAC-SHA256 under a key of lockstep's) of the parameters
	// sent with the Secrets' values merged in; never the values.
	// +optional
	ParametersDigest string `json:"parametersDigest,omitempty" lockstep:"createonly"`
	// CreateOnlyDigest is, with ParametersDigest, a digest of the
	// create-only parameters sent.
	// +optional
	CreateOnlyDigest string `json:"createOnlyDigest,omitempty" lockstep:"createonly"`
	// Generation of the target the operation applies.
	// +optional
	Generation int64 `json:"generation,omitempty" lockstep:"createonly"`
}

// BrokerOperationStatus is the broker's answer and the operation's phase.
type BrokerOperationStatus struct {
	// Phase of the operation. Empty means Pending: a record written from
	// its lock after lockstep stopped, whose answer is not known yet.
	// +optional
	Phase OperationPhase `json:"phase,omitempty" lockstep:"readonly"`
	// OperationKey is the OSB operation key of an asynchronous operation.
	// +optional
	OperationKey string `json:"operationKey,omitempty" lockstep:"readonly"`
	// HTTPStatus is the status code of the broker's answer.
	// +optional
	HTTPStatus int32 `json:"httpStatus,omitempty" lockstep:"readonly"`
	// Description is the broker's description of the outcome.
	// +optional
	Description string `json:"description,omitempty" lockstep:"readonly"`
	// DashboardURL is the dashboard a provision or update answered.
	// +optional
	DashboardURL string `json:"dashboardURL,omitempty" lockstep:"readonly"`
	// StartTime is when the broker was called (the record's creation),
	// written with the broker's answer.
	// +optional
	StartTime *metav1.Time `json:"startTime,omitempty" lockstep:"readonly"`
	// CompletionTime is when the operation reached a final phase.
	// +optional
	CompletionTime *metav1.Time `json:"completionTime,omitempty" lockstep:"readonly"`
	// TargetInSync is what the operation tells of its target's InSync
	// condition beyond its phase: an outcome lockstep could not learn yet,
	// or a failure after which the broker kept what it held. The target's
	// controller, the only writer of its status, copies it there.
	// +optional
	TargetInSync *InSyncNote `json:"targetInSync,omitempty" lockstep:"readonly"`
}

// InSyncNote is an InSync condition an operation hands to its target.
type InSyncNote struct {
	Status  metav1.ConditionStatus `json:"status"`
	Reason  string                 `json:"reason"`
	Message string                 `json:"message,omitempty"`
}

// BrokerOperation is the journal entry of one state change at a broker.
//
// Unlike lockstep's other kinds it has no status subresource: only
// lockstep writes records (its admission refuses anyone else's create or
// update; a delete is allowed), and a create keeps its status, so that a
// record is written once, with the broker's answer, where a status
// subresource would take a create and then a write of its status.
//
// +kubebuilder:object:root=true
// +kubebuilder:resource:shortName=bop,categories=lockstep
// +kubebuilder:printcolumn:name="Kind",type=string,JSONPath=`.spec.target.kind`
// +kubebuilder:printcolumn:name="Group",type=string,priority=1,JSONPath=`.spec.target.apiGroup`
// +kubebuilder:printcolumn:name="Target",type=string,JSONPath=`.spec.target.name`
// +kubebuilder:printcolumn:name="Verb",type=string,JSONPath=`.spec.verb`
// +kubebuilder:printcolumn:name="User",type=string,JSONPath=`.spec.requester.username`
// +kubebuilder:printcolumn:name="Phase",type=string,JSONPath=`.status.phase`
// +kubebuilder:printcolumn:name="HTTP",type=integer,JSONPath=`.status.httpStatus`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type BrokerOperation struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   BrokerOperationSpec   `json:"spec"`
	Status BrokerOperationStatus `json:"status,omitempty"`
}

// BrokerOperationList is a list of BrokerOperations.
//
// +kubebuilder:object:root=true
type BrokerOperationList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []BrokerOperation `json:"items"`
}

func init() {
	SchemeBuilder.Register(&BrokerOperation{}, &BrokerOperationList{})
}
