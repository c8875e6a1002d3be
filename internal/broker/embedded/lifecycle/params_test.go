package lifecycle

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lockstep-dev/lockstep/internal/broker/embedded/store"
	"github.com/lockstep-dev/lockstep/internal/broker/osbapi"
)

func TestObjectOrEmpty(t *testing.T) {
	tests := []struct {
		in      string
		want    string
		wantErr bool
	}{
		{"", `{}`, false},
		{"null", `{}`, false},
		{`{"b": 1, "a": {"d": 2, "c": [3]}}`, `{"a":{"c":[3],"d":2},"b":1}`, false},
		{`{"big": 12345678901234567890}`, `{"big":12345678901234567890}`, false},
		{`[1]`, "", true},
		{`"x"`, "", true},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := objectOrEmpty("parameters", json.RawMessage(tt.in))
			if tt.wantErr {
				var e *Error
				require.ErrorAs(t, err, &e)
				assert.Equal(t, BadRequest, e.Kind)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.want, string(got))
		})
	}
}

func TestSameJSON(t *testing.T) {
	tests := []struct {
		a, b string
		want bool
	}{
		{`{"a":1,"b":2}`, `{"b":2,"a":1}`, true},
		{``, `{}`, true},
		{`null`, ``, true},
		{`{"a":1}`, `{"a":1.5}`, false},
		{`{"a":[1,2]}`, `{"a":[2,1]}`, false},
		{`{"a":{}}`, `{"a":null}`, false},
	}
	for _, tt := range tests {
		t.Run(tt.a+" vs "+tt.b, func(t *testing.T) {
			assert.Equal(t, tt.want, sameJSON(json.RawMessage(tt.a), json.RawMessage(tt.b)))
		})
	}
}

func TestApplyCreateOnly(t *testing.T) {
	tests := []struct {
		name         string
		current      string
		given        string
		createOnly   []string
		wantNext     string
		wantValidate string
		wantErr      []string
	}{
		{"replaces the updatable, carries the create-only", `{"region":"eu","size":1,"tier":"a"}`, `{"size":2}`, []string{"region"},
			`{"region":"eu","size":2}`, `{"size":2}`, nil},
		{"create-only sent unchanged", `{"region":"eu","size":1}`, `{"region":"eu","size":3}`, []string{"region"},
			`{"region":"eu","size":3}`, `{"size":3}`, nil},
		{"create-only changed", `{"region":"eu"}`, `{"region":"us"}`, []string{"region"},
			"", "", []string{`"region" is create-only: it was "eu" at creation and cannot change to "us"`}},
		{"create-only set after creation", `{}`, `{"region":"us","zone":"b"}`, []string{"region", "zone"},
			"", "", []string{`"region" is create-only: it was unset`, `"zone" is create-only`}},
		{"no create-only properties", `{"a":1}`, `{}`, nil, `{}`, `{}`, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			next, validate, err := applyCreateOnly(json.RawMessage(tt.current), json.RawMessage(tt.given), tt.createOnly)
			if tt.wantErr != nil {
				var e *Error
				require.ErrorAs(t, err, &e)
				assert.Equal(t, BadRequest, e.Kind)
				for _, w := range tt.wantErr {
					assert.Contains(t, e.Description, w)
				}
				return
			}
			require.NoError(t, err)
			assert.JSONEq(t, tt.wantNext, string(next))
			assert.JSONEq(t, tt.wantValidate, string(validate))
		})
	}
}

func TestLastOperation(t *testing.T) {
	provisioned := &store.Instance{State: store.InstanceProvisioned}
	failedInst := &store.Instance{State: store.InstanceFailed}
	yes, no := true, false
	tests := []struct {
		name           string
		job            store.Job
		inst           *store.Instance
		wantState      osbapi.State
		wantDesc       string
		wantUsable     *bool
		wantRepeatable *bool
	}{
		{"pending", store.Job{Method: store.Provision, State: store.JobPending}, provisioned, "in progress", "waiting for the broker to load", nil, nil},
		{"running", store.Job{Method: store.Update, State: store.JobRunning}, provisioned, "in progress", "update in progress", nil, nil},
		{"succeeded", store.Job{Method: store.Bind, State: store.JobSucceeded, Description: "bind succeeded"}, nil, "succeeded", "bind succeeded", nil, nil},
		{"failed update", store.Job{Method: store.Update, State: store.JobFailed, Description: "no"}, provisioned, "failed", "no", &yes, &yes},
		{"failed deprovision of a failed instance", store.Job{Method: store.Deprovision, State: store.JobFailed}, failedInst, "failed", "", &no, nil},
		{"failed provision", store.Job{Method: store.Provision, State: store.JobFailed}, failedInst, "failed", "", nil, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			lo := lastOperation(&tt.job, tt.inst)
			assert.Equal(t, tt.wantState, lo.State)
			assert.Contains(t, lo.Description, tt.wantDesc)
			assert.Equal(t, tt.wantUsable, lo.InstanceUsable)
			assert.Equal(t, tt.wantRepeatable, lo.UpdateRepeatable)
		})
	}
}
