package e2e

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/lockstep-dev/lockstep/api/v1alpha1"
	"github.com/lockstep-dev/lockstep/internal/broker/fakebroker"
	"github.com/lockstep-dev/lockstep/internal/broker/osbapi"
	"github.com/lockstep-dev/lockstep/internal/brokercall"
	"github.com/lockstep-dev/lockstep/internal/certs"
)

// rejectLabel marks objects that a second, test-only validating webhook
// rejects after lockstep allowed them: the API server then never persists
// what the broker already carried out.
const rejectLabel = "e2e.lockstep.dev/reject"

// installRejecter runs a validating webhook that denies every request it
// gets, and registers it for lockstep objects labelled rejectLabel=true.
func installRejecter(t *testing.T) {
	t.Helper()
	bundle, err := certs.Generate([]string{"127.0.0.1"}, time.Hour)
	require.NoError(t, err)
	pair, err := tls.X509KeyPair(bundle.Cert, bundle.Key)
	require.NoError(t, err)
	ln, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{Certificates: []tls.Certificate{pair}})
	require.NoError(t, err)
	var called atomic.Bool
	srv := &http.Server{ReadHeaderTimeout: 5 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		called.Store(true)
		var review admissionv1.AdmissionReview
		if err := json.NewDecoder(r.Body).Decode(&review); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		review.Response = &admissionv1.AdmissionResponse{UID: review.Request.UID, Allowed: false,
			Result: &metav1.Status{Code: http.StatusForbidden, Message: "rejected by the e2e test's second webhook"}}
		review.Request = nil
		_ = json.NewEncoder(w).Encode(review)
	})}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })

	url := fmt.Sprintf("https://%s/reject", ln.Addr().(*net.TCPAddr).String())
	config := &admissionregistrationv1.ValidatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "e2e-rejecter"},
		Webhooks: []admissionregistrationv1.ValidatingWebhook{{
			Name:                    "reject.e2e.lockstep.dev",
			AdmissionReviewVersions: []string{"v1"},
			SideEffects:             ptr.To(admissionregistrationv1.SideEffectClassNone),
			FailurePolicy:           ptr.To(admissionregistrationv1.Fail),
			ClientConfig:            admissionregistrationv1.WebhookClientConfig{URL: &url, CABundle: bundle.CACert},
			ObjectSelector:          &metav1.LabelSelector{MatchLabels: map[string]string{rejectLabel: "true"}},
			Rules: []admissionregistrationv1.RuleWithOperations{{
				Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update},
				Rule: admissionregistrationv1.Rule{APIGroups: []string{"lockstep.dev"}, APIVersions: []string{"v1alpha1"},
					Resources: []string{"serviceinstances", "servicebindings"}},
			}},
		}},
	}
	require.NoError(t, cluster.client.Create(context.Background(), config))
	t.Cleanup(func() { _ = cluster.client.Delete(context.Background(), config) })
	// The API server picks webhook configurations up asynchronously: it
	// uses this one once a labelled dry-run reaches the rejecter.
	require.Eventually(t, func() bool {
		probe := probeInstance("reject-probe")
		probe.Labels = map[string]string{rejectLabel: "true"}
		_ = cluster.client.Create(context.Background(), probe, client.DryRunAll)
		return called.Load()
	}, 30*time.Second, 100*time.Millisecond, "the API server never called the rejecting webhook")
}

// probeInstance is a ServiceInstance in namespace default for dry-runs
// that show which webhooks the API server calls.
func probeInstance(name string) *v1alpha1.ServiceInstance {
	return &v1alpha1.ServiceInstance{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name},
		Spec:       v1alpha1.ServiceInstanceSpec{BrokerName: brokerName, ServiceName: "db", PlanName: "small"},
	}
}

// validatingWebhookCalled reports whether the API server calls lockstep's
// validating webhook: it refuses a dry-run of an instance whose plan its
// broker does not offer.
func validatingWebhookCalled() bool {
	probe := probeInstance("validating-probe")
	probe.Spec.PlanName = "no-such-plan"
	return cluster.client.Create(context.Background(), probe, client.DryRunAll) != nil
}

