package server

import (
	"net/http"

	"github.com/lockstep-dev/lockstep/internal/broker/embedded/lifecycle"
	"github.com/lockstep-dev/lockstep/internal/broker/osbapi"
)

func (s *Server) catalog(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, osbapi.Catalog{Services: s.opts.Service.Catalog()})
}

func (s *Server) provision(w http.ResponseWriter, r *http.Request) {
	var body osbapi.ProvisionRequest
	if !decode(w, r, &body) || maintenanceConflict(w, body.MaintenanceInfo) {
		return
	}
	res, err := s.opts.Service.Provision(r.Context(), lifecycle.ProvisionRequest{
		Common: common(r), InstanceID: r.PathValue("instance_id"), ProvisionRequest: body,
	})
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, int(res.Status), osbapi.InstanceResponse{DashboardURL: res.DashboardURL, Operation: res.Operation})
}

func (s *Server) updateInstance(w http.ResponseWriter, r *http.Request) {
	var body osbapi.UpdateRequest
	if !decode(w, r, &body) || maintenanceConflict(w, body.MaintenanceInfo) {
		return
	}
	res, err := s.opts.Service.Update(r.Context(), lifecycle.UpdateRequest{
		Common: common(r), InstanceID: r.PathValue("instance_id"), UpdateRequest: body,
	})
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, int(res.Status), osbapi.InstanceResponse{DashboardURL: res.DashboardURL, Operation: res.Operation})
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
	writeJSON(w, int(res.Status), osbapi.OperationResponse{Operation: res.Operation})
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
	var body osbapi.BindRequest
	if !decode(w, r, &body) {
		return
	}
	res, err := s.opts.Service.Bind(r.Context(), lifecycle.BindRequest{
		Common: common(r), InstanceID: r.PathValue("instance_id"), BindingID: r.PathValue("binding_id"),
		BindRequest: body,
	})
	if err != nil {
		writeError(w, err)
		return
	}
	if res.Status == lifecycle.Accepted {
		writeJSON(w, int(res.Status), osbapi.OperationResponse{Operation: res.Operation})
		return
	}
	writeJSON(w, int(res.Status), osbapi.Binding{Credentials: res.Credentials})
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
	writeJSON(w, int(res.Status), osbapi.OperationResponse{Operation: res.Operation})
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
