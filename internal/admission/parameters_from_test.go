package admission

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionv1 "k8s.io/api/admission/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/lockstep-dev/lockstep/api/v1alpha1"
	"github.com/lockstep-dev/lockstep/internal/broker/fakebroker"
	"github.com/lockstep-dev/lockstep/internal/parametersfrom"
)

// secretMark is in every value of the test Secrets: it must never appear
// in a refusal, a warning or an operation record.
const secretMark = "s3cr3t"

func paramsSecret(name string, data map[string]string) *corev1.Secret {
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "team"}, Data: map[string][]byte{}}
	for k, v := range data {
		s.Data[k] = []byte(v)
	}
	return s
}

func from(refs ...string) func(*v1alpha1.ServiceInstance) {
	return func(si *v1alpha1.ServiceInstance) { si.Spec.ParametersFrom = sources(refs...) }
}

// sources reads "secret/key" references.
func sources(refs ...string) []v1alpha1.ParametersFromSource {
	var out []v1alpha1.ParametersFromSource
	for _, r := range refs {
		name, key, _ := strings.Cut(r, "/")
		out = append(out, v1alpha1.ParametersFromSource{SecretKeyRef: v1alpha1.SecretKeyReference{Name: name, Key: key}})
	}
	return out
}

func TestInstanceParametersFrom(t *testing.T) {
	existing := fakebroker.Instance{ID: "ext-1", ServiceID: fakebroker.ServiceDBID, PlanID: fakebroker.PlanSmallID}
	admin := paramsSecret("db-admin", map[string]string{"params": `{"region":"s3cr3t-eu"}`})
	tests := []struct {
		name       string
		op         admissionv1.Operation
		old, new   Instance
		dryRun     bool
		secrets    []runtime.Object
		wantCode   int32 // 0: allowed
		wantMsg    []string
		wantCalls  map[fakebroker.Op]int
		wantParams map[string]any // parameters of the broker call, when one is made
	}{
		{
			name: "create merges the Secret's object into the parameters", op: admissionv1.Create,
			new: instance("small", `{"storageGB":1}`, from("db-admin/params")), secrets: []runtime.Object{admin},
			wantCalls:  map[fakebroker.Op]int{fakebroker.OpProvision: 1},
			wantParams: map[string]any{"storageGB": float64(1), "region": "s3cr3t-eu"},
		},
		{
			name: "two Secrets and no spec.parameters", op: admissionv1.Create,
			new:        instance("small", "", from("db-admin/params", "db-size/params")),
			secrets:    []runtime.Object{admin, paramsSecret("db-size", map[string]string{"params": `{"storageGB":7}`})},
			wantCalls:  map[fakebroker.Op]int{fakebroker.OpProvision: 1},
			wantParams: map[string]any{"storageGB": float64(7), "region": "s3cr3t-eu"},
		},
		{
			name: "missing Secret", op: admissionv1.Create, new: instance("small", "", from("nope/params")),
			wantCode: 422, wantMsg: []string{`spec.parametersFrom[0].secretKeyRef.name: Invalid value: "nope": no Secret "nope" in namespace "team": create it with key "params"`},
			wantCalls: map[fakebroker.Op]int{},
		},
		{
			name: "missing key", op: admissionv1.Create, new: instance("small", "", from("db-admin/other")), secrets: []runtime.Object{admin},
			wantCode: 422, wantMsg: []string{`spec.parametersFrom[0].secretKeyRef.key: Invalid value: "other": Secret "db-admin" has no key "other" (its keys: params)`},
			wantCalls: map[fakebroker.Op]int{},
		},
		{
			name: "value that is not JSON", op: admissionv1.Create, new: instance("small", "", from("bad/params")),
			secrets:  []runtime.Object{paramsSecret("bad", map[string]string{"params": `region=s3cr3t`})},
			wantCode: 422, wantMsg: []string{`the value of Secret "bad" key "params" is not valid JSON, not a JSON object: write the parameters as a JSON object`},
			wantCalls: map[fakebroker.Op]int{},
		},
		{
			name: "a value larger than the parameters may be is refused unread", op: admissionv1.Create, new: instance("small", "", from("big/params")),
			secrets:  []runtime.Object{paramsSecret("big", map[string]string{"params": `{"blob":"s3cr3t` + strings.Repeat("x", DefaultMaxParametersBytes) + `"}`})},
			wantCode: 422, wantMsg: []string{`spec.parametersFrom[0].secretKeyRef.key: Invalid value: "params": the value of Secret "big" key "params" holds 65553 bytes; lockstep sends at most 65536 bytes of parameters to a broker (LOCKSTEP_MAX_PARAMETERS_BYTES`},
			wantCalls: map[fakebroker.Op]int{},
		},
		{
			name: "more Secret keys than the bound are refused before any is read", op: admissionv1.Create,
			new:      instance("small", "", from(strings.Split(strings.Repeat("db-admin/params,", parametersfrom.MaxSources+1), ",")[:parametersfrom.MaxSources+1]...)),
			secrets:  []runtime.Object{admin},
			wantCode: 422, wantMsg: []string{"spec.parametersFrom: Too many: 17: must have at most 16 items"},
			wantCalls: map[fakebroker.Op]int{},
		},
		{
			name: "value that is a JSON array", op: admissionv1.Create, new: instance("small", "", from("bad/params")),
			secrets:  []runtime.Object{paramsSecret("bad", map[string]string{"params": `["s3cr3t"]`})},
			wantCode: 422, wantMsg: []string{`the value of Secret "bad" key "params" is a JSON array, not a JSON object`},
			wantCalls: map[fakebroker.Op]int{},
		},
		{
			name: "value that is null", op: admissionv1.Create, new: instance("small", "", from("bad/params")),
			secrets:  []runtime.Object{paramsSecret("bad", map[string]string{"params": `null`})},
			wantCode: 422, wantMsg: []string{`the value of Secret "bad" key "params" is null, not a JSON object`},
			wantCalls: map[fakebroker.Op]int{},
		},
		{
			name: "parameter also in spec.parameters", op: admissionv1.Create,
			new: instance("small", `{"region":"us"}`, from("db-admin/params")), secrets: []runtime.Object{admin},
			wantCode: 422, wantMsg: []string{`spec.parametersFrom[0].secretKeyRef: Forbidden: parameter "region" is set by spec.parameters and by Secret "db-admin" key "params": a parameter may come from one place only`},
			wantCalls: map[fakebroker.Op]int{},
		},
		{
			name: "parameter in two Secrets", op: admissionv1.Create,
			new:      instance("small", "", from("db-admin/params", "other/params")),
			secrets:  []runtime.Object{admin, paramsSecret("other", map[string]string{"params": `{"region":"s3cr3t-us"}`})},
			wantCode: 422, wantMsg: []string{`spec.parametersFrom[1].secretKeyRef: Forbidden: parameter "region" is set by Secret "db-admin" key "params" and by Secret "other" key "params"`},
			wantCalls: map[fakebroker.Op]int{},
		},
		{
			name: "every broken reference is reported at once", op: admissionv1.Create,
			new: instance("small", "", from("nope/params", "db-admin/other")), secrets: []runtime.Object{admin},
			wantCode: 422, wantMsg: []string{`spec.parametersFrom[0].secretKeyRef.name`, `spec.parametersFrom[1].secretKeyRef.key`},
			wantCalls: map[fakebroker.Op]int{},
		},
		{
			name: "a value from a Secret is checked against the plan's schema, and not shown", op: admissionv1.Create,
			new:      instance("small", "", from("v/params")),
			secrets:  []runtime.Object{paramsSecret("v", map[string]string{"params": `{"version":"s3cr3t-9"}`})},
			wantCode: 422, wantMsg: []string{`spec.parameters.version: Invalid value: does not match the plan's create schema at /version`, `(the parameter comes from Secret "v" key "params")`},
			wantCalls: map[fakebroker.Op]int{},
		},
		{
			name: "dry run resolves and checks, and calls nobody", op: admissionv1.Create, dryRun: true,
			new: instance("small", "", from("db-admin/params")), secrets: []runtime.Object{admin},
			wantCalls: map[fakebroker.Op]int{},
		},
		{
			name: "dry run refuses a missing Secret", op: admissionv1.Create, dryRun: true,
			new: instance("small", "", from("nope/params")), wantCode: 422, wantMsg: []string{`no Secret "nope"`},
			wantCalls: map[fakebroker.Op]int{},
		},
		{
			name: "create-only parameter moved into a Secret with another value", op: admissionv1.Update,
			old: instance("small", `{"region":"eu"}`), new: instance("small", "", from("db-admin/params")), secrets: []runtime.Object{admin},
			wantCode: 422, wantMsg: []string{`spec.parameters.region: Invalid value: create-only parameter`, `cannot be changed after creation (was "eu")`},
			wantCalls: map[fakebroker.Op]int{},
		},
		{
			name: "create-only parameter from another Secret", op: admissionv1.Update,
			old: instance("small", "", from("db-admin/params")), new: instance("small", "", from("other/params")),
			secrets:  []runtime.Object{admin, paramsSecret("other", map[string]string{"params": `{"region":"s3cr3t-us"}`})},
			wantCode: 422, wantMsg: []string{`spec.parameters.region`, `create-only parameter`, `(the parameter comes from Secret "other" key "params")`},
			wantCalls: map[fakebroker.Op]int{},
		},
		{
			name: "re-apply: a bumped parametersFromGeneration sends the Secret's current values, create-only ones left out", op: admissionv1.Update,
			old:        instance("small", "", from("db-admin/params", "db-size/params")),
			new:        instance("small", "", from("db-admin/params", "db-size/params"), func(si *v1alpha1.ServiceInstance) { si.Spec.ParametersFromGeneration = 2 }),
			secrets:    []runtime.Object{admin, paramsSecret("db-size", map[string]string{"params": `{"storageGB":5}`})},
			wantCalls:  map[fakebroker.Op]int{fakebroker.OpUpdate: 1},
			wantParams: map[string]any{"storageGB": float64(5)},
		},
		{
			name: "a spec change sends the Secret's values with it", op: admissionv1.Update,
			old: instance("small", `{"version":"15"}`, from("db-size/params")), new: instance("small", `{"version":"16"}`, from("db-size/params")),
			secrets:    []runtime.Object{paramsSecret("db-size", map[string]string{"params": `{"storageGB":5}`})},
			wantCalls:  map[fakebroker.Op]int{fakebroker.OpUpdate: 1},
			wantParams: map[string]any{"storageGB": float64(5), "version": "16"},
		},
		{
			name: "a metadata-only update calls nobody, whatever the Secret holds now", op: admissionv1.Update,
			old:       instance("small", "", from("db-size/params")),
			new:       instance("small", "", from("db-size/params"), func(si *v1alpha1.ServiceInstance) { si.Annotations = map[string]string{"lockstep.dev/reapply": "1"} }),
			secrets:   []runtime.Object{paramsSecret("db-size", map[string]string{"params": `{"storageGB":9}`})},
			wantCalls: map[fakebroker.Op]int{},
		},
		{
			name: "re-apply after a Secret changed a create-only parameter is refused", op: admissionv1.Update,
			old: instance("small", "", from("db-admin/params"), appliedCreateOnly(`{"region":"s3cr3t-before"}`)),
			new: instance("small", "", from("db-admin/params"), appliedCreateOnly(`{"region":"s3cr3t-before"}`),
				func(si *v1alpha1.ServiceInstance) { si.Spec.ParametersFromGeneration = 2 }),
			secrets:  []runtime.Object{admin},
			wantCode: 422, wantMsg: []string{`spec.parametersFrom: Forbidden: the create-only parameters from Secrets hold other values than the broker was given: ` +
				`region (from Secret "db-admin" key "params"); a create-only parameter cannot be changed after creation: put the values back into the Secret`},
			wantCalls: map[fakebroker.Op]int{},
		},
		{
			name: "re-apply with the create-only parameters as they were", op: admissionv1.Update,
			old: instance("small", "", from("db-admin/params", "db-size/params"), appliedCreateOnly(`{"region":"s3cr3t-eu"}`)),
			new: instance("small", "", from("db-admin/params", "db-size/params"), appliedCreateOnly(`{"region":"s3cr3t-eu"}`),
				func(si *v1alpha1.ServiceInstance) { si.Spec.ParametersFromGeneration = 2 }),
			secrets:    []runtime.Object{admin, paramsSecret("db-size", map[string]string{"params": `{"storageGB":6}`})},
			wantCalls:  map[fakebroker.Op]int{fakebroker.OpUpdate: 1},
			wantParams: map[string]any{"storageGB": float64(6)},
		},
		{
			name: "re-apply after a Secret changed a create-only parameter, digest from before digests were keyed", op: admissionv1.Update,
			old: instance("small", "", from("db-admin/params"), appliedCreateOnlyPlain(`{"region":"s3cr3t-before"}`)),
			new: instance("small", "", from("db-admin/params"), appliedCreateOnlyPlain(`{"region":"s3cr3t-before"}`),
				func(si *v1alpha1.ServiceInstance) { si.Spec.ParametersFromGeneration = 2 }),
			secrets:  []runtime.Object{admin},
			wantCode: 422, wantMsg: []string{`the create-only parameters from Secrets hold other values than the broker was given: region`},
			wantCalls: map[fakebroker.Op]int{},
		},
		{
			name: "re-apply with the create-only parameters as they were, digest from before digests were keyed", op: admissionv1.Update,
			old: instance("small", "", from("db-admin/params", "db-size/params"), appliedCreateOnlyPlain(`{"region":"s3cr3t-eu"}`)),
			new: instance("small", "", from("db-admin/params", "db-size/params"), appliedCreateOnlyPlain(`{"region":"s3cr3t-eu"}`),
				func(si *v1alpha1.ServiceInstance) { si.Spec.ParametersFromGeneration = 2 }),
			secrets:    []runtime.Object{admin, paramsSecret("db-size", map[string]string{"params": `{"storageGB":6}`})},
			wantCalls:  map[fakebroker.Op]int{fakebroker.OpUpdate: 1},
			wantParams: map[string]any{"storageGB": float64(6)},
		},
		{
			name: "re-apply with a create-only digest under a key removed since: the broker judges", op: admissionv1.Update,
			old: instance("small", "", from("db-admin/params"), appliedCreateOnlyDigest("hmac-sha256:removed:"+strings.Repeat("0", 64))),
			new: instance("small", "", from("db-admin/params"), appliedCreateOnlyDigest("hmac-sha256:removed:"+strings.Repeat("0", 64)),
				func(si *v1alpha1.ServiceInstance) { si.Spec.ParametersFromGeneration = 2 }),
			secrets:    []runtime.Object{admin},
			wantCalls:  map[fakebroker.Op]int{fakebroker.OpUpdate: 1},
			wantParams: map[string]any{},
		},
		{
			name: "re-apply with a Secret that is gone is refused", op: admissionv1.Update,
			old:      instance("small", "", from("db-size/params")),
			new:      instance("small", "", from("db-size/params"), func(si *v1alpha1.ServiceInstance) { si.Spec.ParametersFromGeneration = 3 }),
			wantCode: 422, wantMsg: []string{`no Secret "db-size" in namespace "team"`},
			wantCalls: map[fakebroker.Op]int{},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, tt.secrets...)
			if tt.op != admissionv1.Create {
				h.broker.PutInstance(existing)
			}
			warnings, err := h.admit(tt.op, tt.old, tt.new, tt.dryRun)
			if tt.wantCode == 0 {
				require.NoError(t, err)
			} else {
				require.Error(t, err)
				var status apierrors.APIStatus
				require.ErrorAs(t, err, &status)
				assert.Equal(t, tt.wantCode, status.Status().Code, err.Error())
				for _, m := range tt.wantMsg {
					assert.Contains(t, err.Error(), m)
				}
				assert.NotContains(t, err.Error(), secretMark, "a refusal never shows a Secret's value")
			}
			assert.NotContains(t, strings.Join(warnings, "\n"), secretMark)
			got := map[fakebroker.Op]int{}
			for _, c := range h.broker.Calls() {
				got[c.Op]++
			}
			assert.Equal(t, tt.wantCalls, got)
			h.assertJournal(t, len(got) > 0, tt.wantCode == 0, "")
			if tt.wantParams != nil {
				op := fakebroker.OpProvision
				if tt.op == admissionv1.Update {
					op = fakebroker.OpUpdate
				}
				c, ok := h.broker.LastCall(op)
				require.True(t, ok)
				assert.Equal(t, tt.wantParams, c.JSON["parameters"])
			}
			assertRecordsHideSecrets(t, h, tt.new)
		})
	}
}