// operationPhase waits until the operation of verb on the named object
// reaches phase, and returns it.
func operationPhase(t *testing.T, ns, name string, verb v1alpha1.Verb, phase v1alpha1.OperationPhase) v1alpha1.BrokerOperation {
	t.Helper()
	var found v1alpha1.BrokerOperation
	require.Eventually(t, func() bool {
		var ops v1alpha1.BrokerOperationList
		require.NoError(t, cluster.client.List(context.Background(), &ops, client.InNamespace(ns)))
		for _, op := range ops.Items {
			if op.Spec.Target.Name == name && op.Spec.Verb == verb && op.Status.Phase == phase {
				found = op
				return true
			}
		}
		return false
	}, 30*time.Second, 100*time.Millisecond, "operation %s of %s/%s never reached %s", verb, ns, name, phase)
	return found
}

func TestOrphanAfterAllowIsCompensated(t *testing.T) {
	installRejecter(t)

	t.Run("create: the broker's instance is deprovisioned", func(t *testing.T) {
		b := freshBroker(t)
		ns := namespace(t)
		r := kubectl(t, fmt.Sprintf(`apiVersion: lockstep.dev/v1alpha1
kind: ServiceInstance
metadata: {name: db, namespace: %s, labels: {%s: "true"}}
spec: {brokerName: acme, serviceName: db, planName: small, externalID: %s-db}
`, ns, rejectLabel, ns), "apply", "-f", "-")
		require.NotEqual(t, 0, r.ExitCode)
		assert.Contains(t, r.Stderr, "rejected by the e2e test's second webhook")
		assert.Equal(t, 1, b.Count(fakebroker.OpProvision), "lockstep allowed it and the broker provisioned")
		assert.False(t, instanceExists(t, ns, "db"))

		op := operationPhase(t, ns, "db", v1alpha1.VerbProvision, v1alpha1.PhaseCompensated)
		assert.Contains(t, op.Status.Description, "deprovisioned the orphaned instance")
		_, held := b.Instance(ns + "-db")
		assert.False(t, held, "what the broker holds equals what the API server holds: nothing")
	})

	t.Run("bind: the binding is unbound and its Secret removed", func(t *testing.T) {
		b, ns := boundInstance(t)
		r := kubectl(t, fmt.Sprintf(`apiVersion: lockstep.dev/v1alpha1
kind: ServiceBinding
metadata: {name: creds, namespace: %s, labels: {%s: "true"}}
spec: {instanceName: db, externalID: %s-creds}
`, ns, rejectLabel, ns), "apply", "-f", "-")
		require.NotEqual(t, 0, r.ExitCode)
		assert.Equal(t, 1, b.Count(fakebroker.OpBind))
		assert.False(t, bindingExists(t, ns, "creds"))

		operationPhase(t, ns, "creds", v1alpha1.VerbBind, v1alpha1.PhaseCompensated)
		_, held := b.Binding(ns+"-db", ns+"-creds")
		assert.False(t, held, "the broker no longer holds the binding")
		_, ok := getSecret(t, ns, "creds")
		assert.False(t, ok, "the credentials are gone")
	})

	t.Run("update: the broker gets the persisted spec back", func(t *testing.T) {
		b, ns := boundInstance(t)
		r := kubectl(t, fmt.Sprintf(`apiVersion: lockstep.dev/v1alpha1
kind: ServiceInstance
metadata: {name: db, namespace: %s, labels: {%s: "true"}}
spec: {brokerName: acme, serviceName: db, planName: large, externalID: %s-db}
`, ns, rejectLabel, ns), "apply", "-f", "-")
		require.NotEqual(t, 0, r.ExitCode)
		held, _ := b.Instance(ns + "-db")
		require.Equal(t, 1, b.Count(fakebroker.OpUpdate))

		operationPhase(t, ns, "db", v1alpha1.VerbUpdate, v1alpha1.PhaseCompensated)
		held, _ = b.Instance(ns + "-db")
		assert.Equal(t, fakebroker.PlanSmallID, held.PlanID, "the broker is back on the persisted plan")
		assert.Equal(t, "small", getInstance(t, ns, "db").Spec.PlanName)
	})
}

