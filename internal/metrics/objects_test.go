package metrics

import (
	"sort"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/prometheus/common/expfmt"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/lockstep-dev/lockstep/api/v1alpha1"
	"github.com/lockstep-dev/lockstep/internal/typed/object"
)

func TestObjectsServesWhatTheObjectsSay(t *testing.T) {
	at := func(s int64) *metav1.Time { t := metav1.Unix(s, 0); return &t }
	cond := func(typ string, status metav1.ConditionStatus, reason string) metav1.Condition {
		return metav1.Condition{Type: typ, Status: status, Reason: reason}
	}
	op := func(name string, phase v1alpha1.OperationPhase, created, started int64) *v1alpha1.BrokerOperation {
		o := &v1alpha1.BrokerOperation{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", CreationTimestamp: metav1.Unix(created, 0)},
			Status: v1alpha1.BrokerOperationStatus{Phase: phase}}
		if started > 0 {
			o.Status.StartTime = at(started)
		}
		return o
	}
	tests := []struct {
		name    string
		objects []client.Object
		want    string
		typed   typedObjects
	}{
		{"nothing", nil, "", nil},
		{"brokers", []client.Object{
			&v1alpha1.ServiceBroker{ObjectMeta: metav1.ObjectMeta{Name: "acme"}, Status: v1alpha1.ServiceBrokerStatus{
				Conditions: []metav1.Condition{cond("Ready", "True", "CatalogLoaded")}, LastCatalogSync: at(1000)}},
			&v1alpha1.ServiceBroker{ObjectMeta: metav1.ObjectMeta{Name: "down"}, Status: v1alpha1.ServiceBrokerStatus{
				Conditions: []metav1.Condition{cond("Ready", "False", "CatalogUnavailable")}, LastCatalogSync: at(500)}},
			&v1alpha1.ServiceBroker{ObjectMeta: metav1.ObjectMeta{Name: "new"}},
		}, `
lockstep_servicebroker_catalog_sync_timestamp_seconds{broker="acme"} 1000
lockstep_servicebroker_catalog_sync_timestamp_seconds{broker="down"} 500
lockstep_servicebroker_ready{broker="acme"} 1
lockstep_servicebroker_ready{broker="down"} 0
lockstep_servicebroker_ready{broker="new"} 0
`, nil},
		{"conditions of instances and bindings", []client.Object{
			&v1alpha1.ServiceInstance{ObjectMeta: metav1.ObjectMeta{Name: "a", Namespace: "ns"}, Status: v1alpha1.ServiceInstanceStatus{
				Conditions: []metav1.Condition{cond("Ready", "True", "Provisioned"), cond("InSync", "False", "ParametersDrift")}}},
			&v1alpha1.ServiceInstance{ObjectMeta: metav1.ObjectMeta{Name: "b", Namespace: "ns"}, Status: v1alpha1.ServiceInstanceStatus{
				Conditions: []metav1.Condition{cond("Ready", "True", "Provisioned"), cond("InSync", "Unknown", "OutcomeUnknown")}}},
			&v1alpha1.ServiceInstance{ObjectMeta: metav1.ObjectMeta{Name: "fresh", Namespace: "ns"}},
			&v1alpha1.ServiceBinding{ObjectMeta: metav1.ObjectMeta{Name: "c", Namespace: "other"}, Status: v1alpha1.ServiceBindingStatus{
				Conditions: []metav1.Condition{cond("Ready", "False", "CredentialsMissing")}}},
		}, `
lockstep_object_conditions{condition="InSync",kind="ServiceInstance",reason="OutcomeUnknown",status="Unknown"} 1
lockstep_object_conditions{condition="InSync",kind="ServiceInstance",reason="ParametersDrift",status="False"} 1
lockstep_object_conditions{condition="Ready",kind="ServiceBinding",reason="CredentialsMissing",status="False"} 1
lockstep_object_conditions{condition="Ready",kind="ServiceInstance",reason="Provisioned",status="True"} 2
`, nil},
		{name: "conditions of the objects of typed kinds, each under its kind", objects: []client.Object{
			&v1alpha1.ServiceInstance{ObjectMeta: metav1.ObjectMeta{Name: "a", Namespace: "ns"}, Status: v1alpha1.ServiceInstanceStatus{
				Conditions: []metav1.Condition{cond("Ready", "True", "Provisioned")}}},
		}, typed: typedObjects{
			typedObject("PostgresqlDb", cond("Ready", "True", "Provisioned"), cond("InSync", "True", "InSync")),
			typedObject("PostgresqlDb", cond("Ready", "True", "Provisioned")),
			typedObject("Queue", cond("Ready", "False", "ProvisionFailed")),
			typedObject("Queue"),
		}, want: `
lockstep_object_conditions{condition="InSync",kind="PostgresqlDb",reason="InSync",status="True"} 1
lockstep_object_conditions{condition="Ready",kind="PostgresqlDb",reason="Provisioned",status="True"} 2
lockstep_object_conditions{condition="Ready",kind="Queue",reason="ProvisionFailed",status="False"} 1
lockstep_object_conditions{condition="Ready",kind="ServiceInstance",reason="Provisioned",status="True"} 1
`},
		{"the journal by phase, and the oldest record under way", []client.Object{
			op("written", "", 100, 0),
			op("polled", v1alpha1.PhaseInProgress, 200, 210),
			op("polled-longer", v1alpha1.PhaseInProgress, 150, 160),
			op("done", v1alpha1.PhaseCommitted, 10, 11),
			op("refused", v1alpha1.PhaseFailed, 20, 21),
		}, `
lockstep_operation_oldest_start_timestamp_seconds{phase="InProgress"} 160
lockstep_operation_oldest_start_timestamp_seconds{phase="Pending"} 100
lockstep_operation_records{phase="Committed"} 1
lockstep_operation_records{phase="Failed"} 1
lockstep_operation_records{phase="InProgress"} 2
lockstep_operation_records{phase="Pending"} 1
`, nil},
	}
	scheme := runtime.NewScheme()
	require.NoError(t, v1alpha1.AddToScheme(scheme))
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := &objectsCollector{brokerReady: objects.brokerReady, brokerSync: objects.brokerSync,
				conditions: objects.conditions, records: objects.records, oldest: objects.oldest}
			c.set(fake.NewClientBuilder().WithScheme(scheme).WithObjects(tt.objects...).Build())
			if tt.typed != nil {
				c.typed = tt.typed
			}
			assert.Equal(t, strings.TrimSpace(tt.want), samples(t, c))
			problems, err := testutil.CollectAndLint(c)
			require.NoError(t, err)
			assert.Empty(t, problems, "Prometheus naming conventions")
		})
	}
}

