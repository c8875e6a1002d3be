package fakebroker

// Concurrency per instance: how many state-changing requests (provision,
// update, deprovision, bind, unbind) for one instance the broker was
// handling at the same time. A platform that serializes its changes per
// object never makes it exceed 1.

// changes are the ops counted by MaxInFlight.
var changes = map[Op]bool{OpProvision: true, OpUpdate: true, OpDeprovision: true, OpBind: true, OpUnbind: true}

// enter counts a request in; the returned func counts it out.
func (b *Broker) enter(op Op, instanceID string) func() {
	if !changes[op] || instanceID == "" {
		return func() {}
	}
	b.mu.Lock()
	b.perInstance[instanceID]++
	if n := b.perInstance[instanceID]; n > b.maxPerInstance[instanceID] {
		b.maxPerInstance[instanceID] = n
	}
	b.mu.Unlock()
	return func() {
		b.mu.Lock()
		b.perInstance[instanceID]--
		b.mu.Unlock()
	}
}

// MaxInFlight returns the most state-changing requests for the instance
// that the broker handled at once since it started (or ResetCalls).
func (b *Broker) MaxInFlight(instanceID string) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.maxPerInstance[instanceID]
}
