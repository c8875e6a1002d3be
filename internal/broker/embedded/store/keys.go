package store

import "net/url"

// Key layout. Every identifier is path-escaped so that an identifier holding
// a "/" cannot reach into another record's prefix.
const (
	specsPrefix     = "specs/"
	instancesPrefix = "instances/"
	bindingsPrefix  = "bindings/"
	jobsPrefix      = "jobs/"
	statePrefix     = "state/"
	runnersPrefix   = "runners/"
	gonePrefix      = "gone/"
)

func esc(id string) string { return url.PathEscape(id) }

// SpecKey is the key of the spec record of a service offering.
func SpecKey(serviceID string) string { return specsPrefix + esc(serviceID) }

// InstanceKey is the key of a service instance record.
func InstanceKey(id string) string { return instancesPrefix + esc(id) }

// BindingKey is the key of a service binding record.
func BindingKey(instanceID, bindingID string) string {
	return bindingsPrefix + esc(instanceID) + "/" + esc(bindingID)
}

// bindingsOf is the prefix of every binding of an instance.
func bindingsOf(instanceID string) string { return bindingsPrefix + esc(instanceID) + "/" }

// JobKey is the key of a job record.
func JobKey(token string) string { return jobsPrefix + esc(token) }

// StateKey is the key of an instance's bundle state: "<instance id>-state".
func StateKey(instanceID string) string { return statePrefix + esc(instanceID) + "-state" }

// RunnerKey is the key of a job runner's heartbeat record.
func RunnerKey(id string) string { return runnersPrefix + esc(id) }

// GoneInstanceKey is the key of the record of a deleted instance.
func GoneInstanceKey(id string) string { return gonePrefix + "instances/" + esc(id) }

// GoneBindingKey is the key of the record of a deleted binding.
func GoneBindingKey(instanceID, bindingID string) string {
	return gonePrefix + "bindings/" + esc(instanceID) + "/" + esc(bindingID)
}
