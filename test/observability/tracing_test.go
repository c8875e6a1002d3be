package observability

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/lockstep-dev/lockstep/internal/admission"
	"github.com/lockstep-dev/lockstep/internal/broker/fakebroker"
	"github.com/lockstep-dev/lockstep/internal/broker/osbclient"
	"github.com/lockstep-dev/lockstep/internal/tracing"
	"github.com/lockstep-dev/lockstep/test/framework"
)

// What must never appear in a span: the values of parameters (given in
// the spec, read from a Secret, quoted back by the broker or by a field
// error), the broker's credentials and a binding's credentials.
const (
	paramValue     = "param-region-7f3a9c"
	secretValue    = "secret-region-b8e2d1"
	changedValue   = "changed-region-0c4f7e"
	brokerUser     = "osb-user-e3f0aa"
	brokerPassword = "osb-pass-4a7c19"
	credMarker     = "cred-marker-5d1e22"
)

// spans is what the receiver holds, by trace.
type spans []framework.Span

func (s spans) trace(id string) spans {
	var out spans
	for _, sp := range s {
		if sp.TraceID == id {
			out = append(out, sp)
		}
	}
	return out
}

func (s spans) byID(id string) (framework.Span, bool) {
	for _, sp := range s {
		if sp.SpanID == id {
			return sp, true
		}
	}
	return framework.Span{}, false
}

func (s spans) named(name string) spans {
	var out spans
	for _, sp := range s {
		if sp.Name == name {
			out = append(out, sp)
		}
	}
	return out
}

func (s spans) childrenOf(parent framework.Span) spans {
	var out spans
	for _, sp := range s {
		if sp.ParentSpanID == parent.SpanID && sp.TraceID == parent.TraceID {
			out = append(out, sp)
		}
	}
	return out
}

// admissionOf is the lockstep.admission span of a request to the
// validating webhook at path about object name, operation op.
func (s spans) admissionOf(path, name, op string) (framework.Span, bool) {
	for _, sp := range s.named(tracing.SpanAdmission) {
		a := sp.Attributes
		if a[string(tracing.AttrWebhook)] == path && a[string(tracing.AttrName)] == name && a[string(tracing.AttrOperation)] == op {
			return sp, true
		}
	}
	return framework.Span{}, false
}

// waitForSpans waits until ok holds of the spans received.
func waitForSpans(t *testing.T, what string, ok func(spans) bool) spans {
	t.Helper()
	var got spans
	eventually(t, 60*time.Second, what, func() bool {
		got = env.receiver.Spans()
		return ok(got)
	})
	return got
}

