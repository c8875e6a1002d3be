package fakebroker

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"reflect"
	"strings"

	"github.com/lockstep-dev/lockstep/internal/broker/osbapi"
)

// mutation is the body of a provision, update or bind: read as a
// provision, whose fields the others share (organization_guid and
// space_guid are required on a provision only).
type mutation struct {
	osbapi.ProvisionRequest

	context   map[string]any // Context decoded; nil when absent
	params    map[string]any // Parameters decoded; nil when absent
	hasParams bool
}

// decodeMutation reads a request body; a failure is a 400 outcome.
func decodeMutation(raw []byte) (mutation, *outcome) {
	var m mutation
	if err := json.Unmarshal(raw, &m.ProvisionRequest); err != nil {
		out := failure(http.StatusBadRequest, "", "the request body is not a JSON object: "+err.Error())
		return m, &out
	}
	if len(m.Context) > 0 {
		if err := json.Unmarshal(m.Context, &m.context); err != nil {
			out := failure(http.StatusBadRequest, "", "context must be a JSON object")
			return m, &out
		}
	}
	p := strings.TrimSpace(string(m.Parameters))
	if p == "" || p == "null" {
		return m, nil
	}
	if err := json.Unmarshal(m.Parameters, &m.params); err != nil || m.params == nil {
		out := failure(http.StatusBadRequest, "", "parameters must be a JSON object")
		return m, &out
	}
	if len(m.params) == 0 {
		m.params = nil
	}
	m.hasParams = true
	return m, nil
}

// missingGUIDs names the required Cloud Foundry fields a provision lacks.
func missingGUIDs(m mutation) []string {
	var missing []string
	if m.OrganizationGUID == "" {
		missing = append(missing, "Missing organization_guid")
	}
	if m.SpaceGUID == "" {
		missing = append(missing, "Missing space_guid")
	}
	return missing
}

// concurrency is the answer while another operation runs on the same target.
func concurrency(op *operation) outcome {
	return failure(http.StatusUnprocessableEntity, osbapi.ErrorCodeConcurrency,
		fmt.Sprintf("operation %q (%s) is in progress on instance %s", op.key, op.op, op.instanceID))
}

func (b *Broker) dashboardURL(instanceID string) string {
	return b.srv.URL + "/dashboard/" + url.PathEscape(instanceID)
}

// provision: 201 new, 200 identical repeat, 409 different repeat.
func (b *Broker) provision(q *request) outcome {
	m, bad := decodeMutation(q.body)
	if bad != nil {
		return *bad
	}
	if m.ServiceID == "" || m.PlanID == "" {
		return failure(http.StatusBadRequest, "", "service_id and plan_id are required")
	}
	if missing := missingGUIDs(m); len(missing) > 0 {
		return errorsArray(http.StatusBadRequest, missing)
	}
	if _, ok := findByIDs(&b.catalog, m.ServiceID, m.PlanID); !ok {
		return failure(http.StatusBadRequest, "", fmt.Sprintf("service %q with plan %q is not in the catalog", m.ServiceID, m.PlanID))
	}
	if op := b.busyLocked(q.instanceID, ""); op != nil {
		return concurrency(op)
	}
	dashboard := osbapi.InstanceResponse{DashboardURL: b.dashboardURL(q.instanceID)}
	if have, ok := b.instances[q.instanceID]; ok {
		if have.ServiceID == m.ServiceID && have.PlanID == m.PlanID && reflect.DeepEqual(have.Parameters, m.params) {
			return success(http.StatusOK, dashboard)
		}
		return failure(http.StatusConflict, "", fmt.Sprintf("instance %s already exists with different attributes", q.instanceID))
	}
	inst := Instance{
		ID: q.instanceID, ServiceID: m.ServiceID, PlanID: m.PlanID,
		Parameters: m.params, Context: m.context, DashboardURL: b.dashboardURL(q.instanceID),
	}
	out := success(http.StatusCreated, dashboard)
	out.apply = func() {
		b.instances[inst.ID] = inst.clone()
		b.creations[bindingKey{instanceID: inst.ID}]++
	}
	return out
}

