package v1alpha1

import (
	"k8s.io/apimachinery/pkg/runtime"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The marketplace: ServiceOfferings and ServicePlans show what the
// registered brokers' catalogs offer, one object per service and per plan.
// lockstep writes them from each broker's catalog, and only lockstep: the
// validating webhook refuses every other writer. Admission never reads them;
// it reads the catalog cache.

// LabelBroker is on every ServiceOffering and ServicePlan: the ServiceBroker
// whose catalog it comes from (when the broker's name fits a label value).
const LabelBroker = "lockstep.dev/broker"

// ConditionSchemasUsable is the condition type that says whether lockstep
// can use a plan's parameter schemas (on a ServicePlan), or every plan's
// (on a ServiceBroker).
const ConditionSchemasUsable = "SchemasUsable"

// MaintenanceInfo is a plan's maintenance version, as the broker gave it.
type MaintenanceInfo struct {
	// Version of the plan's maintenance (semantic version).
	Version string `json:"version"`
	// Description of what the version brings.
	// +optional
	Description string `json:"description,omitempty"`
}

// PlanSchemas are a plan's three parameter schemas, as the broker gave them.
type PlanSchemas struct {
	// InstanceCreate is the schema of a provision's parameters
	// (service_instance.create.parameters).
	// +kubebuilder:pruning:PreserveUnknownFields
	// +kubebuilder:validation:Schemaless
	// +optional
	InstanceCreate *runtime.RawExtension `json:"instanceCreate,omitempty"`
	// InstanceUpdate is the schema of an update's parameters
	// (service_instance.update.parameters).
	// +kubebuilder:pruning:PreserveUnknownFields
	// +kubebuilder:validation:Schemaless
	// +optional
	InstanceUpdate *runtime.RawExtension `json:"instanceUpdate,omitempty"`
	// BindingCreate is the schema of a bind's parameters
	// (service_binding.create.parameters).
	// +kubebuilder:pruning:PreserveUnknownFields
	// +kubebuilder:validation:Schemaless
	// +optional
	BindingCreate *runtime.RawExtension `json:"bindingCreate,omitempty"`
}

// PlanParameter is one top-level parameter of a plan's create schema, for a
// person reading `kubectl describe serviceplan`. describe prints the
// fields in alphabetical order and the items of a list without a
// separator: createOnly is always present and sorts first, so that each
// parameter starts with it.
type PlanParameter struct {
	// Name of the parameter (a key of spec.parameters).
	Name string `json:"name"`
	// Type is the schema's "type" ("string", "integer", "object"...; several
	// joined by "|"); empty when the schema does not say.
	// +optional
	Type string `json:"type,omitempty"`
	// Description is the schema's "description" (or else its "title").
	// +optional
	Description string `json:"description,omitempty"`
	// Required is true when the create schema requires the parameter.
	// +optional
	Required bool `json:"required,omitempty"`
	// Values are the allowed values: the schema's "enum" (or "const"),
	// each as JSON.
	// +optional
	Values []string `json:"values,omitempty"`
	// Default is the schema's "default", as JSON.
	// +optional
	Default string `json:"default,omitempty"`
	// CreateOnly is true when the parameter (or a part of it) cannot change
	// after creation: it is in the create schema, not in the update schema.
	CreateOnly bool `json:"createOnly"`
}

// ServiceOfferingSpec is one service of a broker's catalog.
type ServiceOfferingSpec struct {
	// BrokerName is the ServiceBroker whose catalog has the service.
	BrokerName string `json:"brokerName" lockstep:"readonly"`
	// Name of the service at the broker (what ServiceInstances name in
	// spec.serviceName).
	Name string `json:"name" lockstep:"readonly"`
	// ID of the service at the broker.
	ID string `json:"id" lockstep:"readonly"`
	// Description of the service, from the broker.
	// +optional
	Description string `json:"description,omitempty" lockstep:"readonly"`
	// Bindable is true when instances of the service can be bound (a plan
	// may say otherwise).
	// +optional
	Bindable bool `json:"bindable,omitempty" lockstep:"readonly"`
	// PlanUpdateable is true when instances may change plan (a plan may say
	// otherwise).
	// +optional
	PlanUpdateable bool `json:"planUpdateable,omitempty" lockstep:"readonly"`
	// InstancesRetrievable is true when the broker lets lockstep read its
	// instances (needed for adoption and drift detection).
	// +optional
	InstancesRetrievable bool `json:"instancesRetrievable,omitempty" lockstep:"readonly"`
	// BindingsRetrievable is true when the broker lets lockstep read its
	// bindings.
	// +optional
	BindingsRetrievable bool `json:"bindingsRetrievable,omitempty" lockstep:"readonly"`
	// Tags of the service, from the broker.
	// +optional
	Tags []string `json:"tags,omitempty" lockstep:"readonly"`
	// Metadata of the service, as the broker gave it.
	// +kubebuilder:pruning:PreserveUnknownFields
	// +kubebuilder:validation:Schemaless
	// +optional
	Metadata *runtime.RawExtension `json:"metadata,omitempty" lockstep:"readonly"`
}

// MarketplaceStatus is the status of a ServiceOffering or ServicePlan.
type MarketplaceStatus struct {
	// RemovedFromCatalog is true when the entry left the broker's catalog
	// while instances still use it: it takes no new instances, and goes
	// once no instance uses it.
	// +optional
	RemovedFromCatalog bool `json:"removedFromCatalog,omitempty" lockstep:"readonly"`
	// Conditions: SchemasUsable (plans) is False when lockstep cannot use
	// a schema the broker gave, with the reason.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty" lockstep:"readonly"`
}

// ConditionTypedKindReady is the condition type that says, on a
// ServiceOffering whose broker activates typed kinds for its service,
// whether the service's typed kind can be used, and if not, why.
const ConditionTypedKindReady = "TypedKindReady"

// ServiceOfferingStatus is the status of a ServiceOffering.
type ServiceOfferingStatus struct {
	MarketplaceStatus `json:",inline"`
	// TypedKind is the service's typed kind, when its ServiceBroker
	// activates one (spec.typedKinds) and it got one; the TypedKindReady
	// condition says what became of it.
	// +optional
	TypedKind *TypedKindStatus `json:"typedKind,omitempty" lockstep:"readonly"`
}

// TypedKindStatus is a service's typed kind: its names, its
// CustomResourceDefinition, and what of the plans' schemas the CRD could
// not hold.
type TypedKindStatus struct {
	// Kind is the kind's name. It is kept while the service stays
	// activated, even when the service is renamed at the broker; the
	// ServiceBroker's spec.typedKinds may name another.
	Kind string `json:"kind" lockstep:"readonly"`
	// Plural is the kind's resource name (kubectl get PLURAL).
	Plural string `json:"plural" lockstep:"readonly"`
	// ShortNames of the kind, where they are not taken.
	// +optional
	ShortNames []string `json:"shortNames,omitempty" lockstep:"readonly"`
	// APIVersion is the kind's group and version.
	APIVersion string `json:"apiVersion" lockstep:"readonly"`
	// CRDName is the name of the kind's CustomResourceDefinition.
	CRDName string `json:"crdName" lockstep:"readonly"`
	// Established is true when the API server serves the kind: its CRD,
	// which lockstep applies, is established.
	Established bool `json:"established" lockstep:"readonly"`
	// DeprecatedParameters are the parameters that no plan has any more
	// and that the CRD keeps, marked deprecated, because objects of the
	// kind still set them: each a path below spec.parameters, names
	// joined with dots ("tier", "backup.window"), "[*]" for an array's
	// items ("nodes[*].zone"), "*" for a map's values, a name with a dot
	// or a bracket in brackets.
	// +optional
	DeprecatedParameters []string `json:"deprecatedParameters,omitempty" lockstep:"readonly"`
	// FreeParameters, when set, says why spec.parameters is free JSON, as
	// on ServiceInstance, instead of typed from the plans' schemas.
	// +optional
	FreeParameters string `json:"freeParameters,omitempty" lockstep:"readonly"`
	// Dropped are the schema keywords the CRD does not hold: there the
	// API server accepts more than the schema, and lockstep's webhook
	// checks the plan's full schema.
	// +optional
	Dropped []DroppedKeyword `json:"dropped,omitempty" lockstep:"readonly"`
	// DroppedNotShown is how many more dropped keywords there are than
	// Dropped lists.
	// +optional
	DroppedNotShown int32 `json:"droppedNotShown,omitempty" lockstep:"readonly"`
	// RenderedFrom identifies what the kind was rendered from (a hash of
	// the service as the catalog has it, of the kind's names and of the
	// revision of lockstep's renderer): lockstep renders the kind again
	// only when it changes.
	RenderedFrom string `json:"renderedFrom" lockstep:"readonly"`
}

// DroppedKeyword is a JSON Schema keyword that a typed kind's CRD does not
// hold.
type DroppedKeyword struct {
	// Path is the keyword's place: the plan, which of its schemas and the
	// JSON pointer ("plan small, create schema, /properties/size"), or the
	// parameter where the plans differ ("spec.parameters.size").
	Path string `json:"path" lockstep:"readonly"`
	// Keyword is the JSON Schema keyword ("patternProperties").
	Keyword string `json:"keyword" lockstep:"readonly"`
	// Why the CRD does not hold it, and what it does instead.
	Why string `json:"why" lockstep:"readonly"`
}

// ServiceOffering is one service of a registered broker's catalog, written
// by lockstep from the catalog; read-only for everybody else.
//
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Cluster,shortName=offering;offerings,categories=marketplace;lockstep
// +kubebuilder:subresource:status
// +kubebuilder:selectablefield:JSONPath=`.spec.brokerName`
// +kubebuilder:selectablefield:JSONPath=`.spec.name`
// +kubebuilder:printcolumn:name="Broker",type=string,JSONPath=`.spec.brokerName`
// +kubebuilder:printcolumn:name="Service",type=string,JSONPath=`.spec.name`
// +kubebuilder:printcolumn:name="Bindable",type=boolean,JSONPath=`.spec.bindable`
// +kubebuilder:printcolumn:name="Removed",type=boolean,JSONPath=`.status.removedFromCatalog`
// +kubebuilder:printcolumn:name="Typed Kind",type=string,JSONPath=`.status.typedKind.kind`,priority=1
// +kubebuilder:printcolumn:name="Description",type=string,JSONPath=`.spec.description`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type ServiceOffering struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   ServiceOfferingSpec   `json:"spec"`
	Status ServiceOfferingStatus `json:"status,omitempty"`
}

