package brokercall

import "github.com/lockstep-dev/lockstep/internal/broker/osbapi"

// context is the OSB context of an instance or binding in namespace, of
// the instance called instanceName: the Kubernetes profile, with the
// cluster's id. It is built here only, so that a broker gets the same
// context from admission, corrections and compensations.
func (p *Protocol) context(namespace, instanceName string) osbapi.Context {
	return osbapi.Context{Platform: osbapi.KubernetesPlatform, Namespace: namespace, InstanceName: instanceName, ClusterID: p.ClusterID}
}