// update: 200, changing the plan (when both plans allow it) and replacing
// the parameters when the request has them.
func (b *Broker) update(q *request) outcome {
	m, bad := decodeMutation(q.body)
	if bad != nil {
		return *bad
	}
	if m.ServiceID == "" {
		return failure(http.StatusBadRequest, "", "service_id is required")
	}
	if op := b.busyLocked(q.instanceID, ""); op != nil {
		return concurrency(op)
	}
	have, ok := b.instances[q.instanceID]
	if !ok {
		return failure(http.StatusBadRequest, "", fmt.Sprintf("instance %s does not exist", q.instanceID))
	}
	if m.ServiceID != have.ServiceID {
		return failure(http.StatusBadRequest, "", fmt.Sprintf("instance %s belongs to service %q, not %q", q.instanceID, have.ServiceID, m.ServiceID))
	}
	next := have.clone()
	if m.PlanID != "" && m.PlanID != have.PlanID {
		to, ok := findByIDs(&b.catalog, have.ServiceID, m.PlanID)
		if !ok {
			return failure(http.StatusBadRequest, "", fmt.Sprintf("plan %q is not a plan of service %q", m.PlanID, have.ServiceID))
		}
		from, ok := findByIDs(&b.catalog, have.ServiceID, have.PlanID)
		if (ok && !from.Updateable()) || !to.Updateable() {
			return failure(http.StatusBadRequest, "", fmt.Sprintf("the plan of instance %s cannot change from %q to %q", q.instanceID, have.PlanID, m.PlanID))
		}
		next.PlanID = m.PlanID
	}
	if m.hasParams {
		next.Parameters = m.params
	}
	if m.context != nil {
		next.Context = m.context
	}
	out := success(http.StatusOK, osbapi.InstanceResponse{})
	out.apply = func() { b.instances[next.ID] = next.clone() }
	return out
}

// deprovision: 200, 410 when unknown, 400 while bindings exist.
func (b *Broker) deprovision(q *request) outcome {
	query := q.r.URL.Query()
	serviceID, planID := query.Get("service_id"), query.Get("plan_id")
	if serviceID == "" || planID == "" {
		return failure(http.StatusBadRequest, "", "service_id and plan_id query parameters are required")
	}
	if op := b.busyLocked(q.instanceID, ""); op != nil {
		return concurrency(op)
	}
	have, ok := b.instances[q.instanceID]
	if !ok {
		return success(http.StatusGone, osbapi.OperationResponse{})
	}
	if have.ServiceID != serviceID || have.PlanID != planID {
		return failure(http.StatusBadRequest, "", fmt.Sprintf("instance %s has service %q and plan %q, not %q and %q",
			q.instanceID, have.ServiceID, have.PlanID, serviceID, planID))
	}
	if ids := b.bindingsOfLocked(q.instanceID); len(ids) > 0 {
		return failure(http.StatusBadRequest, "", fmt.Sprintf("instance %s still has bindings %s; unbind them first",
			q.instanceID, strings.Join(ids, ", ")))
	}
	out := success(http.StatusOK, osbapi.OperationResponse{})
	out.apply = func() { delete(b.instances, q.instanceID) }
	return out
}

// getInstance: 200, 404 when unknown (or still being provisioned), 422
// while being updated.
func (b *Broker) getInstance(q *request) outcome {
	if op := b.busyLocked(q.instanceID, ""); op != nil && op.op == OpUpdate {
		return concurrency(op)
	}
	have, ok := b.instances[q.instanceID]
	if !ok {
		return failure(http.StatusNotFound, "", fmt.Sprintf("instance %s does not exist", q.instanceID))
	}
	return success(http.StatusOK, osbapi.GetInstanceResponse{
		ServiceID: have.ServiceID, PlanID: have.PlanID, DashboardURL: have.DashboardURL,
		Parameters: encodeParams(have.Parameters),
	})
}

// encodeParams is the JSON of parameters the broker holds; nil when it
// holds none.
func encodeParams(params map[string]any) json.RawMessage {
	if params == nil {
		return nil
	}
	return encodeBody(params)
}
