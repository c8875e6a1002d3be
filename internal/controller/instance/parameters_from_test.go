package instance

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/lockstep-dev/lockstep/api/v1alpha1"
	"github.com/lockstep-dev/lockstep/internal/broker/fakebroker"
	"github.com/lockstep-dev/lockstep/internal/controller/resync"
	"github.com/lockstep-dev/lockstep/internal/journal"
	"github.com/lockstep-dev/lockstep/internal/parametersfrom"
)

// An instance whose parameters partly came from a Secret keeps only
// spec.parameters and a digest in status; resync compares the broker's
// parameters with the digest, never shows the Secret's values, and a
// correction reads the Secret again.
func TestInstanceResyncWithParametersFromSecrets(t *testing.T) {
	const spec, sent = `{"storageGB":10}`, `{"storageGB":10,"version":"16"}`
	digest, err := parametersfrom.Digest([]byte(sent))
	require.NoError(t, err)
	object := func() *v1alpha1.ServiceInstance {
		si := confirmed("small", fakebroker.PlanSmallID, spec, nil)
		si.Spec.ParametersFrom = []v1alpha1.ParametersFromSource{{SecretKeyRef: v1alpha1.SecretKeyReference{Name: "db-version", Key: "params"}}}
		si.Status.LastApplied.ParametersDigest = digest
		return si
	}
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "db-version", Namespace: "team"}, Data: map[string][]byte{"params": []byte(`{"version":"16"}`)}}
	tests := []struct {
		name       string
		held       map[string]any
		wantReason string // "" : in sync, nothing written
		wantMsg    string
		wantUpdate map[string]any
	}{
		{name: "the broker holds what was sent", held: map[string]any{"storageGB": 10, "version": "16"}},
		{name: "a parameter from the Secret changed at the broker", held: map[string]any{"storageGB": 10, "version": "17"},
			wantReason: resync.ReasonParametersDrift, wantMsg: "compared by digest, as some came from Secrets",
			wantUpdate: map[string]any{"storageGB": float64(10), "version": "16"}},
		{name: "a parameter of spec.parameters changed at the broker", held: map[string]any{"storageGB": 30, "version": "16"},
			wantReason: resync.ReasonParametersDrift, wantMsg: "storageGB (broker: 30, here: 10)",
			wantUpdate: map[string]any{"storageGB": float64(10), "version": "16"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, nil, object(), secret)
			h.Broker.PutInstance(fakebroker.Instance{ID: "ext-1", ServiceID: fakebroker.ServiceDBID, PlanID: fakebroker.PlanSmallID, Parameters: tt.held, DashboardURL: dashboard})
			before := h.instance(t).ResourceVersion
			h.resync(t)
			si := h.instance(t)
			inSync := meta.FindStatusCondition(si.Status.Conditions, v1alpha1.ConditionInSync)
			require.NotNil(t, inSync)
			if tt.wantReason == "" {
				assert.Equal(t, before, si.ResourceVersion, "nothing written")
				assert.Zero(t, h.Broker.Count(fakebroker.OpUpdate))
				return
			}
			assert.Equal(t, tt.wantReason, inSync.Reason)
			assert.Contains(t, inSync.Message, tt.wantMsg)
			assert.NotContains(t, inSync.Message, `"16"`, "the Secret's value is never shown")
			assert.NotContains(t, inSync.Message, `"17"`, "nor the broker's value of a parameter from a Secret")
			call, ok := h.Broker.LastCall(fakebroker.OpUpdate)
			require.True(t, ok, "the correction re-applies the spec with the Secret's values")
			assert.Equal(t, tt.wantUpdate, call.JSON["parameters"])
			var ops v1alpha1.BrokerOperationList
			require.NoError(t, h.Client.List(context.Background(), &ops))
			require.Len(t, ops.Items, 1)
			assert.Equal(t, digest, ops.Items[0].Spec.ParametersDigest, "the correction journals the digest of what it sent")
		})
	}
}