// appliedCreateOnly gives an instance the status of one whose create-only
// parameters, given to the broker, were values.
func appliedCreateOnly(values string) func(*v1alpha1.ServiceInstance) {
	return func(si *v1alpha1.ServiceInstance) {
		d, err := parametersfrom.Digest([]byte(values))
		if err != nil {
			panic(err)
		}
		si.Status.LastApplied = &v1alpha1.AppliedInstance{PlanName: "small", PlanID: fakebroker.PlanSmallID, CreateOnlyDigest: d}
	}
}

// appliedCreateOnlyPlain is appliedCreateOnly with the digest lockstep
// made before digests were keyed: a plain SHA-256.
func appliedCreateOnlyPlain(values string) func(*v1alpha1.ServiceInstance) {
	sum := sha256.Sum256([]byte(values))
	return appliedCreateOnlyDigest(hex.EncodeToString(sum[:]))
}

// appliedCreateOnlyDigest gives an instance the status of one whose
// create-only parameters, given to the broker, have digest d.
func appliedCreateOnlyDigest(d string) func(*v1alpha1.ServiceInstance) {
	return func(si *v1alpha1.ServiceInstance) {
		si.Status.LastApplied = &v1alpha1.AppliedInstance{PlanName: "small", PlanID: fakebroker.PlanSmallID, CreateOnlyDigest: d}
	}
}

