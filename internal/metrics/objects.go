package metrics

import (
	"context"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/lockstep-dev/lockstep/api/v1alpha1"
	"github.com/lockstep-dev/lockstep/internal/typed/object"
)

// objects serves what lockstep's objects say now, read at every scrape
// from the manager's cache (which every replica keeps anyway: admission
// reads brokers, instances, bindings and operations from it), without
// copying an object: ServiceBrokers' readiness and last catalog sync, the
// Ready and InSync conditions of instances (ServiceInstances and the
// objects of typed kinds, each under its own kind) and bindings, and the journal's
// records by phase with the oldest one still under way. Every replica
// serves the same numbers; alerts take the maximum.
var objects = &objectsCollector{
	brokerReady: prometheus.NewDesc(prometheus.BuildFQName(namespace, "servicebroker", "ready"),
		"1 when the ServiceBroker's Ready condition is True (its catalog is loaded), else 0, by broker.",
		[]string{"broker"}, nil),
	brokerSync: prometheus.NewDesc(prometheus.BuildFQName(namespace, "servicebroker", "catalog_sync_timestamp_seconds"),
		"When the ServiceBroker's catalog was last fetched successfully (status.lastCatalogSync), in seconds since the epoch, by broker.",
		[]string{"broker"}, nil),
	conditions: prometheus.NewDesc(prometheus.BuildFQName(namespace, "object", "conditions"),
		"ServiceInstances, objects of typed kinds and ServiceBindings by kind, condition (Ready, InSync), its status (True, False, Unknown) and reason.",
		[]string{"kind", "condition", "status", "reason"}, nil),
	records: prometheus.NewDesc(prometheus.BuildFQName(namespace, "operation", "records"),
		"BrokerOperations in the journal, by phase (a record without a phase is Pending).",
		[]string{"phase"}, nil),
	oldest: prometheus.NewDesc(prometheus.BuildFQName(namespace, "operation", "oldest_start_timestamp_seconds"),
		"When the oldest BrokerOperation still under way (Pending, InProgress, Succeeded not yet committed, Orphaned not yet "+
			"compensated) started, in seconds since the epoch, by phase.",
		[]string{"phase"}, nil),
}

// scrapeTimeout bounds the cache reads of one scrape: a cache that is not
// synced yet leaves these metrics out rather than hold the scrape.
const scrapeTimeout = 5 * time.Second

// ServeObjects makes /metrics serve what lockstep's objects say, read
// from r (the manager's cached client) at every scrape.
func ServeObjects(r client.Reader) {
	objects.set(r)
}

// TypedObjects are the objects of the typed kinds that a replica holds in
// memory (typedkinds.Watcher).
type TypedObjects interface {
	// EachObject calls fn with every object of every typed kind held.
	EachObject(fn func(kind object.Kind, u *unstructured.Unstructured))
}

// ServeTypedObjects makes /metrics also serve the conditions of the
// objects of typed kinds, read from t at every scrape.
func ServeTypedObjects(t TypedObjects) {
	objects.mu.Lock()
	defer objects.mu.Unlock()
	objects.typed = t
}

type objectsCollector struct {
	brokerReady, brokerSync, conditions, records, oldest *prometheus.Desc

	mu     sync.Mutex
	reader client.Reader
	typed  TypedObjects
}

func (c *objectsCollector) set(r client.Reader) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.reader = r
}

// Describe implements prometheus.Collector.
func (c *objectsCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.brokerReady, c.brokerSync, c.conditions, c.records, c.oldest} {
		ch <- d
	}
}