// A broker that replaces an instance's parameters with an update's no
// longer reports the create-only ones (an update never carries them):
// compared by digest too, that is no drift, and nothing is re-applied.
func TestInstanceResyncWithParametersFromSecretsAndACreateOnlyParameterTheBrokerNoLongerReports(t *testing.T) {
	digest, err := parametersfrom.Digest([]byte(`{"region":"eu","storageGB":10,"version":"16"}`))
	require.NoError(t, err)
	si := confirmed("small", fakebroker.PlanSmallID, `{"region":"eu","storageGB":10}`, nil)
	si.Spec.ParametersFrom = []v1alpha1.ParametersFromSource{{SecretKeyRef: v1alpha1.SecretKeyReference{Name: "db-version", Key: "params"}}}
	si.Status.LastApplied.ParametersDigest = digest
	h := newHarness(t, nil, si)
	h.Broker.PutInstance(fakebroker.Instance{ID: "ext-1", ServiceID: fakebroker.ServiceDBID, PlanID: fakebroker.PlanSmallID,
		Parameters: map[string]any{"storageGB": 10, "version": "16"}, DashboardURL: dashboard})
	before := h.instance(t).ResourceVersion
	h.resync(t)
	got := h.instance(t)
	assert.Equal(t, before, got.ResourceVersion, "nothing written")
	assert.True(t, meta.IsStatusConditionTrue(got.Status.Conditions, v1alpha1.ConditionInSync))
	assert.Zero(t, h.Broker.Count(fakebroker.OpUpdate), "no correction")
}

// Without a digest of what was sent (status behind the operation that
// sent the Secrets' values), resync compares the plan only and shows
// nothing of the broker's parameters.
func TestInstanceResyncWithParametersFromSecretsButNoDigest(t *testing.T) {
	si := confirmed("small", fakebroker.PlanSmallID, `{"storageGB":10}`, nil)
	si.Spec.ParametersFrom = []v1alpha1.ParametersFromSource{{SecretKeyRef: v1alpha1.SecretKeyReference{Name: "db-version", Key: "params"}}}
	h := newHarness(t, nil, si)
	h.Broker.PutInstance(fakebroker.Instance{ID: "ext-1", ServiceID: fakebroker.ServiceDBID, PlanID: fakebroker.PlanSmallID,
		Parameters: map[string]any{"storageGB": 10, "version": "s3cr3t"}, DashboardURL: dashboard})
	h.resync(t)
	got := h.instance(t)
	inSync := meta.FindStatusCondition(got.Status.Conditions, v1alpha1.ConditionInSync)
	require.NotNil(t, inSync)
	assert.Equal(t, metav1.ConditionTrue, inSync.Status)
	assert.NotContains(t, inSync.Message, "s3cr3t")
	assert.Zero(t, h.Broker.Count(fakebroker.OpUpdate), "no correction")
}

// What status keeps of a committed operation: spec.parameters and the
// digest the record holds, never the Secrets' values.
func TestLastAppliedKeepsTheDigestOnly(t *testing.T) {
	si := confirmed("small", fakebroker.PlanSmallID, `{"storageGB":10}`, nil)
	si.Status = v1alpha1.ServiceInstanceStatus{}
	op := &v1alpha1.BrokerOperation{Spec: v1alpha1.BrokerOperationSpec{Verb: v1alpha1.VerbProvision, PlanID: fakebroker.PlanSmallID,
		SpecHash: journal.SpecHash(si.Spec), ParametersDigest: "abc"}}
	var status v1alpha1.ServiceInstanceStatus
	committed(si, &status, op)
	require.NotNil(t, status.LastApplied)
	assert.Equal(t, `{"storageGB":10}`, string(status.LastApplied.Parameters.Raw))
	assert.Equal(t, "abc", status.LastApplied.ParametersDigest)
}

