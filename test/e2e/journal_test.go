package e2e

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/lockstep-dev/lockstep/internal/broker/fakebroker"
)

func TestBrokerOperationsShowWhoDidWhatWithWhatResult(t *testing.T) {
	b := freshBroker(t)
	ns := namespace(t)
	require.Equal(t, 0, kubectl(t, instanceWith(ns, "db", "small", ns+"-db", ""), "apply", "-f", "-").ExitCode)
	b.ScriptInstance(fakebroker.OpUpdate, ns+"-db", fakebroker.Respond{Status: http.StatusUnprocessableEntity, Description: "no capacity"})
	require.NotEqual(t, 0, kubectl(t, instanceWith(ns, "db", "large", ns+"-db", ""), "apply", "-f", "-").ExitCode)
	require.Equal(t, 0, kubectl(t, "", "delete", "serviceinstance", "db", "-n", ns, "--timeout=20s").ExitCode)

	r := kubectl(t, "", "get", "brokeroperations", "-n", ns)
	require.Equal(t, 0, r.ExitCode, r.Output())
	lines := strings.Split(strings.TrimSpace(r.Stdout), "\n")
	require.Len(t, lines, 4, "a header and three operations")
	assert.Regexp(t, `^NAME\s+KIND\s+TARGET\s+VERB\s+USER\s+PHASE\s+HTTP\s+AGE`, lines[0])
	assert.Regexp(t, `(?m)^db-provision-\w+\s+ServiceInstance\s+db\s+provision\s+alice\s+Committed\s+201\s`, r.Stdout)
	assert.Regexp(t, `(?m)^db-update-\w+\s+ServiceInstance\s+db\s+update\s+alice\s+Failed\s+422\s`, r.Stdout)
	assert.Regexp(t, `(?m)^db-deprovision-\w+\s+ServiceInstance\s+db\s+deprovision\s+alice\s+Committed\s+200\s`, r.Stdout)

	r = kubectl(t, "", "get", "brokeroperations", "-n", ns, "-o", "custom-columns=DESCRIPTION:.status.description")
	assert.Contains(t, r.Stdout, `refused to change plan of instance "db" from "small" to "large": "no capacity"`)
}

// A refusal is an event on the object, for whoever looks at it later; the
// success kubectl was told about is in the record and the status only.
func TestEventsOnTheTarget(t *testing.T) {
	b := freshBroker(t)
	ns := namespace(t)
	require.Equal(t, 0, kubectl(t, instanceWith(ns, "db", "small", ns+"-db", ""), "apply", "-f", "-").ExitCode)
	b.ScriptInstance(fakebroker.OpUpdate, ns+"-db", fakebroker.Respond{Status: http.StatusUnprocessableEntity, Description: "no capacity"})
	require.NotEqual(t, 0, kubectl(t, instanceWith(ns, "db", "large", ns+"-db", ""), "apply", "-f", "-").ExitCode)
	var described string
	require.Eventually(t, func() bool {
		described = kubectl(t, "", "describe", "serviceinstance", "db", "-n", ns).Stdout
		return strings.Contains(described, "UpdateFailed") && strings.Contains(described, `update at broker "acme" asked by "alice"`)
	}, 10*time.Second, 200*time.Millisecond, "kubectl describe shows the refusal")
	assert.NotContains(t, described, "ProvisionSucceeded", "the provision kubectl was told about is no event")
}

func TestForgedStatusIsRejected(t *testing.T) {
	freshBroker(t)
	ns := namespace(t)
	require.Equal(t, 0, kubectl(t, instanceWith(ns, "db", "small", ns+"-db", ""), "apply", "-f", "-").ExitCode)

	r := kubectl(t, "", "patch", "serviceinstance", "db", "-n", ns, "--subresource=status", "--type=merge",
		"-p", `{"status":{"dashboardURL":"https://evil.example"}}`)
	assert.NotEqual(t, 0, r.ExitCode)
	assert.Contains(t, r.Stderr, `the status of ServiceInstance "db" is written by lockstep only`)
	assert.NotEqual(t, "https://evil.example", getInstance(t, ns, "db").Status.DashboardURL)

	r = kubectl(t, "", "patch", "servicebroker", brokerName, "--subresource=status", "--type=merge",
		"-p", `{"status":{"conditions":[]}}`)
	assert.NotEqual(t, 0, r.ExitCode)
	assert.Contains(t, r.Stderr, "is written by lockstep only")

	// A record carries its status without a subresource: only lockstep
	// writes it at all.
	var record string
	require.Eventually(t, func() bool {
		record = strings.TrimSpace(kubectl(t, "", "get", "brokeroperations", "-n", ns, "-o", "name").Stdout)
		return record != "" && !strings.Contains(record, "\n")
	}, 10*time.Second, 200*time.Millisecond, "the provision's record")
	phase := func() string {
		return kubectl(t, "", "get", record, "-n", ns, "-o", "jsonpath={.status.phase}").Stdout
	}
	before := phase()
	require.NotEmpty(t, before, "written with its answer")
	r = kubectl(t, "", "patch", record, "-n", ns, "--type=merge", "-p", `{"status":{"phase":"Failed","description":"forged"}}`)
	assert.NotEqual(t, 0, r.ExitCode)
	assert.Contains(t, r.Stderr, "is written by lockstep only, with what the broker answered")
	assert.Equal(t, before, phase(), "the record is as lockstep wrote it")
}

// writesPerOperation reads lockstep's histogram of the API server writes
// an admission waited for per broker operation: how many operations, and
// how many writes in all.
func writesPerOperation(t *testing.T) (uint64, float64) {
	t.Helper()
	families, err := ctrlmetrics.Registry.Gather()
	require.NoError(t, err)
	for _, f := range families {
		if f.GetName() == "lockstep_admission_apiserver_writes_per_operation" {
			h := f.GetMetric()[0].GetHistogram()
			return h.GetSampleCount(), h.GetSampleSum()
		}
	}
	return 0, 0
}

// An admission waits for one API server write per broker operation, the
// object's lock; the record of every operation, refusals included, is
// written after the reply.
func TestOneAPIServerWriteBeforeEachBrokerCall(t *testing.T) {
	b := freshBroker(t)
	ns := namespace(t)
	ops, writes := writesPerOperation(t)
	require.Equal(t, 0, kubectl(t, instanceWith(ns, "db", "small", ns+"-db", ""), "apply", "-f", "-").ExitCode)
	b.ScriptInstance(fakebroker.OpUpdate, ns+"-db", fakebroker.Respond{Status: 422, Description: "no capacity"})
	require.NotEqual(t, 0, kubectl(t, instanceWith(ns, "db", "large", ns+"-db", ""), "apply", "-f", "-").ExitCode)
	require.Equal(t, 0, kubectl(t, instanceWith(ns, "db", "small", ns+"-db", `{"storageGB": 20}`), "apply", "-f", "-").ExitCode)
	require.Equal(t, 0, kubectl(t, "", "delete", "serviceinstance", "db", "-n", ns, "--timeout=20s").ExitCode)

	gotOps, gotWrites := writesPerOperation(t)
	assert.Equal(t, uint64(4), gotOps-ops, "four broker operations")
	assert.Equal(t, float64(4), gotWrites-writes, "one API server write before each")
	require.Eventually(t, func() bool {
		r := kubectl(t, "", "get", "brokeroperations", "-n", ns, "--no-headers")
		return r.ExitCode == 0 && len(strings.Split(strings.TrimSpace(r.Stdout), "\n")) == 4
	}, 10*time.Second, 200*time.Millisecond, "every operation is recorded, after its reply")
}