// assertRecordsHideSecrets checks the operation records: a digest of the
// parameters sent when some came from Secrets, never a value.
func assertRecordsHideSecrets(t *testing.T, h *harness, si Instance) {
	t.Helper()
	var ops v1alpha1.BrokerOperationList
	require.NoError(t, h.client.List(context.Background(), &ops))
	for _, op := range ops.Items {
		raw, err := json.Marshal(op)
		require.NoError(t, err)
		assert.NotContains(t, string(raw), secretMark)
		if op.Status.Phase == v1alpha1.PhaseSucceeded && len(si.Spec.ParametersFrom) > 0 {
			assert.True(t, strings.HasPrefix(op.Spec.ParametersDigest, "hmac-sha256:"), "the record keeps a keyed digest of the parameters sent: %q", op.Spec.ParametersDigest)
		}
	}
}

// The digest in the record is the digest of what the broker received.
func TestInstanceParametersFromDigestIsOfWhatWasSent(t *testing.T) {
	h := newHarness(t, paramsSecret("db-admin", map[string]string{"params": `{"region":"s3cr3t-eu"}`}))
	_, err := h.admit(admissionv1.Create, nil, instance("small", `{"storageGB":2}`, from("db-admin/params")), false)
	require.NoError(t, err)
	c, ok := h.broker.LastCall(fakebroker.OpProvision)
	require.True(t, ok)
	var ops v1alpha1.BrokerOperationList
	require.NoError(t, h.client.List(context.Background(), &ops))
	require.Len(t, ops.Items, 1)
	want, err := parametersfrom.Digest([]byte(`{"region":"s3cr3t-eu","storageGB":2}`))
	require.NoError(t, err)
	assert.Equal(t, want, ops.Items[0].Spec.ParametersDigest)
	createOnly, err := parametersfrom.Digest([]byte(`{"region":"s3cr3t-eu"}`))
	require.NoError(t, err)
	assert.Equal(t, createOnly, ops.Items[0].Spec.CreateOnlyDigest, "and of its create-only parameters")
	assert.Contains(t, string(c.Body), `"region":"s3cr3t-eu"`, "the broker, and only the broker, receives the value")
}