// ServiceOfferingList is a list of ServiceOfferings.
//
// +kubebuilder:object:root=true
type ServiceOfferingList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ServiceOffering `json:"items"`
}

// ServicePlanSpec is one plan of a broker's catalog.
type ServicePlanSpec struct {
	// BrokerName is the ServiceBroker whose catalog has the plan.
	BrokerName string `json:"brokerName" lockstep:"readonly"`
	// ServiceName is the plan's service (what ServiceInstances name in
	// spec.serviceName).
	ServiceName string `json:"serviceName" lockstep:"readonly"`
	// ServiceID is the OSB id of the plan's service.
	ServiceID string `json:"serviceID" lockstep:"readonly"`
	// Name of the plan at the broker (what ServiceInstances name in
	// spec.planName).
	Name string `json:"name" lockstep:"readonly"`
	// ID of the plan at the broker.
	ID string `json:"id" lockstep:"readonly"`
	// Description of the plan, from the broker.
	// +optional
	Description string `json:"description,omitempty" lockstep:"readonly"`
	// Free is true when the plan costs nothing.
	Free bool `json:"free" lockstep:"readonly"`
	// Bindable is true when instances of the plan can be bound (the plan's
	// own value, or else its service's).
	Bindable bool `json:"bindable" lockstep:"readonly"`
	// PlanUpdateable is true when an instance may change to or from this
	// plan (the plan's own value, or else its service's).
	PlanUpdateable bool `json:"planUpdateable" lockstep:"readonly"`
	// MaintenanceInfo is the plan's maintenance version, from the broker.
	// +optional
	MaintenanceInfo *MaintenanceInfo `json:"maintenanceInfo,omitempty" lockstep:"readonly"`
	// Metadata of the plan, as the broker gave it.
	// +kubebuilder:pruning:PreserveUnknownFields
	// +kubebuilder:validation:Schemaless
	// +optional
	Metadata *runtime.RawExtension `json:"metadata,omitempty" lockstep:"readonly"`
	// Schemas are the plan's parameter schemas, as the broker gave them (a
	// schema too large to keep here is left out; see the SchemasUsable
	// condition).
	// +optional
	Schemas *PlanSchemas `json:"schemas,omitempty" lockstep:"readonly"`
	// CreateOnlyParameters are the parameters that cannot change after
	// creation (in the create schema, not in the update schema), as paths
	// below spec.parameters.
	// +optional
	CreateOnlyParameters []string `json:"createOnlyParameters,omitempty" lockstep:"readonly"`
	// Parameters are the create schema's top-level parameters, with their
	// types, descriptions and allowed values.
	// +optional
	Parameters []PlanParameter `json:"parameters,omitempty" lockstep:"readonly"`
	// Access says which namespaces may use the plan, from its
	// ServiceBroker's access rules (spec.access).
	// +optional
	Access PlanAccess `json:"access" lockstep:"readonly"`
}

