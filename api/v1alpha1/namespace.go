package v1alpha1

// DefaultNamespace is lockstep's own namespace unless LOCKSTEP_NAMESPACE
// says otherwise: deploy/ installs lockstep there, the generated webhook
// configurations leave it out of admission and name its service account,
// and the per-object locks live there. Everything that names lockstep's
// namespace takes it from here; the webhook markers and the RBAC markers
// of lockstep's Role name it as NamespacePlaceholder, which `make
// generate` replaces.
const DefaultNamespace = "lockstep-system"

// NamespacePlaceholder stands for lockstep's namespace in the
// +kubebuilder:webhook markers and the namespaced +kubebuilder:rbac
// markers (markers cannot name a constant); hack/webhookns writes
// DefaultNamespace in its place in deploy/webhook/manifests.yaml and
// deploy/rbac/cluster_role.yaml.
const NamespacePlaceholder = "LOCKSTEP_NAMESPACE"

// ServiceAccountUser is the user name of lockstep's service account in
// namespace.
func ServiceAccountUser(namespace string) string {
	return "system:serviceaccount:" + namespace + ":lockstep"
}