func TestCommittedInstanceIsReady(t *testing.T) {
	freshBroker(t)
	ns := namespace(t)
	require.Equal(t, 0, kubectl(t, instanceWith(ns, "db", "small", ns+"-db", ""), "apply", "-f", "-").ExitCode)
	operationPhase(t, ns, "db", v1alpha1.VerbProvision, v1alpha1.PhaseCommitted)
	require.Eventually(t, func() bool {
		si := getInstance(t, ns, "db")
		return meta.IsStatusConditionTrue(si.Status.Conditions, v1alpha1.ConditionReady) &&
			meta.IsStatusConditionTrue(si.Status.Conditions, v1alpha1.ConditionInSync) &&
			si.Status.LastOperation != nil && si.Status.ObservedGeneration == si.Generation
	}, 10*time.Second, 100*time.Millisecond, "status follows the committed provision")
	r := kubectl(t, "", "get", "serviceinstance", "db", "-n", ns)
	assert.Regexp(t, `db\s+acme\s+db\s+small\s+True\s+True\s+provision`, r.Stdout)
}

func TestBypassedAdmissionIsStillDeprovisioned(t *testing.T) {
	b := freshBroker(t)
	ns := namespace(t)
	require.Equal(t, 0, kubectl(t, instanceWith(ns, "db", "small", ns+"-db", ""), "apply", "-f", "-").ExitCode)
	operationPhase(t, ns, "db", v1alpha1.VerbProvision, v1alpha1.PhaseCommitted)

	// The webhook configuration is removed (webhook down, not yet installed).
	var config admissionregistrationv1.ValidatingWebhookConfiguration
	require.NoError(t, cluster.client.Get(context.Background(), client.ObjectKey{Name: "lockstep-validating"}, &config))
	require.NoError(t, cluster.client.Delete(context.Background(), &config))
	t.Cleanup(func() {
		config.ResourceVersion = ""
		require.NoError(t, cluster.client.Create(context.Background(), &config))
		require.Eventually(t, validatingWebhookCalled, 30*time.Second, 100*time.Millisecond, "lockstep's validating webhook is back")
	})
	require.Eventually(t, func() bool { return !validatingWebhookCalled() }, 30*time.Second, 100*time.Millisecond,
		"the API server no longer calls lockstep's validating webhook")

	r := kubectl(t, "", "delete", "serviceinstance", "db", "-n", ns, "--timeout=30s")
	require.Equal(t, 0, r.ExitCode, r.Output())
	assert.False(t, instanceExists(t, ns, "db"))
	assert.Equal(t, 1, b.Count(fakebroker.OpDeprovision), "the finalizer deprovisioned before the object went")
	_, held := b.Instance(ns + "-db")
	assert.False(t, held)
	call, _ := b.LastCall(fakebroker.OpDeprovision)
	id := identityOf(t, call)
	assert.Equal(t, lockstepIdentity(t), id.Username, "the finalizer's call is lockstep's own")
	assert.Equal(t, []string{brokercall.ReasonFinalizer}, id.Extra[brokercall.ExtraReason], "and says why")
	assert.NotEmpty(t, call.Header.Get(osbapi.HeaderRequestIdentity), "it is a journaled operation")
	operationPhase(t, ns, "db", v1alpha1.VerbDeprovision, v1alpha1.PhaseCommitted)
}

func TestOrphanMitigationAfterABrokerTimeout(t *testing.T) {
	b := freshBroker(t)
	ns := namespace(t)
	// The broker creates the instance at once but answers after lockstep
	// gave up (the per-request timeout is 3s): the classic orphan.
	b.ScriptInstance(fakebroker.OpProvision, ns+"-db", fakebroker.Respond{Delay: 10 * time.Second})
	r := kubectl(t, instanceWith(ns, "db", "small", ns+"-db", ""), "apply", "-f", "-")
	require.NotEqual(t, 0, r.ExitCode)
	assert.Contains(t, r.Stderr, "no answer came back")
	assert.False(t, instanceExists(t, ns, "db"))

	op := operationPhase(t, ns, "db", v1alpha1.VerbProvision, v1alpha1.PhaseCompensated)
	assert.Contains(t, op.Status.Description, "orphan mitigation")
	require.Eventually(t, func() bool { _, held := b.Instance(ns + "-db"); return !held }, 20*time.Second, 100*time.Millisecond,
		"the broker's orphan is deprovisioned")
}
