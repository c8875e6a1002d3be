package fakebroker

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/http"
	"reflect"

	"github.com/lockstep-dev/lockstep/internal/broker/osbapi"
)

// bind: 201 with credentials, 200 with the same credentials for an identical
// repeat, 409 for a different one.
func (b *Broker) bind(q *request) outcome {
	m, bad := decodeMutation(q.body)
	if bad != nil {
		return *bad
	}
	if m.ServiceID == "" || m.PlanID == "" {
		return failure(http.StatusBadRequest, "", "service_id and plan_id are required")
	}
	if op := b.busyLocked(q.instanceID, q.bindingID); op != nil {
		return concurrency(op)
	}
	inst, ok := b.instances[q.instanceID]
	if !ok {
		return failure(http.StatusBadRequest, "", fmt.Sprintf("instance %s does not exist", q.instanceID))
	}
	if inst.ServiceID != m.ServiceID || inst.PlanID != m.PlanID {
		return failure(http.StatusBadRequest, "", fmt.Sprintf("instance %s has service %q and plan %q, not %q and %q",
			q.instanceID, inst.ServiceID, inst.PlanID, m.ServiceID, m.PlanID))
	}
	if sp, ok := findByIDs(&b.catalog, m.ServiceID, m.PlanID); !ok || !sp.Bindable() {
		return failure(http.StatusBadRequest, "", fmt.Sprintf("plan %q of service %q is not bindable", m.PlanID, m.ServiceID))
	}
	key := bindingKey{q.instanceID, q.bindingID}
	if have, ok := b.bindings[key]; ok {
		if reflect.DeepEqual(have.Parameters, m.params) {
			return success(http.StatusOK, osbapi.Binding{Credentials: have.Credentials})
		}
		return failure(http.StatusConflict, "", fmt.Sprintf("binding %s already exists with different parameters", q.bindingID))
	}
	bnd := Binding{
		InstanceID: q.instanceID, ID: q.bindingID, ServiceID: m.ServiceID, PlanID: m.PlanID,
		Parameters: m.params, Context: m.context, Credentials: newCredentials(q.bindingID, b.marker),
	}
	out := success(http.StatusCreated, osbapi.Binding{Credentials: bnd.Credentials})
	out.apply = func() {
		b.bindings[key] = bnd.clone()
		b.creations[key]++
	}
	return out
}

// newCredentials makes a username and a random password that begins with
// marker.
func newCredentials(bindingID, marker string) map[string]any {
	secret := make([]byte, 12)
	_, _ = rand.Read(secret) // crypto/rand.Read never fails
	user := "user-" + bindingID
	pass := marker + hex.EncodeToString(secret)
	return map[string]any{
		"username": user,
		"password": pass,
		"uri":      fmt.Sprintf("db://%s:%s@127.0.0.1:5432/db", user, pass),
	}
}

// unbind: 200, 410 when unknown.
func (b *Broker) unbind(q *request) outcome {
	query := q.r.URL.Query()
	if query.Get("service_id") == "" || query.Get("plan_id") == "" {
		return failure(http.StatusBadRequest, "", "service_id and plan_id query parameters are required")
	}
	if op := b.busyLocked(q.instanceID, q.bindingID); op != nil {
		return concurrency(op)
	}
	key := bindingKey{q.instanceID, q.bindingID}
	if _, ok := b.bindings[key]; !ok {
		return success(http.StatusGone, osbapi.OperationResponse{})
	}
	out := success(http.StatusOK, osbapi.OperationResponse{})
	out.apply = func() { delete(b.bindings, key) }
	return out
}

// getBinding: 200 with credentials, 404 when unknown or still being bound.
func (b *Broker) getBinding(q *request) outcome {
	key := bindingKey{q.instanceID, q.bindingID}
	if op := b.latestOp[key]; op != nil && !op.done && op.op == OpBind {
		return failure(http.StatusNotFound, "", fmt.Sprintf("binding %s is still being created", q.bindingID))
	}
	have, ok := b.bindings[key]
	if !ok {
		return failure(http.StatusNotFound, "", fmt.Sprintf("binding %s does not exist", q.bindingID))
	}
	return success(http.StatusOK, osbapi.Binding{Credentials: have.Credentials, Parameters: encodeParams(have.Parameters)})
}
