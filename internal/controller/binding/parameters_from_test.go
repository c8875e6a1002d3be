package binding

import (
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/lockstep-dev/lockstep/api/v1alpha1"
	"github.com/lockstep-dev/lockstep/internal/broker/fakebroker"
	"github.com/lockstep-dev/lockstep/internal/controller/resync"
	"github.com/lockstep-dev/lockstep/internal/parametersfrom"
)

// A binding whose parameters came from a Secret is compared with the
// digest of what was sent; the broker's values are never shown.
func TestBindingResyncWithParametersFromSecrets(t *testing.T) {
	digest, err := parametersfrom.Digest([]byte(`{"role":"s3cr3t-writer"}`))
	require.NoError(t, err)
	sum := sha256.Sum256([]byte(`{"role":"s3cr3t-writer"}`))
	plain := hex.EncodeToString(sum[:]) // a digest from before digests were keyed
	tests := []struct {
		name       string
		digest     string
		held       map[string]any
		wantInSync metav1.ConditionStatus
		wantReason string
		wantMsg    string
		wantDigest string // "" : as it was
	}{
		{name: "the broker holds what was sent", digest: digest, held: map[string]any{"role": "s3cr3t-writer"},
			wantInSync: metav1.ConditionTrue, wantReason: "Committed"},
		{name: "the broker holds what was sent, digest from before digests were keyed", digest: plain, held: map[string]any{"role": "s3cr3t-writer"},
			wantInSync: metav1.ConditionTrue, wantReason: "Committed", wantDigest: digest},
		{name: "a parameter from the Secret differs, digest from before digests were keyed", digest: plain, held: map[string]any{"role": "s3cr3t-admin"},
			wantInSync: metav1.ConditionFalse, wantReason: resync.ReasonParametersDrift, wantMsg: "compared by digest, as some came from Secrets"},
		{name: "a parameter from the Secret differs", digest: digest, held: map[string]any{"role": "s3cr3t-admin"},
			wantInSync: metav1.ConditionFalse, wantReason: resync.ReasonParametersDrift, wantMsg: "compared by digest, as some came from Secrets"},
		{name: "no digest yet: nothing to compare the parameters with", held: map[string]any{"role": "s3cr3t-admin"},
			wantInSync: metav1.ConditionTrue, wantReason: "Committed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := boundBinding("")
			b.Spec.ParametersFrom = []v1alpha1.ParametersFromSource{{SecretKeyRef: v1alpha1.SecretKeyReference{Name: "role", Key: "params"}}}
			b.Status.ParametersDigest = tt.digest
			h := newHarness(t, instance(), b)
			h.Broker.PutInstance(fakebroker.Instance{ID: "ext-1", ServiceID: fakebroker.ServiceDBID, PlanID: fakebroker.PlanSmallID})
			h.Broker.PutBinding(fakebroker.Binding{InstanceID: "ext-1", ID: "bind-1", Parameters: tt.held, Credentials: map[string]any{"password": "p"}})
			got := h.resync(t)
			c := meta.FindStatusCondition(got.Status.Conditions, v1alpha1.ConditionInSync)
			require.NotNil(t, c)
			assert.Equal(t, tt.wantInSync, c.Status)
			assert.Equal(t, tt.wantReason, c.Reason)
			assert.Contains(t, c.Message, tt.wantMsg)
			assert.NotContains(t, c.Message, "s3cr3t")
			want := tt.wantDigest
			if want == "" {
				want = tt.digest
			}
			assert.Equal(t, want, got.Status.ParametersDigest, "written again under the current key only where it verified")
		})
	}
}

// A committed bind hands the digest of what it sent to the status.
func TestBindingStatusKeepsTheDigest(t *testing.T) {
	var status v1alpha1.ServiceBindingStatus
	op := v1alpha1.BrokerOperation{Spec: v1alpha1.BrokerOperationSpec{Verb: v1alpha1.VerbBind, BrokerName: "acme", ParametersDigest: "abc"},
		Status: v1alpha1.BrokerOperationStatus{Phase: v1alpha1.PhaseCommitted, HTTPStatus: http.StatusCreated}}
	Kind{}.FromJournal(nil, &status, []v1alpha1.BrokerOperation{op})
	assert.Equal(t, "abc", status.ParametersDigest)
}
