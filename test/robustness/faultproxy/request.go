package faultproxy

import (
	"net/http"
	"strings"

	"github.com/lockstep-dev/lockstep/internal/broker/osbapi"
	"github.com/lockstep-dev/lockstep/internal/broker/osbclient"
)

// requestOf names the OSB operation of r and what it is about.
func requestOf(r *http.Request) Request {
	q := Request{Method: r.Method, Path: r.URL.Path, RequestID: r.Header.Get(osbapi.HeaderRequestIdentity)}
	if id, err := osbclient.ParseIdentity(r.Header.Get(osbapi.HeaderOriginatingIdentity)); err == nil {
		q.User = id.Username
	}
	q.Op, q.InstanceID, q.BindingID = operation(r.Method, r.URL.Path)
	return q
}

// operation reads the OSB operation from a method and a path:
// /v2/catalog, /v2/service_instances/<id>[/service_bindings/<id>][/last_operation].
func operation(method, path string) (osbclient.Op, string, string) {
	if path == "/v2/catalog" && method == http.MethodGet {
		return osbclient.OpCatalog, "", ""
	}
	parts := strings.Split(strings.TrimPrefix(path, "/v2/"), "/")
	if len(parts) < 2 || parts[0] != "service_instances" || parts[1] == "" {
		return "", "", ""
	}
	instance, rest := parts[1], parts[2:]
	last := len(rest) > 0 && rest[len(rest)-1] == "last_operation"
	if last {
		rest = rest[:len(rest)-1]
	}
	switch {
	case len(rest) == 0 && last:
		return osbclient.OpInstanceLastOperation, instance, ""
	case len(rest) == 0:
		return pick(method, osbclient.OpProvision, osbclient.OpUpdate, osbclient.OpDeprovision, osbclient.OpGetInstance), instance, ""
	case len(rest) == 2 && rest[0] == "service_bindings" && last:
		return osbclient.OpBindingLastOperation, instance, rest[1]
	case len(rest) == 2 && rest[0] == "service_bindings":
		return pick(method, osbclient.OpBind, "", osbclient.OpUnbind, osbclient.OpGetBinding), instance, rest[1]
	}
	return "", "", ""
}

// pick chooses by method: PUT, PATCH, DELETE, GET.
func pick(method string, put, patch, del, get osbclient.Op) osbclient.Op {
	switch method {
	case http.MethodPut:
		return put
	case http.MethodPatch:
		return patch
	case http.MethodDelete:
		return del
	case http.MethodGet:
		return get
	}
	return ""
}
