package server

import (
	"net/http"

	"github.com/lockstep-dev/lockstep/internal/osb/lifecycle"
)

func (s *Server) catalog(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, catalogAnswer{Services: s.opts.Service.Catalog()})
}

func (s *Server) provision(w http.ResponseWriter, r *http.Request) {
	var body provisionBody
	if !decode(w, r, &body) || maintenanceConflict(w, body.MaintenanceInfo) {
		return
	}
	res, err := s.opts.Service.Provision(r.Context(), lifecycle.ProvisionRequest{
		Common: common(r), InstanceID: r.PathValue("instance_id"),
		ServiceID: body.ServiceID, PlanID: body.PlanID, Parameters: body.Parameters, Context: body.Context,
		OrganizationGUID: body.OrganizationGUID, SpaceGUID: body.SpaceGUID,
	})
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, int(res.Status), instanceAnswer{DashboardURL: res.DashboardURL, Operation: res.Operation})
}

func (s *Server) updateInstance(w http.ResponseWriter, r *http.Request) {
	var body updateBody
	if !decode(w, r, &body) || maintenanceConflict(w, body.MaintenanceInfo) {
		return
	}
	res, err := s.opts.Service.Update(r.Context(), lifecycle.UpdateRequest{
		Common: common(r), InstanceID: r.PathValue("instance_id"),
		ServiceID: body.ServiceID, PlanID: body.PlanID, Parameters: body.Parameters, Context: body.Context,
	})
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, int(res.Status), instanceAnswer{DashboardURL: res.DashboardURL, Operation: res.Operation})
}

func (s *Server) deprovision(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	res, err := s.opts.Service.Deprovision(r.Context(), lifecycle.DeprovisionRequest{
		Common: common(r), InstanceID: r.PathValue("instance_id"),
		ServiceID: q.Get("service_id"), PlanID: q.Get("plan_id"),
	})
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, int(res.Status), instanceAnswer{Operation: res.Operation})
}

func (s *Server) getInstance(w http.ResponseWriter, r *http.Request) {
	v, err := s.opts.Service.GetInstance(r.Context(), r.PathValue("instance_id"))
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, v)
}

func (s *Server) instanceLastOperation(w http.ResponseWriter, r *http.Request) {
	op, err := s.opts.Service.InstanceLastOperation(r.Context(), lifecycle.LastOperationRequest{
		InstanceID: r.PathValue("instance_id"), Operation: r.URL.Query().Get("operation"),
	})
	if err != nil {
		writeError(w, err)
		return
	}
	s.retryAfter(w, op)
	writeJSON(w, http.StatusOK, op)
}

func (s *Server) bind(w http.ResponseWriter, r *http.Request) {
	var body bindBody
	if !decode(w, r, &body) {
		return
	}
	res, err := s.opts.Service.Bind(r.Context(), lifecycle.BindRequest{
		Common: common(r), InstanceID: r.PathValue("instance_id"), BindingID: r.PathValue("binding_id"),
		ServiceID: body.ServiceID, PlanID: body.PlanID, Parameters: body.Parameters,
		BindResource: body.BindResource, Context: body.Context, AppGUID: body.AppGUID,
	})
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, int(res.Status), bindingAnswer{Credentials: res.Credentials, Operation: res.Operation})
}

func (s *Server) unbind(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	res, err := s.opts.Service.Unbind(r.Context(), lifecycle.UnbindRequest{
		Common: common(r), InstanceID: r.PathValue("instance_id"), BindingID: r.PathValue("binding_id"),
		ServiceID: q.Get("service_id"), PlanID: q.Get("plan_id"),
	})
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, int(res.Status), instanceAnswer{Operation: res.Operation})
}

func (s *Server) getBinding(w http.ResponseWriter, r *http.Request) {
	v, err := s.opts.Service.GetBinding(r.Context(), r.PathValue("instance_id"), r.PathValue("binding_id"))
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, v)
}

func (s *Server) bindingLastOperation(w http.ResponseWriter, r *http.Request) {
	op, err := s.opts.Service.BindingLastOperation(r.Context(), lifecycle.LastOperationRequest{
		InstanceID: r.PathValue("instance_id"), BindingID: r.PathValue("binding_id"),
		Operation: r.URL.Query().Get("operation"),
	})
	if err != nil {
		writeError(w, err)
		return
	}
	s.retryAfter(w, op)
	writeJSON(w, http.StatusOK, op)
}
