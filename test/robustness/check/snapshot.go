package check

import (
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/lockstep-dev/lockstep/api/v1alpha1"
	"github.com/lockstep-dev/lockstep/test/robustness/faultproxy"
	"github.com/lockstep-dev/lockstep/test/robustness/history"
)

// Snapshot is what the checks read.
type Snapshot struct {
	// Instances, Bindings, Namespaces are the run's objects in the API
	// server at the end; Secrets the Secrets the bindings name, by
	// <namespace>/<name>.
	Instances  []v1alpha1.ServiceInstance
	Bindings   []v1alpha1.ServiceBinding
	Namespaces []corev1.Namespace
	Secrets    map[string]corev1.Secret
	// Records are the operation records in the API server at the end;
	// Seen is the latest version of every record seen during the run,
	// deleted ones included, by <namespace>/<name>.
	Records []v1alpha1.BrokerOperation
	Seen    map[string]v1alpha1.BrokerOperation
	// Locks are the per-object locks in lockstep's namespace at the end.
	Locks []coordinationv1.Lease
	// Brokers are the brokers' own records, by ServiceBroker name.
	Brokers map[string]*Broker
	// Requests are every request the clients made.
	Requests []history.Request
	// FromSecrets are, by instance (<namespace>/<name>), the values each
	// parameter from a Secret ever had: the broker may hold any of them
	// (a Secret's content reaches the broker only with a spec change).
	FromSecrets map[string]map[string][]any
	// Live are the namespaces that exist. An object can be left in one
	// that no longer does: kube-controller-manager finalizes a namespace
	// whose lockstep objects it did not see (lockstep's kinds answer 404
	// for a moment after kube-apiserver restarts). Nobody can change such
	// an object, lockstep included: the checks of what lockstep must
	// finish leave it out (Stranded lists it), those of what brokers hold
	// count it as the object it is.
	Live map[string]bool
	// Texts are what lockstep wrote for people and machines to read, and
	// Credentials what every credential begins with.
	Texts       []Text
	Credentials []string
}

// Broker is what one broker holds and what it was asked.
type Broker struct {
	// PlanIDs maps "<service>/<plan>" to the plan's id; CreateOnly to the
	// plan's create-only parameters (in its create schema, not in its
	// update schema), which an update never carries, so that a broker
	// that replaces the parameters on update no longer reports them.
	PlanIDs    map[string]string
	CreateOnly map[string][]string
	Instances  map[string]Instance
	// Bindings are by "<instance id>/<binding id>".
	Bindings map[string]Binding
	// Creations counts, by instance id and by "<instance id>/<binding
	// id>", how often the broker created each.
	Creations map[string]int
	// Exchanges are every request to it, through its fault proxy.
	Exchanges []faultproxy.Exchange
	// Async says how each asynchronous operation (by key) ended.
	Async map[string]Async
}

// Instance is an instance a broker holds.
type Instance struct {
	PlanID     string
	Parameters map[string]any
}

// Binding is a binding a broker holds.
type Binding struct {
	Parameters  map[string]any
	Credentials map[string]any
}

// Async is how an asynchronous operation ended.
type Async struct {
	Done, Failed bool
}

// Text is something lockstep wrote, by where it is.
type Text struct {
	Source  string
	Content string
}

// Invariant names a promise.
type Invariant string

// lockstep's promises.
const (
	BrokerEqualsCluster Invariant = "broker equals cluster, or InSync says why"
	NoLeak              Invariant = "nothing at a broker that no object accounts for"
	NoDoubleProvision   Invariant = "nothing created twice under one id"
	TrueAnswers         Invariant = "every answer a client got was true"
	OperationsFinal     Invariant = "every operation final"
	LocksReleased       Invariant = "every lock released"
	NothingStuck        Invariant = "nothing stuck deleting"
	NoCredentials       Invariant = "no credential outside its Secret"
)

// Invariants lists every promise, in the order the results show them.
var Invariants = []Invariant{BrokerEqualsCluster, NoLeak, NoDoubleProvision, TrueAnswers, OperationsFinal, LocksReleased, NothingStuck, NoCredentials}

// Violation is one broken promise.
type Violation struct {
	Invariant Invariant
	// Object is what it is about: "<kind> <namespace>/<name>", or a
	// broker's id.
	Object string
	// ExternalID is the object's id at its broker, when known.
	ExternalID string
	Message    string
	// Request is the request it is about, if any.
	Request *history.Request
	// At is when it happened, if known (zero: at the end).
	At time.Time
}

// Stranded lists the objects, records and locks left in namespaces that no
// longer exist.
func Stranded(s Snapshot) []string {
	var out []string
	for _, si := range s.Instances {
		if !s.live(si.Namespace) {
			out = append(out, "ServiceInstance "+si.Namespace+"/"+si.Name)
		}
	}
	for _, sb := range s.Bindings {
		if !s.live(sb.Namespace) {
			out = append(out, "ServiceBinding "+sb.Namespace+"/"+sb.Name)
		}
	}
	for _, rec := range s.Records {
		if !s.live(rec.Namespace) {
			out = append(out, "BrokerOperation "+rec.Namespace+"/"+rec.Name)
		}
	}
	for _, l := range s.Locks {
		if ns := lockNamespace(l); ns != "" && !s.live(ns) {
			out = append(out, "the lock "+l.Name)
		}
	}
	return out
}

// All runs every check.
func All(s Snapshot) []Violation {
	var out []Violation
	for _, c := range []func(Snapshot) []Violation{BrokerState, Leaks, DoubleProvisions, Answers, Final, Credentials} {
		out = append(out, c(s)...)
	}
	return out
}
