package suite

import (
	"context"
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/lockstep-dev/lockstep/api/v1alpha1"
	"github.com/lockstep-dev/lockstep/bench/env"
	"github.com/lockstep-dev/lockstep/bench/report"
)

// The metrics the marketplace measurement reads from lockstep.
const (
	marketplaceWrites     = "lockstep_marketplace_writes_total"
	reconcileTotal        = "controller_runtime_reconcile_total"
	reconcileSecondsSum   = "controller_runtime_reconcile_time_seconds_sum"
	marketplaceController = "marketplace"
)

// marketplaceSync measures the catalog sync into ServiceOfferings and
// ServicePlans of the broker with plans plans, just registered: how long
// until every plan is a ServicePlan and how many writes that took; then a
// sync of the unchanged catalog (the catalog fetched again): how long the
// marketplace reconcile takes and how many writes it makes (the goal is
// none).
func (s *Suite) marketplaceSync(ctx context.Context, sec *report.Section, broker string, plans int, registered time.Time) error {
	sec.Text = append(sec.Text, fmt.Sprintf("**Marketplace sync.** After the %d-plan broker is registered: the time until every plan "+
		"is a ServicePlan (from the ServiceBroker's creation), and lockstep's `%s`. Then the unchanged catalog is fetched again "+
		"(an annotation on the ServiceBroker) and the marketplace controller's reconcile of it is timed "+
		"(controller-runtime's `%s` over `%s`), with the writes it made.", plans, marketplaceWrites, reconcileSecondsSum, reconcileTotal))
	var list v1alpha1.ServicePlanList
	err := env.Poll(ctx, s.Sizes.StepTimeout, 100*time.Millisecond, func(ctx context.Context) (bool, error) {
		if err := s.Env.Client.List(ctx, &list, client.MatchingFields{"spec.brokerName": broker}); err != nil {
			return false, err
		}
		return len(list.Items) == plans, nil
	})
	if err != nil {
		return fmt.Errorf("marketplace: %d ServicePlans of %s (%d so far): %w", plans, broker, len(list.Items), err)
	}
	firstSync := time.Since(registered)
	// The last status writes may trail the last create by a moment.
	if err := s.marketplaceIdle(ctx); err != nil {
		return err
	}
	m, err := env.ScrapeMetrics(ctx, s.Env.MetricsURL())
	if err != nil {
		return err
	}
	firstWrites := m.Sum(marketplaceWrites, nil)

	// The same catalog again.
	var sb v1alpha1.ServiceBroker
	if err := s.Env.Client.Get(ctx, client.ObjectKey{Name: broker}, &sb); err != nil {
		return err
	}
	before := sb.Status.LastCatalogSync
	if before != nil {
		time.Sleep(time.Until(before.Add(time.Second))) // stored to the second
	}
	runs, seconds := m.Sum(reconcileTotal, map[string]string{"controller": marketplaceController}), m.Sum(reconcileSecondsSum, map[string]string{"controller": marketplaceController})
	patch := client.MergeFrom(sb.DeepCopy())
	metav1.SetMetaDataAnnotation(&sb.ObjectMeta, v1alpha1.AnnotationRefresh, "now")
	if err := s.Env.Client.Patch(ctx, &sb, patch); err != nil {
		return fmt.Errorf("marketplace: asking for a catalog fetch of %s: %w", broker, err)
	}
	var after env.Metrics
	err = env.Poll(ctx, s.Sizes.StepTimeout, 100*time.Millisecond, func(ctx context.Context) (bool, error) {
		if err := s.Env.Client.Get(ctx, client.ObjectKey{Name: broker}, &sb); err != nil {
			return false, err
		}
		if sb.Status.LastCatalogSync == nil || (before != nil && !sb.Status.LastCatalogSync.After(before.Time)) {
			return false, nil
		}
		after, err = env.ScrapeMetrics(ctx, s.Env.MetricsURL())
		if err != nil {
			return false, err
		}
		// The annotation, then the status of the fetch: two reconciles.
		return after.Sum(reconcileTotal, map[string]string{"controller": marketplaceController}) >= runs+2, nil
	})
	if err != nil {
		return fmt.Errorf("marketplace: the sync of the unchanged catalog of %s: %w", broker, err)
	}
	if err := s.marketplaceIdle(ctx); err != nil {
		return err
	}
	if after, err = env.ScrapeMetrics(ctx, s.Env.MetricsURL()); err != nil {
		return err
	}
	n := after.Sum(reconcileTotal, map[string]string{"controller": marketplaceController}) - runs
	perSync := time.Duration((after.Sum(reconcileSecondsSum, map[string]string{"controller": marketplaceController}) - seconds) / n * float64(time.Second))
	unchangedWrites := after.Sum(marketplaceWrites, nil) - firstWrites
	sec.Tables = append(sec.Tables, report.Table{
		Caption: fmt.Sprintf("Marketplace sync of %d plans (ServiceOfferings and ServicePlans):", plans),
		Header:  []string{"sync", "time", "API writes"},
		Rows: [][]string{
			{"first (registration to every ServicePlan; writes of both catalogs)", dur(firstSync), fmt.Sprint(firstWrites)},
			{fmt.Sprintf("unchanged catalog (%.0f reconciles, time each)", n), dur(perSync), fmt.Sprint(unchangedWrites)},
		},
	})
	sec.Targets = append(sec.Targets, report.Check(fmt.Sprintf("marketplace sync of an unchanged %d-plan catalog", plans),
		"no API writes", fmt.Sprintf("%.0f writes, %s", unchangedWrites, dur(perSync)), unchangedWrites == 0))
	return nil
}

// marketplaceIdle waits until the marketplace controller's work queue is
// empty and nothing is in flight.
func (s *Suite) marketplaceIdle(ctx context.Context) error {
	return env.Poll(ctx, s.Sizes.StepTimeout, 100*time.Millisecond, func(ctx context.Context) (bool, error) {
		m, err := env.ScrapeMetrics(ctx, s.Env.MetricsURL())
		if err != nil {
			return false, err
		}
		match := map[string]string{"name": marketplaceController}
		return m.Sum("workqueue_depth", match) == 0 && m.Sum("controller_runtime_active_workers", map[string]string{"controller": marketplaceController}) == 0, nil
	})
}