// Collect implements prometheus.Collector. A kind the cache cannot list
// (not synced yet) is left out; a scrape never fails for it.
func (c *objectsCollector) Collect(ch chan<- prometheus.Metric) {
	c.mu.Lock()
	r, typed := c.reader, c.typed
	c.mu.Unlock()
	if r == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), scrapeTimeout)
	defer cancel()
	unsafe := client.UnsafeDisableDeepCopy

	var brokers v1alpha1.ServiceBrokerList
	if r.List(ctx, &brokers, unsafe) == nil {
		for _, b := range brokers.Items {
			ready := 0.0
			if meta.IsStatusConditionTrue(b.Status.Conditions, v1alpha1.ConditionReady) {
				ready = 1
			}
			ch <- prometheus.MustNewConstMetric(c.brokerReady, prometheus.GaugeValue, ready, b.Name)
			if b.Status.LastCatalogSync != nil {
				ch <- prometheus.MustNewConstMetric(c.brokerSync, prometheus.GaugeValue, float64(b.Status.LastCatalogSync.Unix()), b.Name)
			}
		}
	}

	counts := map[[4]string]int{}
	count := func(kind v1alpha1.TargetKind, conds []metav1.Condition) {
		for _, t := range []string{v1alpha1.ConditionReady, v1alpha1.ConditionInSync} {
			if cond := meta.FindStatusCondition(conds, t); cond != nil {
				counts[[4]string{string(kind), t, string(cond.Status), cond.Reason}]++
			}
		}
	}
	var instances v1alpha1.ServiceInstanceList
	if r.List(ctx, &instances, unsafe) == nil {
		for i := range instances.Items {
			count(v1alpha1.KindServiceInstance, instances.Items[i].Status.Conditions)
		}
	}
	var bindings v1alpha1.ServiceBindingList
	if r.List(ctx, &bindings, unsafe) == nil {
		for i := range bindings.Items {
			count(v1alpha1.KindServiceBinding, bindings.Items[i].Status.Conditions)
		}
	}
	if typed != nil {
		typed.EachObject(func(kind object.Kind, u *unstructured.Unstructured) {
			count(v1alpha1.TargetKind(kind.GVK.Kind), conditionsOf(u))
		})
	}
	for k, n := range counts {
		ch <- prometheus.MustNewConstMetric(c.conditions, prometheus.GaugeValue, float64(n), k[0], k[1], k[2], k[3])
	}

	var ops v1alpha1.BrokerOperationList
	if r.List(ctx, &ops, unsafe) != nil {
		return
	}
	phases := map[v1alpha1.OperationPhase]int{}
	oldest := map[v1alpha1.OperationPhase]time.Time{}
	for i := range ops.Items {
		op := &ops.Items[i]
		phase := op.Status.Phase
		if phase == "" {
			phase = v1alpha1.PhasePending
		}
		phases[phase]++
		if !underWay(phase) {
			continue
		}
		start := op.CreationTimestamp.Time
		if op.Status.StartTime != nil {
			start = op.Status.StartTime.Time
		}
		if t, seen := oldest[phase]; !seen || start.Before(t) {
			oldest[phase] = start
		}
	}
	for phase, n := range phases {
		ch <- prometheus.MustNewConstMetric(c.records, prometheus.GaugeValue, float64(n), string(phase))
	}
	for phase, t := range oldest {
		ch <- prometheus.MustNewConstMetric(c.oldest, prometheus.GaugeValue, float64(t.Unix()), string(phase))
	}
}

// underWay reports whether an operation in phase is not final yet.
func underWay(phase v1alpha1.OperationPhase) bool {
	switch phase {
	case v1alpha1.PhaseFailed, v1alpha1.PhaseCommitted, v1alpha1.PhaseCompensated:
		return false
	}
	return true
}

// conditionsOf reads the conditions of an object of a typed kind (whose
// status is a ServiceInstance's) without copying it; what is not a
// condition is left out.
func conditionsOf(u *unstructured.Unstructured) []metav1.Condition {
	raw, _, _ := unstructured.NestedFieldNoCopy(u.Object, "status", "conditions")
	list, _ := raw.([]any)
	conds := make([]metav1.Condition, 0, len(list))
	for _, item := range list {
		m, _ := item.(map[string]any)
		typ, _ := m["type"].(string)
		status, _ := m["status"].(string)
		reason, _ := m["reason"].(string)
		if typ != "" {
			conds = append(conds, metav1.Condition{Type: typ, Status: metav1.ConditionStatus(status), Reason: reason})
		}
	}
	return conds
}