func TestBindingParametersFrom(t *testing.T) {
	db := instance("small", "")
	role := paramsSecret("bind-role", map[string]string{"params": `{"role":"writer"}`})
	bindFrom := func(refs ...string) func(*v1alpha1.ServiceBinding) {
		return func(b *v1alpha1.ServiceBinding) { b.Spec.ParametersFrom = sources(refs...) }
	}
	tests := []struct {
		name       string
		new        Binding
		objects    []runtime.Object
		wantCode   int32
		wantMsg    string
		wantParams map[string]any
	}{
		{name: "bind merges the Secret's object", new: binding("", bindFrom("bind-role/params")), objects: []runtime.Object{db, role},
			wantParams: map[string]any{"role": "writer"}},
		{name: "missing Secret", new: binding("", bindFrom("nope/params")), objects: []runtime.Object{db},
			wantCode: 422, wantMsg: `spec.parametersFrom[0].secretKeyRef.name: Invalid value: "nope": no Secret "nope" in namespace "team"`},
		{name: "parameter also in spec.parameters", new: binding(`{"role":"reader"}`, bindFrom("bind-role/params")), objects: []runtime.Object{db, role},
			wantCode: 422, wantMsg: `parameter "role" is set by spec.parameters and by Secret "bind-role" key "params"`},
		{name: "value against the bind schema, not shown", new: binding("", bindFrom("r/params")),
			objects:  []runtime.Object{db, paramsSecret("r", map[string]string{"params": `{"role":"s3cr3t-admin"}`})},
			wantCode: 422, wantMsg: `(the parameter comes from Secret "r" key "params")`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, tt.objects...)
			h.broker.PutInstance(fakebroker.Instance{ID: "ext-1", ServiceID: fakebroker.ServiceDBID, PlanID: fakebroker.PlanSmallID})
			_, err := h.admitBinding(admissionv1.Create, nil, tt.new, false)
			if tt.wantCode != 0 {
				require.Error(t, err)
				var status apierrors.APIStatus
				require.ErrorAs(t, err, &status)
				assert.Equal(t, tt.wantCode, status.Status().Code, err.Error())
				assert.Contains(t, err.Error(), tt.wantMsg)
				assert.NotContains(t, err.Error(), secretMark)
				assert.Empty(t, h.broker.Calls(), "the broker is not called")
				return
			}
			require.NoError(t, err)
			c, ok := h.broker.LastCall(fakebroker.OpBind)
			require.True(t, ok)
			assert.Equal(t, tt.wantParams, c.JSON["parameters"])
		})
	}
}

