package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// AuthType says how lockstep authenticates to a broker.
// +kubebuilder:validation:Enum=basic;bearer
type AuthType string

// The authentication schemes lockstep supports.
const (
	// AuthBasic reads the keys "username" and "password" of the Secret.
	AuthBasic AuthType = "basic"
	// AuthBearer reads the key "token" of the Secret.
	AuthBearer AuthType = "bearer"
)

// SecretReference points at the Secret that holds a broker's credentials.
type SecretReference struct {
	// Namespace of the Secret.
	Namespace string `json:"namespace"`
	// Name of the Secret.
	Name string `json:"name"`
	// Type of authentication: basic (keys username, password) or bearer
	// (key token).
	// +kubebuilder:default=basic
	// +optional
	Type AuthType `json:"type,omitempty"`
}

// AnnotationRefresh, set on a ServiceBroker to any value, asks lockstep to
// read the broker's catalog again now (kubectl annotate servicebroker NAME
// lockstep.dev/refresh=now); lockstep removes it once it did.
const AnnotationRefresh = "lockstep.dev/refresh"

// ServiceBrokerSpec says where an OSB broker is and how to reach it.
//
// +kubebuilder:validation:XValidation:rule="!has(self.authSecretRef) || self.url.startsWith('https://') || self.url.matches('^http://(localhost|127[.][0-9]+[.][0-9]+[.][0-9]+|[[]::1[]])(:[0-9]+)?(/[^@?#]*)?$')",message="lockstep sends a broker's credentials (spec.authSecretRef) only over https, or to a loopback address: give the broker an https URL (and spec.caBundle if its certificate is not signed by a CA this cluster trusts)"
type ServiceBrokerSpec struct {
	// URL of the broker's OSB API (without the /v2 suffix). With
	// credentials (authSecretRef) it must be https, or http to a loopback
	// address (localhost, 127.0.0.0/8, [::1]).
	// +kubebuilder:validation:Pattern=`^https?://`
	// +kubebuilder:validation:MaxLength=2048
	URL string `json:"url"`
	// AuthSecretRef names the Secret with the broker's credentials. It
	// must be in lockstep's own namespace, and whoever writes the
	// ServiceBroker must be allowed to get it.
	// +optional
	AuthSecretRef *SecretReference `json:"authSecretRef,omitempty"`
	// CABundle is a PEM bundle trusted for the broker's TLS certificate.
	// +optional
	CABundle []byte `json:"caBundle,omitempty"`
	// RelistInterval is how often the catalog is fetched again.
	// +kubebuilder:default="15m"
	// +optional
	RelistInterval *metav1.Duration `json:"relistInterval,omitempty"`
	// Access says which namespaces may use which services and plans of the
	// broker. Without rules every namespace may use every plan. With rules,
	// a namespace may provision a plan, move an instance to it, or bind an
	// instance of it only where a rule that selects the namespace opens
	// the plan; instances already on a plan that is no longer open keep
	// working (parameter updates and deletes are never refused).
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=64
	// +optional
	Access []AccessRule `json:"access,omitempty"`
	// Preflight, when true, tries every change lockstep is about to carry
	// out at this broker first as a server-side dry run of the same
	// request, by lockstep, so that what the rest of the cluster's
	// admission refuses (another validating webhook, a policy engine, a
	// quota) is refused before the broker is called; false never does;
	// unset follows LOCKSTEP_PREFLIGHT.
	// +optional
	Preflight *bool `json:"preflight,omitempty"`
	// TypedKinds says which services of the broker get a typed kind: a
	// kind of their own in the group services.lockstep.dev, whose
	// spec.parameters is typed from the plans' schemas. Without entries no
	// service gets one. A service's ServiceOffering shows its kind in
	// status.typedKind and the TypedKindReady condition.
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=64
	// +optional
	TypedKinds []TypedKindActivation `json:"typedKinds,omitempty"`
}

// TypedKindActivation gives the services it selects a typed kind each.
// A service that several entries select takes the names (kind, plural,
// short names) of the first entry that names it with any of them, or else
// the names made from its name.
//
// +kubebuilder:validation:XValidation:rule="(!has(self.kind) && !has(self.plural) && !has(self.shortNames)) || (size(self.services) == 1 && !self.services[0].contains('*'))",message="kind, plural and shortNames name the typed kind of one service: give them with exactly one service name, without *"
// +kubebuilder:validation:XValidation:rule="!has(self.plural) || !has(self.shortNames) || !(self.plural in self.shortNames)",message="a short name is another name than the plural: leave the plural out of shortNames"
type TypedKindActivation struct {
	// Services are the names of the services that get a typed kind, as
	// patterns in which * stands for any run of characters ("*": every
	// service), as in access rules.
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:items:MinLength=1
	// +kubebuilder:validation:items:MaxLength=255
	Services []string `json:"services"`
	// Kind is the kind's name, instead of the one made from the service
	// name ("postgresql-db" makes PostgresqlDb): for two services of the
	// same name at two brokers. CamelCase ASCII letters and digits,
	// starting with a capital letter. Only with one service name without
	// *.
	// +kubebuilder:validation:Pattern=`^[A-Z][A-Za-z0-9]*$`
	// +kubebuilder:validation:MaxLength=59
	// +optional
	Kind string `json:"kind,omitempty"`
	// Plural is the kind's resource name (kubectl get PLURAL), instead of
	// the English plural of the kind, lowercased ("PgDemo" makes
	// pgdemoes, where pgdemos may be meant). Lowercase ASCII letters and
	// digits, starting with a letter. Only with one service name without
	// *. Like the kind, it is refused (the offering says NameClash) where
	// another typed kind or a resource the cluster serves has the name.
	// +kubebuilder:validation:Pattern=`^[a-z][a-z0-9]*$`
	// +kubebuilder:validation:MaxLength=63
	// +optional
	Plural string `json:"plural,omitempty"`
	// ShortNames are the kind's short names (kubectl get SHORTNAME),
	// instead of the one made from the words of the kind or of the
	// service name (QuickDatabase makes qd). Lowercase ASCII letters and
	// digits, starting with a letter. Only with one service name without
	// *. A short name another typed kind or a resource the cluster serves
	// has is refused: the kind goes without it, and the offering's
	// TypedKindReady message says why.
	// +listType=set
	// +kubebuilder:validation:MaxItems=8
	// +kubebuilder:validation:items:Pattern=`^[a-z][a-z0-9]*$`
	// +kubebuilder:validation:items:MaxLength=63
	// +optional
	ShortNames []string `json:"shortNames,omitempty"`
	// AggregateToDefaultRoles adds the kinds of the services this entry
	// selects to Kubernetes' default roles: their edit ClusterRoles are
	// aggregated into admin and edit, their view ClusterRoles into view,
	// so that whoever may edit (or view) a namespace may use (or read)
	// those kinds there. Without it (the default) nobody may until an
	// administrator binds a kind's roles.
	// +optional
	AggregateToDefaultRoles bool `json:"aggregateToDefaultRoles,omitempty"`
}

