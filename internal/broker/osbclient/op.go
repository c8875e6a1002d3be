package osbclient

// Op names one kind of OSB request.
type Op string

// The OSB requests this client makes.
const (
	OpCatalog               Op = "catalog"
	OpProvision             Op = "provision"
	OpUpdate                Op = "update"
	OpDeprovision           Op = "deprovision"
	OpGetInstance           Op = "get_instance"
	OpInstanceLastOperation Op = "instance_last_operation"
	OpBind                  Op = "bind"
	OpUnbind                Op = "unbind"
	OpGetBinding            Op = "get_binding"
	OpBindingLastOperation  Op = "binding_last_operation"
)

// Ops lists every Op.
var Ops = []Op{
	OpCatalog, OpProvision, OpUpdate, OpDeprovision, OpGetInstance, OpInstanceLastOperation,
	OpBind, OpUnbind, OpGetBinding, OpBindingLastOperation,
}

// carriesCredentials reports whether a successful answer to op may hold
// binding credentials; such bodies never appear in an error.
func (o Op) carriesCredentials() bool {
	return o == OpBind || o == OpGetBinding
}

// createsResource reports whether op creates something at the broker, so
// that an unclear outcome needs orphan mitigation (OSB "Orphan Mitigation").
func (o Op) createsResource() bool {
	return o == OpProvision || o == OpBind
}