// readers is an Authorizer that lets each user get the Secrets listed,
// and nothing else.
type readers map[string][]string

func (r readers) Allowed(_ context.Context, user authenticationv1.UserInfo, attrs authorizationv1.ResourceAttributes) (bool, error) {
	if attrs.Resource != "secrets" || attrs.Verb != "get" {
		return false, nil
	}
	for _, s := range r[user.Username] {
		if s == attrs.Name {
			return true, nil
		}
	}
	return false, nil
}

// lockstep reads a Secret for a user only if the user may read it: a user
// who may create instances but not read a Secret cannot have it sent.
func TestParametersFromNeedsTheRightToReadTheSecret(t *testing.T) {
	secrets := []runtime.Object{
		paramsSecret("db-admin", map[string]string{"params": `{"region":"s3cr3t-eu"}`}),
		paramsSecret("db-size", map[string]string{"params": `{"storageGB":3}`}),
	}
	tests := []struct {
		name     string
		from     []string
		wantCode int32
		wantMsg  string
	}{
		{name: "may read every Secret", from: []string{"db-size/params"}},
		{name: "may not read one", from: []string{"db-size/params", "db-admin/params"}, wantCode: 422,
			wantMsg: `spec.parametersFrom[1].secretKeyRef.name: Forbidden: user "alice" may not get Secret "db-admin" in namespace "team", and lockstep sends a Secret's values only for users who may read it themselves`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, secrets...)
			d := h.deps
			d.Access = readers{"alice": {"db-size"}}
			h.validator = NewInstanceValidator(d, nil)
			_, err := h.admit(admissionv1.Create, nil, instance("small", "", from(tt.from...)), false)
			if tt.wantCode == 0 {
				require.NoError(t, err)
				assert.Equal(t, 1, h.broker.Count(fakebroker.OpProvision))
				return
			}
			require.Error(t, err)
			var status apierrors.APIStatus
			require.ErrorAs(t, err, &status)
			assert.Equal(t, tt.wantCode, status.Status().Code)
			assert.Contains(t, err.Error(), tt.wantMsg)
			assert.Empty(t, h.broker.Calls(), "the broker is not called")
		})
	}
}
