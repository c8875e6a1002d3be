package robustness

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/lockstep-dev/lockstep/api/v1alpha1"
	"github.com/lockstep-dev/lockstep/test/robustness/check"
)

// snapshot reads what the checks need: the API server's objects (retried
// while it does not answer), the records seen, the brokers' state, the
// history; and with texts, everything lockstep wrote for people to read.
func (e *env) snapshot(ctx context.Context, t *traffic, texts bool) (check.Snapshot, error) {
	s := check.Snapshot{Requests: t.hist.Requests(), Credentials: e.markers(), Secrets: map[string]corev1.Secret{}, Brokers: map[string]*check.Broker{}}
	err := wait.PollUntilContextTimeout(ctx, time.Second, 5*time.Minute, true, func(ctx context.Context) (bool, error) {
		err := e.read(ctx, &s)
		if err != nil {
			e.logf("reading the API server for the checks: %v", err)
		}
		return err == nil, nil
	})
	if err != nil {
		return s, fmt.Errorf("the API server did not answer for the checks: %w", err)
	}
	s.Seen = e.watch.seen()
	for _, rec := range s.Records {
		s.Seen[rec.Namespace+"/"+rec.Name] = rec
	}
	for _, b := range e.brokers {
		if s.Brokers[b.name], err = b.state(ctx); err != nil {
			return s, err
		}
	}
	t.mu.Lock()
	s.FromSecrets = map[string]map[string][]any{}
	for k, v := range t.fromSecrets {
		s.FromSecrets[k] = v
	}
	t.mu.Unlock()
	if texts {
		s.Texts = e.texts(ctx)
	}
	return s, nil
}

// read lists the run's objects.
func (e *env) read(ctx context.Context, s *check.Snapshot) error {
	var (
		instances  v1alpha1.ServiceInstanceList
		bindings   v1alpha1.ServiceBindingList
		records    v1alpha1.BrokerOperationList
		leases     coordinationv1.LeaseList
		namespaces corev1.NamespaceList
	)
	for _, l := range []client.ObjectList{&instances, &bindings, &records, &namespaces} {
		if err := e.admin.List(ctx, l); err != nil {
			return err
		}
	}
	if err := e.admin.List(ctx, &leases, client.InNamespace(lockstepNamespace)); err != nil {
		return err
	}
	s.Live = map[string]bool{}
	s.Namespaces = nil
	for _, ns := range namespaces.Items {
		s.Live[ns.Name] = true
		if strings.HasPrefix(ns.Name, namespacePrefix) {
			s.Namespaces = append(s.Namespaces, ns)
		}
	}
	s.Instances, s.Bindings, s.Records, s.Locks = instances.Items, bindings.Items, records.Items, nil
	for _, l := range leases.Items {
		if l.Name != leaderLease {
			s.Locks = append(s.Locks, l)
		}
	}
	for _, sb := range s.Bindings {
		var secret corev1.Secret
		err := e.admin.Get(ctx, client.ObjectKey{Namespace: sb.Namespace, Name: sb.Spec.SecretName}, &secret)
		if client.IgnoreNotFound(err) != nil {
			return err
		}
		if err == nil {
			s.Secrets[sb.Namespace+"/"+sb.Spec.SecretName] = secret
		}
	}
	return nil
}

// texts is what lockstep wrote that holds a credential marker: its logs,
// the metrics scraped, and what the watch kept (records, events, status).
func (e *env) texts(ctx context.Context) []check.Text {
	out, _ := e.watch.texts()
	for _, r := range e.replicas {
		for _, log := range r.logFiles() {
			out = keepText(out, "log "+log, readFile(log), e.markers())
		}
		if m := r.scrape(ctx); m != "" {
			e.metrics.keep("metrics of replica "+r.name, m)
		}
	}
	return append(out, e.metrics.all()...)
}

// scrapes keeps the metrics scraped that hold a credential marker.
type scrapes struct {
	markers []string
	mu      sync.Mutex
	kept    []check.Text
	count   int
}

func (s *scrapes) keep(source, content string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.count++
	s.kept = keepText(s.kept, source, content, s.markers)
}

// scraped counts the scrapes.
func (s *scrapes) scraped() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.count
}

func (s *scrapes) all() []check.Text {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]check.Text(nil), s.kept...)
}

// scrapeEvery scrapes every running replica's metrics every period until
// ctx ends.
func (e *env) scrapeEvery(ctx context.Context, period time.Duration) {
	for sleep(ctx, period) {
		for _, r := range e.replicas {
			if m := r.scrape(ctx); m != "" {
				e.metrics.keep("metrics of replica "+r.name, m)
			}
		}
	}
}
