package metrics

import "github.com/prometheus/client_golang/prometheus"

var marketplaceWrites = prometheus.NewCounterVec(prometheus.CounterOpts{
	Namespace: namespace,
	Subsystem: "marketplace",
	Name:      "writes_total",
	Help: "API writes of the catalog sync to ServiceOfferings and ServicePlans, by kind and verb " +
		"(create, update, status, delete), and to the CustomResourceDefinitions and ClusterRoles of typed kinds " +
		"(apply, patch: marked retiring or not, delete); none when a catalog did not change.",
}, []string{"kind", "verb"})

// MarketplaceWrite counts one write of the catalog sync.
func MarketplaceWrite(kind, verb string) {
	marketplaceWrites.WithLabelValues(kind, verb).Inc()
}