// AccessRule opens services and plans of a broker to the namespaces it
// selects.
type AccessRule struct {
	// Name identifies the rule in refusals and in the marketplace.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	Name string `json:"name"`
	// NamespaceSelector selects the namespaces the rule opens the services
	// and plans to, by their labels; {} selects every namespace.
	NamespaceSelector metav1.LabelSelector `json:"namespaceSelector"`
	// Services are the names of the services the rule opens, as patterns
	// in which * stands for any run of characters ("*": every service).
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:items:MinLength=1
	Services []string `json:"services"`
	// Plans are the names of the plans of those services that the rule
	// opens, as patterns ("*": every plan).
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:items:MinLength=1
	Plans []string `json:"plans"`
	// Limits bound how many instances of the plans the rule opens each
	// namespace it selects may hold, as Cloud Foundry's service quotas
	// do. A provision, an adoption or a plan change that would take a
	// namespace over a limit is refused before the broker is called.
	// Every limit of every rule that selects a namespace applies to it:
	// rules open, limits only restrict.
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=16
	// +optional
	Limits []PlanLimit `json:"limits,omitempty"`
}

// PlanLimit bounds how many instances of some of the plans an access rule
// opens a namespace may hold, together.
type PlanLimit struct {
	// Name identifies the limit in refusals and in the marketplace.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	Name string `json:"name"`
	// Plans are the names of the plans whose instances count, as
	// patterns ("*": every plan); only plans of the services the rule
	// opens count. Without patterns, every plan the rule opens counts.
	// +kubebuilder:validation:items:MinLength=1
	// +optional
	Plans []string `json:"plans,omitempty"`
	// NotFree counts only the instances of plans that the broker's
	// catalog does not mark free (of the plans above). A plan the
	// catalog no longer lists counts as not free.
	// +optional
	NotFree bool `json:"notFree,omitempty"`
	// MaxInstances is how many instances of those plans a namespace may
	// hold together; 0 allows none.
	// +kubebuilder:validation:Minimum=0
	MaxInstances int32 `json:"maxInstances"`
}

// PlanSummary is one plan of a broker's catalog, as lockstep sees it.
type PlanSummary struct {
	// Name of the plan.
	Name string `json:"name"`
	// ID of the plan at the broker.
	ID string `json:"id"`
	// Free is true when the plan costs nothing.
	// +optional
	Free bool `json:"free,omitempty"`
	// RemovedFromCatalog is true when the plan left the broker's catalog
	// while instances still use it: it accepts no new provisions.
	// +optional
	RemovedFromCatalog bool `json:"removedFromCatalog,omitempty"`
}

// ServiceSummary is one service of a broker's catalog.
type ServiceSummary struct {
	// Name of the service.
	Name string `json:"name"`
	// ID of the service at the broker.
	ID string `json:"id"`
	// Bindable is true when instances of this service can be bound.
	// +optional
	Bindable bool `json:"bindable,omitempty"`
	// PlanUpdateable is true when instances may change plan.
	// +optional
	PlanUpdateable bool `json:"planUpdateable,omitempty"`
	// Plans of the service.
	// +optional
	Plans []PlanSummary `json:"plans,omitempty"`
}

// ServiceBrokerStatus is what lockstep last learned from the broker.
type ServiceBrokerStatus struct {
	// Conditions: Ready is True when the catalog is loaded.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty" lockstep:"readonly"`
	// Services is a summary of the broker's catalog.
	// +optional
	Services []ServiceSummary `json:"services,omitempty" lockstep:"readonly"`
	// LastCatalogSync is when the catalog was last fetched successfully.
	// +optional
	LastCatalogSync *metav1.Time `json:"lastCatalogSync,omitempty" lockstep:"readonly"`
}

// ServiceBroker registers an Open Service Broker with lockstep.
//
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Cluster,shortName=sbr,categories=lockstep
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="URL",type=string,JSONPath=`.spec.url`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Last Sync",type=date,JSONPath=`.status.lastCatalogSync`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type ServiceBroker struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   ServiceBrokerSpec   `json:"spec"`
	Status ServiceBrokerStatus `json:"status,omitempty"`
}

// ServiceBrokerList is a list of ServiceBrokers.
//
// +kubebuilder:object:root=true
type ServiceBrokerList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ServiceBroker `json:"items"`
}

func init() {
	SchemeBuilder.Register(&ServiceBroker{}, &ServiceBrokerList{})
}