// PlanAccess is which namespaces may use a plan: provision it, move an
// instance to it, bind an instance of it.
type PlanAccess struct {
	// Namespaces says it in a word or in label selectors: "all" (the
	// broker has no access rules, or a rule that opens the plan selects
	// every namespace), "none" (no rule opens it), or the namespace
	// selectors of the rules that open it, joined by " or ".
	Namespaces string `json:"namespaces" lockstep:"readonly"`
	// Rules are the names of the broker's access rules that open the plan.
	// +optional
	Rules []string `json:"rules,omitempty" lockstep:"readonly"`
	// Limits are the per-plan limits of the broker's access rules that
	// count the plan's instances: a namespace they apply to may hold at
	// most MaxInstances instances of the plans each counts, together.
	// +optional
	Limits []PlanLimitSummary `json:"limits,omitempty" lockstep:"readonly"`
}

// PlanLimitSummary is one per-plan limit that counts a plan's instances.
type PlanLimitSummary struct {
	// Rule is the access rule the limit belongs to.
	Rule string `json:"rule" lockstep:"readonly"`
	// Name is the limit's name.
	Name string `json:"name" lockstep:"readonly"`
	// Namespaces are the namespaces it applies to: "all", or the rule's
	// namespace selector.
	Namespaces string `json:"namespaces" lockstep:"readonly"`
	// MaxInstances is how many instances of the plans it counts a
	// namespace may hold together.
	MaxInstances int32 `json:"maxInstances" lockstep:"readonly"`
	// Counts says which plans it counts, in words.
	Counts string `json:"counts" lockstep:"readonly"`
}