// Digests made before a key rotation, or before digests were keyed (a
// plain SHA-256), still tell whether the broker holds what was sent: an
// upgrade or a rotation makes nothing look drifted, and resync writes
// such digests again under the current key once the broker is found to
// hold what they say.
func TestInstanceResyncRekeysDigests(t *testing.T) {
	const sent, createOnly = `{"region":"eu","storageGB":10,"version":"16"}`, `{"region":"eu"}`
	key := func(id string) []byte { return []byte(strings.Repeat(id, 32)) }
	use := func(current string, ids ...string) {
		byID := map[string][]byte{current: key(current)}
		for _, id := range ids {
			byID[id] = key(id)
		}
		k, err := parametersfrom.NewKeys(current, byID)
		require.NoError(t, err)
		prev := parametersfrom.UseKeys(k)
		t.Cleanup(func() { parametersfrom.UseKeys(prev) })
	}
	digests := func(current string) (string, string) {
		use(current)
		p, err := parametersfrom.Digest([]byte(sent))
		require.NoError(t, err)
		c, err := parametersfrom.Digest([]byte(createOnly))
		require.NoError(t, err)
		return p, c
	}
	plain := func(s string) string {
		sum := sha256.Sum256([]byte(s))
		return hex.EncodeToString(sum[:])
	}
	underOld, createOnlyUnderOld := digests("o")
	underGone, createOnlyUnderGone := digests("g")
	underNew, createOnlyUnderNew := digests("n")
	use("n", "o") // rotated from "o" to "n"; "g" removed

	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "db-version", Namespace: "team"}, Data: map[string][]byte{"params": []byte(`{"version":"16"}`)}}
	tests := []struct {
		name                   string
		digest, createOnly     string
		heldVersion            string
		wantDigest, wantCreate string // "" : as they were, nothing written
		wantDrift              bool
	}{
		{name: "current key", digest: underNew, createOnly: createOnlyUnderNew, heldVersion: "16"},
		{name: "older key, the broker holds what was sent", digest: underOld, createOnly: createOnlyUnderOld, heldVersion: "16",
			wantDigest: underNew, wantCreate: createOnlyUnderNew},
		{name: "before digests were keyed, the broker holds what was sent", digest: plain(sent), createOnly: plain(createOnly), heldVersion: "16",
			wantDigest: underNew, wantCreate: createOnlyUnderNew},
		{name: "before digests were keyed, a parameter from the Secret changed at the broker", digest: plain(sent), createOnly: plain(createOnly),
			heldVersion: "17", wantDrift: true},
		{name: "older key, a parameter from the Secret changed at the broker", digest: underOld, createOnly: createOnlyUnderOld,
			heldVersion: "17", wantDrift: true},
		{name: "key removed: spec.parameters compared, the digest left as it is", digest: underGone, createOnly: createOnlyUnderGone, heldVersion: "16"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			si := confirmed("small", fakebroker.PlanSmallID, `{"region":"eu","storageGB":10}`, nil)
			si.Spec.ParametersFrom = []v1alpha1.ParametersFromSource{{SecretKeyRef: v1alpha1.SecretKeyReference{Name: "db-version", Key: "params"}}}
			si.Status.LastApplied.ParametersDigest, si.Status.LastApplied.CreateOnlyDigest = tt.digest, tt.createOnly
			h := newHarness(t, nil, si, secret)
			h.Broker.PutInstance(fakebroker.Instance{ID: "ext-1", ServiceID: fakebroker.ServiceDBID, PlanID: fakebroker.PlanSmallID,
				Parameters: map[string]any{"region": "eu", "storageGB": 10, "version": tt.heldVersion}, DashboardURL: dashboard})
			before := h.instance(t).ResourceVersion
			h.resync(t)
			got := h.instance(t)
			inSync := meta.FindStatusCondition(got.Status.Conditions, v1alpha1.ConditionInSync)
			require.NotNil(t, inSync)
			if tt.wantDrift {
				assert.Equal(t, resync.ReasonParametersDrift, inSync.Reason, "a digest of before still finds drift")
				assert.NotContains(t, inSync.Message, "17")
				return
			}
			assert.Equal(t, metav1.ConditionTrue, inSync.Status, inSync.Message)
			assert.Zero(t, h.Broker.Count(fakebroker.OpUpdate), "no correction")
			if tt.wantDigest == "" {
				assert.Equal(t, before, got.ResourceVersion, "nothing written")
				return
			}
			assert.Equal(t, tt.wantDigest, got.Status.LastApplied.ParametersDigest, "written again under the current key")
			assert.Equal(t, tt.wantCreate, got.Status.LastApplied.CreateOnlyDigest, "and the create-only parameters' too")
			before = got.ResourceVersion
			h.resync(t)
			assert.Equal(t, before, h.instance(t).ResourceVersion, "and the next resync writes nothing")
		})
	}
}