// samples is what c serves in the text format, without the HELP and TYPE
// lines, sorted.
func samples(t *testing.T, c prometheus.Collector) string {
	t.Helper()
	reg := registryOf(t, c)
	text, err := testutil.GatherAndFormat(reg, expfmt.TypeTextPlain, "lockstep_servicebroker_ready", "lockstep_servicebroker_catalog_sync_timestamp_seconds",
		"lockstep_object_conditions", "lockstep_operation_records", "lockstep_operation_oldest_start_timestamp_seconds")
	require.NoError(t, err)
	var lines []string
	for _, line := range strings.Split(string(text), "\n") {
		if line != "" && !strings.HasPrefix(line, "#") {
			lines = append(lines, line)
		}
	}
	sort.Strings(lines)
	return strings.Join(lines, "\n")
}

// typedObjects are objects of typed kinds, as a replica holds them.
type typedObjects []*unstructured.Unstructured

func (t typedObjects) EachObject(fn func(kind object.Kind, u *unstructured.Unstructured)) {
	for _, u := range t {
		fn(object.Kind{GVK: u.GroupVersionKind()}, u)
	}
}

// typedObject is an object of typed kind kind with conds in its status.
func typedObject(kind string, conds ...metav1.Condition) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{}}
	u.SetGroupVersionKind(schema.GroupVersionKind{Group: "services.lockstep.dev", Version: "v1alpha1", Kind: kind})
	if len(conds) > 0 {
		var list []any
		for _, c := range conds {
			list = append(list, map[string]any{"type": c.Type, "status": string(c.Status), "reason": c.Reason})
		}
		u.Object["status"] = map[string]any{"conditions": list}
	}
	return u
}