// ServicePlan is one plan of a registered broker's catalog, written by
// lockstep from the catalog; read-only for everybody else.
//
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Cluster,shortName=plan;plans,categories=marketplace;lockstep
// +kubebuilder:subresource:status
// +kubebuilder:selectablefield:JSONPath=`.spec.brokerName`
// +kubebuilder:selectablefield:JSONPath=`.spec.serviceName`
// +kubebuilder:selectablefield:JSONPath=`.spec.name`
// +kubebuilder:printcolumn:name="Broker",type=string,JSONPath=`.spec.brokerName`
// +kubebuilder:printcolumn:name="Service",type=string,JSONPath=`.spec.serviceName`
// +kubebuilder:printcolumn:name="Plan",type=string,JSONPath=`.spec.name`
// +kubebuilder:printcolumn:name="Free",type=boolean,JSONPath=`.spec.free`
// +kubebuilder:printcolumn:name="Bindable",type=boolean,JSONPath=`.spec.bindable`
// +kubebuilder:printcolumn:name="Removed",type=boolean,JSONPath=`.status.removedFromCatalog`
// +kubebuilder:printcolumn:name="Access",type=string,JSONPath=`.spec.access.namespaces`
// +kubebuilder:printcolumn:name="Description",type=string,JSONPath=`.spec.description`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type ServicePlan struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   ServicePlanSpec   `json:"spec"`
	Status MarketplaceStatus `json:"status,omitempty"`
}

// ServicePlanList is a list of ServicePlans.
//
// +kubebuilder:object:root=true
type ServicePlanList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ServicePlan `json:"items"`
}

func init() {
	SchemeBuilder.Register(&ServiceOffering{}, &ServiceOfferingList{}, &ServicePlan{}, &ServicePlanList{})
}

// GetMarketplaceStatus is the offering's status, for code that writes
// ServiceOfferings and ServicePlans alike.
func (o *ServiceOffering) GetMarketplaceStatus() *MarketplaceStatus {
	return &o.Status.MarketplaceStatus
}

// GetMarketplaceStatus is the plan's status, for code that writes
// ServiceOfferings and ServicePlans alike.
func (p *ServicePlan) GetMarketplaceStatus() *MarketplaceStatus { return &p.Status }