// TestOneTraceFromTheAPIServerToTheBroker: with kube-apiserver and
// lockstep tracing to one collector, a provision through kubectl is one
// trace: the API server's request, its call of lockstep's validating
// webhook (lockstep.admission, joined through the traceparent the API
// server sends), lockstep's checks, the lock, the broker call with the
// broker's request and its polls, and the record; a provision still in
// progress when the admission budget runs out is followed by the
// operations reconciler in the same trace; every request to the broker
// carries the traceparent; every span lockstep makes has a name
// docs/tracing.md lists; and no span, lockstep's or the API server's,
// holds a parameter value or a credential.
func TestOneTraceFromTheAPIServerToTheBroker(t *testing.T) {
	ns := namespace(t)
	auth := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "traced-auth"},
		StringData: map[string]string{"username": brokerUser, "password": brokerPassword}}
	b := broker(t, "traced", auth, fakebroker.WithTLS(), fakebroker.WithBasicAuth(brokerUser, brokerPassword), fakebroker.WithCredentialMarker(credMarker))

	// A provision the broker accepts (202) and finishes within the
	// admission: the polls are the admission's.
	b.Script(fakebroker.OpProvision, fakebroker.Respond{Async: &fakebroker.Async{InProgressPolls: 2}})
	r := kubectl(t, instanceYAML(ns, "db1", "traced", "small", `parameters: {"region": "`+paramValue+`"}`), "create", "-f", "-")
	require.Equal(t, 0, r.ExitCode, r.Output())
	ready(t, ns, "db1")

	// One still in progress when the admission budget runs out: allowed
	// with a warning, then followed by the operations reconciler. Its
	// parameters come from a Secret.
	r = kubectl(t, "", "create", "secret", "generic", "db2-params", "-n", ns, `--from-literal=parameters={"region": "`+secretValue+`"}`)
	require.Equal(t, 0, r.ExitCode, r.Output())
	b.Script(fakebroker.OpProvision, fakebroker.Respond{Async: &fakebroker.Async{InProgressPolls: 60}})
	r = kubectl(t, instanceYAML(ns, "db2", "traced", "small", "parametersFrom: [{secretKeyRef: {name: db2-params, key: parameters}}]"), "create", "-f", "-")
	require.Equal(t, 0, r.ExitCode, r.Output())
	assert.Contains(t, r.Output(), "is still working to provision")
	ready(t, ns, "db2")

	// A bind (credentials into a Secret), a refusal of the broker that
	// quotes a parameter value, and a field error that quotes one.
	r = kubectl(t, fmt.Sprintf(`apiVersion: lockstep.dev/v1alpha1
kind: ServiceBinding
metadata: {name: creds, namespace: %s}
spec: {instanceName: db1, externalID: %s-creds}
`, ns, ns), "create", "-f", "-")
	require.Equal(t, 0, r.ExitCode, r.Output())
	eventually(t, 30*time.Second, "the binding's Secret", func() bool {
		return env.client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "creds"}, &corev1.Secret{}) == nil
	})
	b.Script(fakebroker.OpUpdate, fakebroker.Respond{Status: 422, Error: "TooLarge", Description: "storageGB 999 is too much for region " + paramValue})
	r = kubectl(t, "", "patch", "serviceinstance", "db1", "-n", ns, "--type=merge", "-p", `{"spec":{"parameters":{"region":"`+paramValue+`","storageGB":999}}}`)
	require.NotEqual(t, 0, r.ExitCode)
	require.Contains(t, r.Output(), paramValue, "the broker's words reach the requester")
	r = kubectl(t, "", "patch", "serviceinstance", "db1", "-n", ns, "--type=merge", "-p", `{"spec":{"parameters":{"region":"`+changedValue+`"}}}`)
	require.NotEqual(t, 0, r.ExitCode)
	require.Contains(t, r.Output(), changedValue, "the field error quotes the value")

	path := admission.ValidateInstancePath
	got := waitForSpans(t, "the spans of both provisions, their follow-ups and the refusals", func(s spans) bool {
		a1, ok1 := s.admissionOf(path, "db1", "CREATE")
		a2, ok2 := s.admissionOf(path, "db2", "CREATE")
		_, ok3 := s.admissionOf(path, "db1", "UPDATE")
		return ok1 && ok2 && ok3 &&
			len(s.trace(a1.TraceID).named(tracing.SpanRecord)) > 0 &&
			len(s.trace(a1.TraceID).named("osb.instance_last_operation")) >= 3 &&
			len(s.trace(a2.TraceID).named(tracing.SpanFollow)) > 0 && root(s, a1).SpanID != "" && root(s, a2).SpanID != ""
	})

	t.Run("a provision polled within the admission: one trace from the API server to the broker", func(t *testing.T) {
		admitted, _ := got.admissionOf(path, "db1", "CREATE")
		tr := got.trace(admitted.TraceID)
		t.Logf("the trace:\n%s", tree(tr, root(got, admitted), ""))
		// The API server's request is the root; lockstep's webhook is
		// its call's child.
		top := root(got, admitted)
		assert.Equal(t, "apiserver", top.Service, "the trace starts at kube-apiserver: %s", top.Name)
		caller, ok := tr.byID(admitted.ParentSpanID)
		require.True(t, ok, "lockstep's admission span has its parent in the trace")
		assert.Equal(t, "apiserver", caller.Service, "called by kube-apiserver (%s)", caller.Name)
		assert.Equal(t, "SPAN_KIND_SERVER", admitted.Kind)
		assert.Equal(t, "ServiceInstance", admitted.Attributes[string(tracing.AttrKind)])
		assert.Equal(t, ns, admitted.Attributes[string(tracing.AttrNamespace)])
		assert.Equal(t, "allowed", admitted.Attributes[string(tracing.AttrResult)])
		assert.Equal(t, "Broker", admitted.Attributes[string(tracing.AttrReason)])
		// The mutating webhook's call is in the same trace.
		_, mutated := got.admissionOf(admission.MutateInstancePath, "db1", "CREATE")
		assert.True(t, mutated || len(tr.named(tracing.SpanAdmission)) >= 2, "the defaulter's call is in the trace")

		under := names(tr.childrenOf(admitted))
		for _, want := range []string{tracing.SpanChecks, tracing.SpanLock, tracing.SpanBroker, tracing.SpanRecord} {
			assert.Contains(t, under, want, "under lockstep.admission")
		}
		call := tr.named(tracing.SpanBroker)
		require.Len(t, call, 1)
		assert.Equal(t, "provision", call[0].Attributes[string(tracing.AttrVerb)])
		assert.Equal(t, "done", call[0].Attributes[string(tracing.AttrVerdict)])
		assert.ElementsMatch(t, []string{"osb.provision", tracing.SpanPoll}, names(tr.childrenOf(call[0])))
		provision := tr.named("osb.provision")[0]
		assert.Equal(t, "SPAN_KIND_CLIENT", provision.Kind)
		assert.Equal(t, "202", provision.Attributes[string(tracing.AttrStatusCode)])
		poll := tr.named(tracing.SpanPoll)[0]
		assert.Equal(t, []string{"osb.instance_last_operation", "osb.instance_last_operation", "osb.instance_last_operation"}, names(tr.childrenOf(poll)))
		assert.Equal(t, "3", poll.Attributes[string(tracing.AttrPolls)])

		// The broker got the trace with the provision.
		calls := b.Calls(fakebroker.OpProvision)
		require.NotEmpty(t, calls)
		assert.Equal(t, "00-"+admitted.TraceID+"-"+provision.SpanID+"-01", calls[0].Header.Get("traceparent"))
	})

	t.Run("a provision still in progress after the admission: the operations reconciler's follow-ups in its trace", func(t *testing.T) {
		admitted, _ := got.admissionOf(path, "db2", "CREATE")
		tr := got.trace(admitted.TraceID)
		assert.Equal(t, "apiserver", root(got, admitted).Service)
		call := tr.named(tracing.SpanBroker)
		require.Len(t, call, 1)
		assert.Equal(t, "running", call[0].Attributes[string(tracing.AttrVerdict)])
		follows := tr.named(tracing.SpanFollow)
		require.NotEmpty(t, follows)
		polled := 0
		for _, f := range follows {
			assert.Equal(t, "provision", f.Attributes[string(tracing.AttrVerb)])
			assert.Equal(t, admitted.SpanID, f.ParentSpanID, "a follow-up is a child of the admission that started its operation")
			for _, c := range tr.childrenOf(f) {
				if c.Name == "osb.instance_last_operation" {
					polled++
				}
			}
		}
		assert.Positive(t, polled, "the follow-ups ask the broker, in the trace")
	})

	t.Run("every request to the broker carries a traceparent", func(t *testing.T) {
		calls := b.Calls()
		require.NotEmpty(t, calls)
		tp := regexp.MustCompile(`^00-[0-9a-f]{32}-[0-9a-f]{16}-0[01]$`)
		for _, c := range calls {
			assert.Regexp(t, tp, c.Header.Get("traceparent"), "%s %s", c.Op, c.Path)
		}
	})

	t.Run("every span lockstep makes is one docs/tracing.md lists", func(t *testing.T) {
		documented := documentedSpans(t)
		seen := map[string]bool{}
		for _, s := range got {
			if s.Service != tracing.ServiceName {
				continue
			}
			seen[s.Name] = true
			assert.True(t, documented[s.Name], "span %s is not in docs/tracing.md", s.Name)
		}
		for name := range documented {
			if strings.HasPrefix(name, "osb.") && name != tracing.SpanPoll {
				continue // one per OSB request: those this test makes are checked above
			}
			assert.True(t, seen[name], "docs/tracing.md lists %s, which the test did not see", name)
		}
	})

	t.Run("no span holds a parameter value or a credential", func(t *testing.T) {
		secrets := []string{paramValue, secretValue, changedValue, brokerUser, brokerPassword, credMarker}
		for _, s := range got {
			texts := []string{s.Name, s.StatusMessage}
			for k, v := range s.Attributes {
				texts = append(texts, k+"="+v)
			}
			for k, v := range s.Resource {
				texts = append(texts, k+"="+v)
			}
			for _, e := range s.Events {
				texts = append(texts, e.Name)
				for k, v := range e.Attributes {
					texts = append(texts, k+"="+v)
				}
			}
			for _, text := range texts {
				for _, secret := range secrets {
					assert.NotContains(t, text, secret, "%s's span %s", s.Service, s.Name)
				}
			}
		}
	})
}

