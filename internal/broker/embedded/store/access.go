package store

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

func get[T any](tx Tx, key string) (*T, error) {
	raw, err := tx.Get(key)
	if err != nil {
		return nil, err
	}
	var v T
	if err := json.Unmarshal(raw, &v); err != nil {
		return nil, fmt.Errorf("decode store record %q: %w", key, err)
	}
	return &v, nil
}

func put(tx Tx, key string, v any) error {
	raw, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("encode store record %q: %w", key, err)
	}
	return tx.Put(key, raw)
}

func list[T any](tx Tx, prefix string) ([]*T, error) {
	kvs, err := tx.List(prefix)
	if err != nil {
		return nil, err
	}
	out := make([]*T, 0, len(kvs))
	for _, kv := range kvs {
		var v T
		if err := json.Unmarshal(kv.Value, &v); err != nil {
			return nil, fmt.Errorf("decode store record %q: %w", kv.Key, err)
		}
		out = append(out, &v)
	}
	return out, nil
}

// IsNotFound reports whether err is (or wraps) ErrNotFound.
func IsNotFound(err error) bool { return errors.Is(err, ErrNotFound) }

// GetSpec returns the spec record of a service offering.
func GetSpec(tx Tx, serviceID string) (*SpecRecord, error) {
	return get[SpecRecord](tx, SpecKey(serviceID))
}

// PutSpec writes a spec record.
func PutSpec(tx Tx, s *SpecRecord) error { return put(tx, SpecKey(s.ServiceID), s) }

// DeleteSpec removes a spec record.
func DeleteSpec(tx Tx, serviceID string) error { return tx.Delete(SpecKey(serviceID)) }

// ListSpecs returns every spec record.
func ListSpecs(tx Tx) ([]*SpecRecord, error) { return list[SpecRecord](tx, specsPrefix) }

// GetInstance returns an instance record.
func GetInstance(tx Tx, id string) (*Instance, error) { return get[Instance](tx, InstanceKey(id)) }

// PutInstance writes an instance record.
func PutInstance(tx Tx, in *Instance) error { return put(tx, InstanceKey(in.ID), in) }

// DeleteInstance removes an instance record.
func DeleteInstance(tx Tx, id string) error { return tx.Delete(InstanceKey(id)) }

// ListInstances returns every instance record.
func ListInstances(tx Tx) ([]*Instance, error) { return list[Instance](tx, instancesPrefix) }

// GetBinding returns a binding record.
func GetBinding(tx Tx, instanceID, bindingID string) (*Binding, error) {
	return get[Binding](tx, BindingKey(instanceID, bindingID))
}

// PutBinding writes a binding record.
func PutBinding(tx Tx, b *Binding) error { return put(tx, BindingKey(b.InstanceID, b.ID), b) }

// DeleteBinding removes a binding record.
func DeleteBinding(tx Tx, instanceID, bindingID string) error {
	return tx.Delete(BindingKey(instanceID, bindingID))
}

// ListBindings returns the bindings of one instance.
func ListBindings(tx Tx, instanceID string) ([]*Binding, error) {
	return list[Binding](tx, bindingsOf(instanceID))
}

// GetJob returns a job record.
func GetJob(tx Tx, token string) (*Job, error) { return get[Job](tx, JobKey(token)) }

// PutJob writes a job record.
func PutJob(tx Tx, j *Job) error { return put(tx, JobKey(j.Token), j) }

// DeleteJob removes a job record.
func DeleteJob(tx Tx, token string) error { return tx.Delete(JobKey(token)) }

// ListJobs returns every job record.
func ListJobs(tx Tx) ([]*Job, error) { return list[Job](tx, jobsPrefix) }

// GetState returns an instance's bundle state; an instance without state
// has an empty map.
func GetState(tx Tx, instanceID string) (map[string]string, error) {
	m, err := get[map[string]string](tx, StateKey(instanceID))
	if IsNotFound(err) {
		return map[string]string{}, nil
	}
	if err != nil {
		return nil, err
	}
	if *m == nil {
		return map[string]string{}, nil
	}
	return *m, nil
}

// PutState writes an instance's bundle state; an empty state removes the key.
func PutState(tx Tx, instanceID string, state map[string]string) error {
	if len(state) == 0 {
		return tx.Delete(StateKey(instanceID))
	}
	return put(tx, StateKey(instanceID), state)
}

// DeleteState removes an instance's bundle state.
func DeleteState(tx Tx, instanceID string) error { return tx.Delete(StateKey(instanceID)) }

// GetRunner returns a runner's heartbeat record.
func GetRunner(tx Tx, id string) (*Runner, error) { return get[Runner](tx, RunnerKey(id)) }

// PutRunner writes a runner's heartbeat record.
func PutRunner(tx Tx, r *Runner) error { return put(tx, RunnerKey(r.ID), r) }

// DeleteRunner removes a runner's heartbeat record.
func DeleteRunner(tx Tx, id string) error { return tx.Delete(RunnerKey(id)) }

// ListRunners returns every runner record.
func ListRunners(tx Tx) ([]*Runner, error) { return list[Runner](tx, runnersPrefix) }

// SpecMark is the part of a spec record that decides whether it may be
// provisioned or swept.
type SpecMark struct {
	Marked   bool      `json:"marked"`
	MarkedAt time.Time `json:"marked_at"`
}

// GetSpecMark reads only the mark of a spec record (cheaper than GetSpec,
// which decodes the bundle files).
func GetSpecMark(tx Tx, serviceID string) (*SpecMark, error) {
	return get[SpecMark](tx, SpecKey(serviceID))
}
