package env

// The identity deploy/ gives lockstep: its service account, bound to the
// ClusterRoles of deploy/rbac.
const (
	serviceAccount = "lockstep"
	// ServiceAccountUser is the username the API server sees for lockstep.
	ServiceAccountUser = "system:serviceaccount:" + LockstepNamespace + ":" + serviceAccount
)
