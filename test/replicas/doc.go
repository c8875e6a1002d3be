// Package replicas tests lockstep as separate processes, the way it runs
// in a cluster: the real webhook binary, one or more replicas behind a
// round-robin front, against a real kube-apiserver and etcd (envtest) and
// kube-controller-manager (namespace, garbage-collector and ClusterRole
// aggregation controllers), started with test/framework. It shows what
// the in-process e2e tests cannot: a replica killed in the middle of an
// operation, and concurrent changes through two replicas.
package replicas