// root walks up from s to the root of its trace; the zero Span when a
// parent has not arrived (yet).
func root(all spans, s framework.Span) framework.Span {
	tr := all.trace(s.TraceID)
	for range 100 {
		if s.ParentSpanID == "" {
			return s
		}
		parent, ok := tr.byID(s.ParentSpanID)
		if !ok {
			return framework.Span{}
		}
		s = parent
	}
	return framework.Span{}
}

// tree draws the spans of a trace below top, one a line.
func tree(tr spans, top framework.Span, indent string) string {
	out := fmt.Sprintf("%s%s (%s, %s)\n", indent, top.Name, top.Service, top.End.Sub(top.Start).Round(time.Microsecond))
	children := tr.childrenOf(top)
	slices.SortFunc(children, func(a, b framework.Span) int { return a.Start.Compare(b.Start) })
	for _, c := range children {
		out += tree(tr, c, indent+"  ")
	}
	return out
}

func names(s spans) []string {
	var out []string
	for _, sp := range s {
		out = append(out, sp.Name)
	}
	slices.Sort(out)
	return out
}

// documentedSpans are the span names of the table of docs/tracing.md:
// lockstep's own, and osb.<request> for every OSB request.
func documentedSpans(t *testing.T) map[string]bool {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(env.cp.Root, "docs", "tracing.md"))
	require.NoError(t, err)
	out := map[string]bool{}
	for _, m := range regexp.MustCompile("(?m)^\\| `((?:lockstep|osb)\\.[a-z_.<>]+)` \\|").FindAllStringSubmatch(string(raw), -1) {
		if m[1] == "osb.<request>" {
			for _, op := range osbclient.Ops {
				out[tracing.OSB(string(op))] = true
			}
			continue
		}
		out[m[1]] = true
	}
	require.Contains(t, out, tracing.SpanAdmission, "docs/tracing.md has its table of spans")
	return out
}
