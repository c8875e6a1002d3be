package check

import (
	"testing"

	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/lockstep-dev/lockstep/api/v1alpha1"
)

func TestBrokerStateOfInstances(t *testing.T) {
	tests := []struct {
		name        string
		held        *Instance
		object      v1alpha1.ServiceInstance
		fromSecrets map[string][]any
		want        string // a fragment of the violation; "" for none
	}{
		{"equal and in sync", &Instance{PlanID: "small-id", Parameters: object(`{"a": 1}`)},
			instance("i", "id-1", "small", `{"a": 1.0}`, inSync(metav1.ConditionTrue, "Committed")), nil, ""},
		{"equal, no parameters on either side", &Instance{PlanID: "small-id"},
			instance("i", "id-1", "small", ``, inSync(metav1.ConditionTrue, "Committed")), nil, ""},
		{"equal but InSync says drift", &Instance{PlanID: "small-id"},
			instance("i", "id-1", "small", ``, inSync(metav1.ConditionFalse, "PlanDrift")), nil, "holds what the object says, but InSync is False"},
		{"equal but no InSync condition", &Instance{PlanID: "small-id"},
			instance("i", "id-1", "small", ``, nil), nil, "no InSync condition"},
		{"another plan, InSync True", &Instance{PlanID: "large-id"},
			instance("i", "id-1", "small", ``, inSync(metav1.ConditionTrue, "Committed")), nil, "but InSync is True"},
		{"another plan, PlanDrift", &Instance{PlanID: "large-id"},
			instance("i", "id-1", "small", ``, inSync(metav1.ConditionFalse, "PlanDrift")), nil, ""},
		{"other parameters, but InSync says gone", &Instance{PlanID: "small-id", Parameters: object(`{"a": 2}`)},
			instance("i", "id-1", "small", `{"a": 1}`, inSync(metav1.ConditionFalse, "GoneAtBroker")), nil, "InSync says GoneAtBroker"},
		{"other parameters, ParametersDrift", &Instance{PlanID: "small-id", Parameters: object(`{"a": 2}`)},
			instance("i", "id-1", "small", `{"a": 1}`, inSync(metav1.ConditionFalse, "ParametersDrift")), nil, ""},
		{"gone, GoneAtBroker", nil,
			instance("i", "id-1", "small", ``, inSync(metav1.ConditionFalse, "GoneAtBroker")), nil, ""},
		{"gone, still Unknown", nil,
			instance("i", "id-1", "small", ``, inSync(metav1.ConditionUnknown, "OutcomeUnknown")), nil, "not followed to its end"},
		{"gone, the provision failed", nil,
			func() v1alpha1.ServiceInstance {
				si := instance("i", "id-1", "small", ``, nil)
				si.Status.LastOperation = &v1alpha1.LastOperation{Verb: v1alpha1.VerbProvision, State: v1alpha1.StateFailed}
				return si
			}(), nil, ""},
		{"a create-only parameter the broker does not report", &Instance{PlanID: "small-id", Parameters: object(`{"a": 1}`)},
			instance("i", "id-1", "small", `{"a": 1, "region": "eu"}`, inSync(metav1.ConditionTrue, "Committed")), nil, ""},
		{"a create-only parameter the broker holds otherwise", &Instance{PlanID: "small-id", Parameters: object(`{"a": 1, "region": "us"}`)},
			instance("i", "id-1", "small", `{"a": 1, "region": "eu"}`, inSync(metav1.ConditionTrue, "Committed")), nil, "but InSync is True"},
		{"a parameter from a Secret, one of its values", &Instance{PlanID: "small-id", Parameters: object(`{"a": 1, "pw": "old"}`)},
			instance("i", "id-1", "small", `{"a": 1}`, inSync(metav1.ConditionTrue, "Committed")), map[string][]any{"pw": {"old", "new"}}, ""},
		{"a parameter from a Secret, a value it never had", &Instance{PlanID: "small-id", Parameters: object(`{"a": 1, "pw": "other"}`)},
			instance("i", "id-1", "small", `{"a": 1}`, inSync(metav1.ConditionTrue, "Committed")), map[string][]any{"pw": {"old", "new"}}, "but InSync is True"},
		{"being deleted: not compared", nil,
			func() v1alpha1.ServiceInstance {
				si := instance("i", "id-1", "small", ``, inSync(metav1.ConditionTrue, "Committed"))
				deleting(&si.ObjectMeta)
				return si
			}(), nil, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := broker()
			if tt.held != nil {
				b.Instances["id-1"] = *tt.held
			}
			s := Snapshot{Instances: []v1alpha1.ServiceInstance{tt.object}, Brokers: map[string]*Broker{"fake": b},
				FromSecrets: map[string]map[string][]any{"ns/i": tt.fromSecrets}}
			got := BrokerState(s)
			if tt.want == "" {
				assert.Empty(t, got)
				return
			}
			if assert.Len(t, got, 1) {
				assert.Equal(t, BrokerEqualsCluster, got[0].Invariant)
				assert.Equal(t, "ServiceInstance ns/i", got[0].Object)
				assert.Contains(t, got[0].Message, tt.want)
			}
		})
	}
}

func TestBrokerStateOfBindings(t *testing.T) {
	ready := append(inSync(metav1.ConditionTrue, "Committed"), metav1.Condition{Type: v1alpha1.ConditionReady, Status: metav1.ConditionTrue, Reason: "CredentialsStored"})
	tests := []struct {
		name   string
		held   *Binding
		secret map[string][]byte
		want   string
	}{
		{"held, its Secret holds the credentials", &Binding{Credentials: map[string]any{"password": "p", "port": 5432}},
			map[string][]byte{"password": []byte("p"), "port": []byte("5432")}, ""},
		{"held, its Secret holds others", &Binding{Credentials: map[string]any{"password": "p"}},
			map[string][]byte{"password": []byte("q")}, "not the broker's credentials"},
		{"held, no Secret", &Binding{Credentials: map[string]any{"password": "p"}}, nil, "does not exist"},
		{"gone, but Ready and in sync", nil, map[string][]byte{"password": []byte("p")}, "does not hold the binding: but InSync is True"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := broker()
			if tt.held != nil {
				b.Bindings["id-1/bid-1"] = *tt.held
			}
			s := Snapshot{
				Instances: []v1alpha1.ServiceInstance{instance("db", "id-1", "small", ``, inSync(metav1.ConditionTrue, "Committed"))},
				Bindings:  []v1alpha1.ServiceBinding{binding("creds", "bid-1", "db", ready)},
				Brokers:   map[string]*Broker{"fake": b},
				Secrets:   map[string]corev1.Secret{},
			}
			b.Instances["id-1"] = Instance{PlanID: "small-id"}
			if tt.secret != nil {
				s.Secrets["ns/creds"] = corev1.Secret{Data: tt.secret}
			}
			got := BrokerState(s)
			if tt.want == "" {
				assert.Empty(t, got)
				return
			}
			if assert.Len(t, got, 1) {
				assert.Equal(t, "ServiceBinding ns/creds", got[0].Object)
				assert.Contains(t, got[0].Message, tt.want)
			}
		})
	}
}
