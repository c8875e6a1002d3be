package e2e

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/lockstep-dev/lockstep/api/v1alpha1"
	"github.com/lockstep-dev/lockstep/internal/broker/fakebroker"
	"github.com/lockstep-dev/lockstep/internal/broker/osbapi"
	"github.com/lockstep-dev/lockstep/internal/broker/osbclient"
	"github.com/lockstep-dev/lockstep/internal/brokercall"
)

// lockstepIdentity is who lockstep is to the API server, and so to the
// brokers it calls on its own.
func lockstepIdentity(t *testing.T) string {
	t.Helper()
	cs, err := kubernetes.NewForConfig(cluster.config)
	require.NoError(t, err)
	review, err := cs.AuthenticationV1().SelfSubjectReviews().Create(context.Background(), &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
	require.NoError(t, err)
	return review.Status.UserInfo.Username
}

// identityOf decodes the originating identity a broker got with c.
func identityOf(t *testing.T, c fakebroker.Call) osbclient.Identity {
	t.Helper()
	v := c.Header.Get(osbapi.HeaderOriginatingIdentity)
	encoded, ok := strings.CutPrefix(v, osbapi.KubernetesPlatform+" ")
	require.True(t, ok, "the originating identity of %s %s: %q", c.Method, c.Path, v)
	raw, err := base64.StdEncoding.DecodeString(encoded)
	require.NoError(t, err)
	var id osbclient.Identity
	require.NoError(t, json.Unmarshal(raw, &id))
	return id
}

// nthCall returns the n-th call (from 1) of op on path, waiting for it.
func nthCall(t *testing.T, b *fakebroker.Broker, op fakebroker.Op, path string, n int) fakebroker.Call {
	t.Helper()
	var found []fakebroker.Call
	require.Eventually(t, func() bool {
		found = found[:0]
		for _, c := range b.Calls(op) {
			if c.Path == path {
				found = append(found, c)
			}
		}
		return len(found) >= n
	}, 30*time.Second, 100*time.Millisecond, "call %d of %s %s never came (%d came)", n, op, path, len(found))
	return found[n-1]
}

// TestEveryBrokerCallSaysWhoAsks is one table of the calls each part of
// lockstep makes, compared request by request at the broker: a user's
// change carries the user (admission's provision, update, bind, adopt,
// unbind, deprovision); a call lockstep makes on its own carries
// lockstep's identity and says on whose behalf and why (drift
// correction, the follow-up of an update whose answer was lost, the
// re-apply that settles it, orphan mitigation, resync's reads). Every
// call that creates or changes an object carries the object's context;
// every call of an operation carries its request id. (The finalizer's
// call is checked in TestBypassedAdmissionIsStillDeprovisioned.)
func TestEveryBrokerCallSaysWhoAsks(t *testing.T) {
	b := freshBroker(t)
	ns := namespace(t)
	self := lockstepIdentity(t)
	db := "/v2/service_instances/" + ns + "-db"

	// What a user does.
	require.Equal(t, 0, kubectl(t, instanceWith(ns, "db", "small", ns+"-db", `{"storageGB": 1}`), "apply", "-f", "-").ExitCode)
	require.Equal(t, 0, kubectl(t, "", "patch", "serviceinstance", "db", "-n", ns, "--type=merge", "-p", `{"spec":{"parameters":{"storageGB":2}}}`).ExitCode)
	require.Equal(t, 0, kubectl(t, bindingYAML(ns, "creds", "db", ns+"-creds", ""), "apply", "-f", "-").ExitCode)
	require.Equal(t, 0, kubectl(t, "", "delete", "servicebinding", "creds", "-n", ns).ExitCode)
	b.PutInstance(fakebroker.Instance{ID: ns + "-adopted", ServiceID: fakebroker.ServiceDBID, PlanID: fakebroker.PlanSmallID})
	require.Equal(t, 0, kubectl(t, strings.Replace(instanceWith(ns, "adopted", "small", ns+"-adopted", ""), "metadata:\n",
		"metadata:\n  annotations: {lockstep.dev/adopt: \"true\"}\n", 1), "apply", "-f", "-").ExitCode)
	operationPhase(t, ns, "db", v1alpha1.VerbUpdate, v1alpha1.PhaseCommitted)

	// Drift: the broker holds other parameters; resync corrects them.
	b.PutInstance(fakebroker.Instance{ID: ns + "-db", ServiceID: fakebroker.ServiceDBID, PlanID: fakebroker.PlanSmallID,
		Parameters: map[string]any{"storageGB": 9.0}})
	correction := nthCall(t, b, fakebroker.OpUpdate, db, 2)
	require.Eventually(t, func() bool {
		var ops v1alpha1.BrokerOperationList
		require.NoError(t, cluster.client.List(context.Background(), &ops, client.InNamespace(ns)))
		for _, op := range ops.Items {
			if op.Spec.Verb == v1alpha1.VerbUpdate && op.Spec.Requester.Username == self && op.Status.Phase == v1alpha1.PhaseCommitted {
				return true
			}
		}
		return false
	}, 30*time.Second, 100*time.Millisecond, "the correction is committed")

	// An update whose answer never comes (the broker applies it and hangs
	// past the per-request timeout): followed, then settled by applying
	// the persisted spec again.
	b.ScriptInstance(fakebroker.OpUpdate, ns+"-db", fakebroker.Respond{Delay: time.Minute})
	r := kubectl(t, "", "patch", "serviceinstance", "db", "-n", ns, "--type=merge", "-p", `{"spec":{"parameters":{"storageGB":3}}}`)
	require.NotEqual(t, 0, r.ExitCode)
	assert.Contains(t, r.Stderr, "the outcome is unknown")
	lost := nthCall(t, b, fakebroker.OpUpdate, db, 3)
	reapply := nthCall(t, b, fakebroker.OpUpdate, db, 4)
	var followUp fakebroker.Call
	for _, c := range b.Calls(fakebroker.OpInstanceLastOperation) {
		if c.Path == db+"/last_operation" {
			followUp = c
		}
	}
	require.NotEmpty(t, followUp.Path, "lockstep asked the broker how the update ended")

	// A provision that gets no readable answer: orphan mitigation.
	b.ScriptInstance(fakebroker.OpProvision, ns+"-lost", fakebroker.Respond{Status: http.StatusInternalServerError})
	require.NotEqual(t, 0, kubectl(t, instanceWith(ns, "lost", "small", ns+"-lost", ""), "apply", "-f", "-").ExitCode)
	mitigation := nthCall(t, b, fakebroker.OpDeprovision, "/v2/service_instances/"+ns+"-lost", 1)

	require.Equal(t, 0, kubectl(t, "", "delete", "serviceinstance", "db", "-n", ns).ExitCode)

	var resyncRead fakebroker.Call
	for _, c := range b.Calls(fakebroker.OpGetInstance) {
		if c.Path == db && identityOf(t, c).Username == self {
			resyncRead = c
		}
	}
	require.NotEmpty(t, resyncRead.Path, "resync read the instance")

	where := map[string]any{"platform": "kubernetes", "namespace": ns, "instance_name": "db"}
	tests := []struct {
		caller     string
		call       fakebroker.Call
		user       string
		onBehalfOf string // "" none
		reason     string // "" none: a user's own call
		context    map[string]any
		previous   bool // previous_values sent
		requestID  bool
	}{
		{"admission: provision", nthCall(t, b, fakebroker.OpProvision, db, 1), "alice", "", "", where, false, true},
		{"admission: update", nthCall(t, b, fakebroker.OpUpdate, db, 1), "alice", "", "", where, true, true},
		{"admission: bind", nthCall(t, b, fakebroker.OpBind, db+"/service_bindings/"+ns+"-creds", 1), "alice", "", "", where, false, true},
		{"admission: unbind", nthCall(t, b, fakebroker.OpUnbind, db+"/service_bindings/"+ns+"-creds", 1), "alice", "", "", nil, false, true},
		{"admission: adopt", nthCall(t, b, fakebroker.OpGetInstance, "/v2/service_instances/"+ns+"-adopted", 1), "alice", "", "", nil, false, true},
		{"admission: deprovision", nthCall(t, b, fakebroker.OpDeprovision, db, 1), "alice", "", "", nil, false, true},
		{"drift correction", correction, self, "alice", brokercall.ReasonCorrection, where, true, true},
		{"admission: the update whose answer is lost", lost, "alice", "", "", where, true, true},
		{"follow-up of that update", followUp, self, "alice", brokercall.ReasonFollow, nil, false, true},
		{"re-apply that settles it", reapply, self, "alice", brokercall.ReasonCompensation, where, true, true},
		{"orphan mitigation of a provision", mitigation, self, "alice", brokercall.ReasonOrphanMitigation, nil, false, true},
		{"resync's read", resyncRead, self, "", brokercall.ReasonResync, nil, false, false},
	}
	for _, tt := range tests {
		t.Run(tt.caller, func(t *testing.T) {
			id := identityOf(t, tt.call)
			assert.Equal(t, tt.user, id.Username, "who asks")
			want := map[string][]string{}
			if tt.onBehalfOf != "" {
				want[brokercall.ExtraOnBehalfOf] = []string{tt.onBehalfOf}
			}
			if tt.reason != "" {
				want[brokercall.ExtraReason] = []string{tt.reason}
			}
			got := map[string][]string{}
			for k, v := range id.Extra {
				if strings.HasPrefix(k, "lockstep.dev/") {
					got[k] = v
				}
			}
			assert.Equal(t, want, got, "on whose behalf, and why")
			if tt.context == nil {
				assert.Nil(t, tt.call.JSON["context"])
			} else {
				ctxObj, _ := tt.call.JSON["context"].(map[string]any)
				require.NotNil(t, ctxObj, "the context is sent")
				assert.NotEmpty(t, ctxObj["clusterid"])
				delete(ctxObj, "clusterid")
				assert.Equal(t, tt.context, ctxObj, "the object's context")
			}
			if tt.previous {
				assert.NotNil(t, tt.call.JSON["previous_values"], "previous values")
			}
			assert.Equal(t, tt.requestID, tt.call.Header.Get(osbapi.HeaderRequestIdentity) != "", "the request id")
		})
	}
}

// TestAnUpdateThatGotNoAnswerIsUnknownUntilTheBrokerTells: the broker
// carried the update out and the connection dropped before any answer.
// kubectl is told the outcome is unknown (never that the instance keeps
// its parameters as if nothing happened), the record stays in progress,
// InSync is Unknown while the broker cannot be asked, and once it answers
// lockstep applies the persisted spec again: both sides equal.
func TestAnUpdateThatGotNoAnswerIsUnknownUntilTheBrokerTells(t *testing.T) {
	b := freshBroker(t)
	ns := namespace(t)
	require.Equal(t, 0, kubectl(t, instanceWith(ns, "db", "small", ns+"-db", `{"storageGB": 1}`), "apply", "-f", "-").ExitCode)
	operationPhase(t, ns, "db", v1alpha1.VerbProvision, v1alpha1.PhaseCommitted)
	b.ScriptInstance(fakebroker.OpUpdate, ns+"-db", fakebroker.Respond{CloseConnection: true, Apply: true})
	b.Always(fakebroker.OpInstanceLastOperation, fakebroker.Respond{Status: http.StatusServiceUnavailable, Description: "restarting"})

	r := kubectl(t, "", "patch", "serviceinstance", "db", "-n", ns, "--type=merge", "-p", `{"spec":{"parameters":{"storageGB":2}}}`)
	require.NotEqual(t, 0, r.ExitCode)
	assert.Contains(t, r.Stderr, `broker "acme" got the request to update the parameters of instance "db", but no answer came back`)
	assert.Contains(t, r.Stderr, "the outcome is unknown: the instance keeps its spec for now")
	assert.Contains(t, r.Stderr, "if the broker applied the update, lockstep applies the instance's current spec again")
	op := operationPhase(t, ns, "db", v1alpha1.VerbUpdate, v1alpha1.PhaseInProgress)
	assert.NotEqual(t, v1alpha1.PhaseFailed, op.Status.Phase)
	si := getInstance(t, ns, "db")
	c := inSyncBecomes(t, si, func() []metav1.Condition { return si.Status.Conditions }, metav1.ConditionUnknown)
	assert.Equal(t, "OutcomeUnknown", c.Reason)
	held, _ := b.Instance(ns + "-db")
	assert.Equal(t, 2.0, held.Parameters["storageGB"], "the broker did carry it out")

	b.Reset() // the broker answers again
	operationPhase(t, ns, "db", v1alpha1.VerbUpdate, v1alpha1.PhaseCompensated)
	requireSidesEqual(t, b, ns)
	inSyncBecomes(t, si, func() []metav1.Condition { return si.Status.Conditions }, metav1.ConditionTrue)
}

// TestADeprovisionThatGotNoAnswerIsNotSentTwice: the broker deprovisioned
// and the connection dropped before any answer. The delete is refused as
// unknown; lockstep asks the broker, learns the instance is gone (410),
// and finishes the delete without a second DELETE at the broker.
func TestADeprovisionThatGotNoAnswerIsNotSentTwice(t *testing.T) {
	b := freshBroker(t)
	ns := namespace(t)
	require.Equal(t, 0, kubectl(t, instanceWith(ns, "db", "small", ns+"-db", ""), "apply", "-f", "-").ExitCode)
	operationPhase(t, ns, "db", v1alpha1.VerbProvision, v1alpha1.PhaseCommitted)
	b.ScriptInstance(fakebroker.OpDeprovision, ns+"-db", fakebroker.Respond{CloseConnection: true, Apply: true})

	r := kubectl(t, "", "delete", "serviceinstance", "db", "-n", ns, "--wait=false")
	require.NotEqual(t, 0, r.ExitCode)
	assert.Contains(t, r.Stderr, "no answer came back")
	assert.Contains(t, r.Stderr, "the outcome is unknown")
	assert.Contains(t, r.Stderr, "if the broker deprovisioned it, lockstep deletes the instance")

	require.Eventually(t, func() bool { return !instanceExists(t, ns, "db") }, 30*time.Second, 100*time.Millisecond,
		"lockstep finishes the delete once the broker says the instance is gone")
	require.NoError(t, b.WaitIdle(context.Background()))
	assert.Equal(t, 1, b.Count(fakebroker.OpDeprovision), "one DELETE at the broker: the delete lockstep finished was not sent again")
	requireSidesEqual(t, b, ns)
}

// TestABindingUndoneIsRetriedUntilTheBrokerConfirms: a broker answers a
// bind asynchronously but does not let lockstep fetch bindings, so the
// credentials can never be read and the bind is undone. The undo is
// journaled (orphan mitigation) and retried, later each time, by the
// operations reconciler; the broker is cut off exactly then, twice.
func TestABindingUndoneIsRetriedUntilTheBrokerConfirms(t *testing.T) {
	b := freshBroker(t)
	ns := namespace(t)
	require.Equal(t, 0, kubectl(t, fmt.Sprintf(`apiVersion: lockstep.dev/v1alpha1
kind: ServiceInstance
metadata: {name: q, namespace: %s}
spec: {brokerName: acme, serviceName: queue, planName: shared, externalID: %s-q}
`, ns, ns), "apply", "-f", "-").ExitCode)
	b.ScriptInstance(fakebroker.OpBind, ns+"-q", fakebroker.Respond{Status: http.StatusAccepted, Body: `{"operation":"bind-1"}`, Apply: true})
	b.ScriptInstance(fakebroker.OpUnbind, ns+"-q", fakebroker.Respond{CloseConnection: true}, fakebroker.Respond{CloseConnection: true})

	r := kubectl(t, bindingYAML(ns, "creds", "q", ns+"-creds", ""), "apply", "-f", "-")
	require.NotEqual(t, 0, r.ExitCode)
	assert.Contains(t, r.Stderr, "bindings_retrievable is false")
	assert.Contains(t, r.Stderr, "lockstep undoes it at the broker (orphan mitigation")
	assert.False(t, bindingExists(t, ns, "creds"))

	op := operationPhase(t, ns, "creds", v1alpha1.VerbBind, v1alpha1.PhaseCompensated)
	assert.Contains(t, op.Status.Description, "unbound the orphaned binding")
	assert.Equal(t, 3, b.Count(fakebroker.OpUnbind), "two unbinds cut off, the third confirmed")
	_, held := b.Binding(ns+"-q", ns+"-creds")
	assert.False(t, held, "the broker holds no binding the cluster does not")
	_, ok := getSecret(t, ns, "creds")
	assert.False(t, ok)
}

// TestABrokerRestartedWithNewIDs: a broker restarted with new service and
// plan ids refuses requests with the old ones. The refusal reads the
// catalog again and says so; the retry uses the new ids; the broker's
// status and marketplace follow; and a person can ask for a refresh with
// kubectl annotate, as often as needed.
func TestABrokerRestartedWithNewIDs(t *testing.T) {
	const name = "restarted"
	b := marketBroker(t, name)
	ns := namespace(t)
	instance := func(n string) string {
		return fmt.Sprintf(`apiVersion: lockstep.dev/v1alpha1
kind: ServiceInstance
metadata: {name: %s, namespace: %s}
spec: {brokerName: %s, serviceName: db, planName: small}
`, n, ns, name)
	}
	require.Equal(t, 0, kubectl(t, instance("first"), "apply", "-f", "-").ExitCode)

	cat := fakebroker.DefaultCatalog()
	for i := range cat.Services {
		cat.Services[i].ID += "-v2"
		for j := range cat.Services[i].Plans {
			cat.Services[i].Plans[j].ID += "-v2"
		}
	}
	require.NoError(t, b.SetCatalog(cat))

	r := kubectl(t, instance("second"), "apply", "-f", "-")
	require.NotEqual(t, 0, r.ExitCode)
	assert.Contains(t, r.Stderr, `the broker's catalog no longer has service id "db-service-id"; lockstep read the catalog again`)
	assert.Contains(t, r.Stderr, "nothing was created: retry")
	retried(t, instance("second"), "apply", "-f", "-")
	sent, ok := b.LastCall(fakebroker.OpProvision)
	require.True(t, ok)
	assert.Equal(t, fakebroker.PlanSmallID+"-v2", sent.JSON["plan_id"], "the retry sends the new ids")

	require.Eventually(t, func() bool {
		r := kubectl(t, "", "get", "serviceplan", name+".db.small", "-o", "jsonpath={.spec.id}")
		return r.Stdout == fakebroker.PlanSmallID+"-v2"
	}, 20*time.Second, 200*time.Millisecond, "the marketplace follows the new ids")
	r = kubectl(t, "", "get", "serviceplans", "--field-selector", "spec.brokerName="+name, "-o", "jsonpath={.items[*].status.removedFromCatalog}")
	assert.NotContains(t, r.Stdout, "true", "no plan is marked removed: they kept their names")

	for range 2 {
		fetched := b.Count(fakebroker.OpCatalog)
		r = kubectl(t, "", "annotate", "servicebroker", name, v1alpha1.AnnotationRefresh+"=now")
		require.Equal(t, 0, r.ExitCode, r.Output())
		require.Eventually(t, func() bool {
			var sb v1alpha1.ServiceBroker
			require.NoError(t, cluster.client.Get(context.Background(), client.ObjectKey{Name: name}, &sb))
			_, asked := sb.Annotations[v1alpha1.AnnotationRefresh]
			return !asked && b.Count(fakebroker.OpCatalog) > fetched
		}, 20*time.Second, 100*time.Millisecond, "the catalog is read again and the annotation removed, so the command works again")
	}
}

// TestOneCatalogFetchPerRelist: loading a broker's catalog writes its
// status; that write does not make lockstep fetch the catalog again.
func TestOneCatalogFetchPerRelist(t *testing.T) {
	const name = "relist"
	b := marketBroker(t, name)
	eventuallyPlans(t, "spec.brokerName="+name, "relist.db.fixed\nrelist.db.large\nrelist.db.small\nrelist.queue.shared\nrelist.queue.standard")
	require.NoError(t, b.WaitIdle(context.Background()))
	assert.Equal(t, 1, b.Count(fakebroker.OpCatalog), "one fetch for one catalog load")
}
