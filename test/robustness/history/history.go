package history

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/lockstep-dev/lockstep/api/v1alpha1"
)

// Kind is a kind of client operation.
type Kind string

// What clients do.
const (
	CreateInstance   Kind = "create instance"
	UpdateParameters Kind = "update parameters"
	ChangePlan       Kind = "change plan"
	UpdateFromSecret Kind = "update parameters from a Secret"
	Bind             Kind = "bind"
	Unbind           Kind = "unbind"
	DeleteInstance   Kind = "delete instance"
	DeleteNamespace  Kind = "delete namespace"
	SetPolicy        Kind = "change the reconcile policy"
	Adopt            Kind = "adopt"
	DryRun           Kind = "dry run"
	ConflictingEdit  Kind = "conflicting edit"
	// FollowWayOut is what a person does with a namespace that stays
	// Terminating: the command its condition names.
	FollowWayOut Kind = "follow the way out"
)

// Kinds lists every kind, in the order the results show them.
var Kinds = []Kind{CreateInstance, UpdateParameters, ChangePlan, UpdateFromSecret, Bind, Unbind, DeleteInstance,
	DeleteNamespace, SetPolicy, Adopt, DryRun, ConflictingEdit, FollowWayOut}

// Request is one request a client made and what it was told.
type Request struct {
	// Seq numbers requests in the order they started.
	Seq    int
	Client int
	// User is the username the request was made as: unique to this
	// request, so that the broker's and the journal's records of it are
	// found by it (the originating identity, a record's requester).
	User string
	Kind Kind
	// Object is what the request is about: <kind> <namespace>/<name>.
	Object     string
	Namespace  string
	Broker     string
	ExternalID string
	// InstanceID is a binding's instance's external id.
	InstanceID string
	// Verb is the broker operation the request asks lockstep for; empty
	// when it asks for none (a dry run, a metadata change, a delete that
	// detaches, an adoption): then lockstep must not change the broker.
	Verb v1alpha1.Verb
	// Unsure says that lockstep may carry the change out without the
	// broker (a delete of an object the broker never held).
	Unsure bool
	// Policy is the object's reconcile policy after the request.
	Policy v1alpha1.ReconcilePolicy
	// Detail says what changed (plan, parameters), for a person.
	Detail     string
	Start, End time.Time
	Answer     Answer
	// Message is what kubectl would show: the error, or the warnings.
	Message string
}

// Fault is one fault injected.
type Fault struct {
	Kind FaultKind
	// Target is what it hit: a broker, a replica, kube-apiserver.
	Target     string
	Start, End time.Time
	// Detail says more (the requests it hits, its probability).
	Detail string
}

// FaultKind is a kind of fault.
type FaultKind string

// History is every request and fault of a run, safe for concurrent use.
type History struct {
	// Seed is the run's seed; Started when it began.
	Seed    int64
	Started time.Time

	mu       sync.Mutex
	requests []*Request
	faults   []*Fault
}

// New starts a history.
func New(seed int64) *History { return &History{Seed: seed, Started: time.Now()} }

// Begin records a request as it starts and numbers it.
func (h *History) Begin(r *Request) *Request {
	h.mu.Lock()
	defer h.mu.Unlock()
	r.Seq = len(h.requests) + 1
	r.Start = time.Now()
	h.requests = append(h.requests, r)
	return r
}

// End records the answer of a request that Begin recorded.
func (h *History) End(r *Request, err error, warnings []string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	r.End = time.Now()
	r.Answer = Classify(err, warnings)
	r.Message = Message(err)
	if err == nil && len(warnings) > 0 {
		r.Message = "Warning: " + strings.Join(warnings, "; Warning: ")
	}
}

// Inject records a fault as it starts; End it when it stops.
func (h *History) Inject(f *Fault) *Fault {
	h.mu.Lock()
	defer h.mu.Unlock()
	f.Start = time.Now()
	h.faults = append(h.faults, f)
	return f
}

// Heal records the end of a fault.
func (h *History) Heal(f *Fault) {
	h.mu.Lock()
	defer h.mu.Unlock()
	f.End = time.Now()
}

// Requests returns copies of the requests, in the order they started.
func (h *History) Requests() []Request {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := make([]Request, len(h.requests))
	for i, r := range h.requests {
		out[i] = *r
	}
	return out
}

// Faults returns copies of the faults, in the order they started.
func (h *History) Faults() []Fault {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := make([]Fault, len(h.faults))
	for i, f := range h.faults {
		out[i] = *f
	}
	return out
}

// Around returns, as lines for a person, the history around a
// violation: the requests keep keeps that overlap [from-margin,
// to+margin] (all of them when from is zero), and the faults that
// overlap one of those requests.
func (h *History) Around(keep func(Request) bool, from, to time.Time, margin time.Duration) []string {
	type line struct {
		at   time.Time
		text string
	}
	var all []line
	var picked []Request
	for _, r := range h.Requests() {
		if !keep(r) {
			continue
		}
		if !from.IsZero() && (r.End.Before(from.Add(-margin)) || r.Start.After(to.Add(margin))) {
			continue
		}
		picked = append(picked, r)
		all = append(all, line{r.Start, h.Describe(r)})
	}
	for _, f := range h.Faults() {
		end := f.End
		if end.IsZero() {
			end = time.Now()
		}
		if !slices.ContainsFunc(picked, func(r Request) bool { return f.Start.Before(r.End) && end.After(r.Start) }) {
			continue
		}
		all = append(all, line{f.Start, fmt.Sprintf("%s  fault %s on %s for %s %s", h.offset(f.Start), f.Kind, f.Target, end.Sub(f.Start).Round(time.Millisecond), f.Detail)})
	}
	slices.SortStableFunc(all, func(a, b line) int { return a.at.Compare(b.at) })
	lines := make([]string, len(all))
	for i, l := range all {
		lines[i] = l.text
	}
	return lines
}

// Describe is one request as a line for a person.
func (h *History) Describe(r Request) string {
	s := fmt.Sprintf("%s  #%d client %d as %s: %s %s", h.offset(r.Start), r.Seq, r.Client, r.User, r.Kind, r.Object)
	if r.Detail != "" {
		s += " (" + r.Detail + ")"
	}
	s += fmt.Sprintf(" -> %s after %s", r.Answer, r.End.Sub(r.Start).Round(time.Millisecond))
	if r.Message != "" {
		s += ": " + r.Message
	}
	return s
}

// offset is a time as the offset from the start of the run.
func (h *History) offset(t time.Time) string {
	return fmt.Sprintf("+%8.3fs", t.Sub(h.Started).Seconds())
}
