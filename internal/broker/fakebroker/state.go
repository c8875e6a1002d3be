package fakebroker

import (
	"cmp"
	"encoding/json"
	"maps"
	"slices"
)

// Instance is a service instance the broker holds.
type Instance struct {
	ID        string
	ServiceID string
	PlanID    string
	// Parameters are the parameters of the provision, replaced by those of
	// each update that sends parameters; nil when none were given.
	Parameters   map[string]any
	Context      map[string]any
	DashboardURL string
}

// Binding is a binding the broker holds.
type Binding struct {
	InstanceID  string
	ID          string
	ServiceID   string
	PlanID      string
	Parameters  map[string]any
	Context     map[string]any
	Credentials map[string]any
}

type bindingKey struct{ instanceID, bindingID string }

func (i Instance) clone() Instance {
	i.Parameters = cloneJSON(i.Parameters)
	i.Context = cloneJSON(i.Context)
	return i
}

func (b Binding) clone() Binding {
	b.Parameters = cloneJSON(b.Parameters)
	b.Context = cloneJSON(b.Context)
	b.Credentials = cloneJSON(b.Credentials)
	return b
}

// cloneJSON deep-copies a JSON object.
func cloneJSON(m map[string]any) map[string]any {
	if m == nil {
		return nil
	}
	raw, err := json.Marshal(m)
	if err != nil {
		return maps.Clone(m)
	}
	return decodeObject(raw)
}

// Instances returns copies of every instance, by id.
func (b *Broker) Instances() map[string]Instance {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.endDueLocked()
	out := make(map[string]Instance, len(b.instances))
	for id, inst := range b.instances {
		out[id] = inst.clone()
	}
	return out
}

// Instance returns a copy of the instance with id.
func (b *Broker) Instance(id string) (Instance, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.endDueLocked()
	inst, ok := b.instances[id]
	if !ok {
		return Instance{}, false
	}
	return inst.clone(), true
}

// InstanceIDs returns the ids of every instance, sorted.
func (b *Broker) InstanceIDs() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.endDueLocked()
	return slices.Sorted(maps.Keys(b.instances))
}

// Bindings returns copies of every binding, sorted by instance then binding id.
func (b *Broker) Bindings() []Binding {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.endDueLocked()
	out := make([]Binding, 0, len(b.bindings))
	for _, bnd := range b.bindings {
		out = append(out, bnd.clone())
	}
	slices.SortFunc(out, func(x, y Binding) int {
		return cmp.Or(cmp.Compare(x.InstanceID, y.InstanceID), cmp.Compare(x.ID, y.ID))
	})
	return out
}

// Binding returns a copy of one binding.
func (b *Broker) Binding(instanceID, bindingID string) (Binding, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.endDueLocked()
	bnd, ok := b.bindings[bindingKey{instanceID, bindingID}]
	if !ok {
		return Binding{}, false
	}
	return bnd.clone(), true
}

// PutInstance stores inst as if it had been provisioned; an empty
// DashboardURL gets the broker's default.
func (b *Broker) PutInstance(inst Instance) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if inst.DashboardURL == "" {
		inst.DashboardURL = b.dashboardURL(inst.ID)
	}
	b.instances[inst.ID] = inst.clone()
}

// PutBinding stores bnd as if it had been bound.
func (b *Broker) PutBinding(bnd Binding) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.bindings[bindingKey{bnd.InstanceID, bnd.ID}] = bnd.clone()
}

// RemoveBinding forgets a binding, as if it had been unbound behind the
// platform's back.
func (b *Broker) RemoveBinding(instanceID, bindingID string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	delete(b.bindings, bindingKey{instanceID, bindingID})
}

// ResetState forgets every instance, binding and asynchronous operation.
func (b *Broker) ResetState() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.instances = map[string]Instance{}
	b.bindings = map[bindingKey]Binding{}
	b.operations = map[string]*operation{}
	b.latestOp = map[bindingKey]*operation{}
	b.creations = map[bindingKey]int{}
}

// Creations counts how often the broker created each instance (by id)
// and each binding (by "<instance id>/<binding id>"): a provision or bind
// of something it did not hold, whether it was deleted since or not.
func (b *Broker) Creations() (instances, bindings map[string]int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.endDueLocked()
	instances, bindings = map[string]int{}, map[string]int{}
	for k, n := range b.creations {
		if k.bindingID == "" {
			instances[k.instanceID] = n
		} else {
			bindings[k.instanceID+"/"+k.bindingID] = n
		}
	}
	return instances, bindings
}

// bindingsOfLocked returns the sorted binding ids of an instance; b.mu must
// be held.
func (b *Broker) bindingsOfLocked(instanceID string) []string {
	var ids []string
	for k := range b.bindings {
		if k.instanceID == instanceID {
			ids = append(ids, k.bindingID)
		}
	}
	slices.Sort(ids)
	return ids
}
