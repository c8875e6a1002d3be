package object

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/lockstep-dev/lockstep/api/v1alpha1"
)

var pg = Kind{
	GVK:    schema.GroupVersionKind{Group: "services.lockstep.dev", Version: "v1alpha1", Kind: "PostgresqlDb"},
	Plural: "postgresqldbs", CRDName: "postgresqldbs.services.lockstep.dev",
	Broker: "acme", OfferingID: "svc-pg", ServiceName: "postgresql-db",
}

// typed is an object of kind pg with spec.
func typed(spec map[string]any) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "services.lockstep.dev/v1alpha1", "kind": "PostgresqlDb",
		"metadata": map[string]any{"name": "db", "namespace": "team", "uid": "u-1", "generation": int64(2),
			"labels": map[string]any{"app": "shop"}},
	}}
	if spec != nil {
		u.Object["spec"] = spec
	}
	return u
}

func TestToInstance(t *testing.T) {
	tests := []struct {
		name    string
		obj     *unstructured.Unstructured
		want    v1alpha1.ServiceInstanceSpec
		status  v1alpha1.ServiceInstanceStatus
		wantErr string
	}{
		{
			name: "every field",
			obj: typed(map[string]any{
				"plan": "small", "brokerName": "acme", "externalID": "id-1", "parametersFromGeneration": int64(3),
				"parameters":     map[string]any{"size": int64(10), "tier": "gold"},
				"parametersFrom": []any{map[string]any{"secretKeyRef": map[string]any{"name": "s", "key": "k"}}},
			}),
			want: v1alpha1.ServiceInstanceSpec{
				BrokerName: "acme", ServiceName: "postgresql-db", PlanName: "small", ExternalID: "id-1",
				Parameters:               &runtime.RawExtension{Raw: []byte(`{"size":10,"tier":"gold"}`)},
				ParametersFrom:           []v1alpha1.ParametersFromSource{{SecretKeyRef: v1alpha1.SecretKeyReference{Name: "s", Key: "k"}}},
				ParametersFromGeneration: 3,
			},
		},
		{
			name: "broker defaulted to the kind's",
			obj:  typed(map[string]any{"plan": "small"}),
			want: v1alpha1.ServiceInstanceSpec{BrokerName: "acme", ServiceName: "postgresql-db", PlanName: "small"},
		},
		{
			name: "no spec",
			obj:  typed(nil),
			want: v1alpha1.ServiceInstanceSpec{BrokerName: "acme", ServiceName: "postgresql-db"},
		},
		{
			name: "status as it is",
			obj: func() *unstructured.Unstructured {
				u := typed(map[string]any{"plan": "small"})
				u.Object["status"] = map[string]any{"observedGeneration": int64(2), "dashboardURL": "https://dash"}
				return u
			}(),
			want:   v1alpha1.ServiceInstanceSpec{BrokerName: "acme", ServiceName: "postgresql-db", PlanName: "small"},
			status: v1alpha1.ServiceInstanceStatus{ObservedGeneration: 2, DashboardURL: "https://dash"},
		},
		{name: "plan of the wrong type", obj: typed(map[string]any{"plan": int64(1)}), wantErr: "spec.plan"},
		{name: "spec not an object", obj: func() *unstructured.Unstructured {
			u := typed(nil)
			u.Object["spec"] = "small"
			return u
		}(), wantErr: "spec is not an object"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			si, err := ToInstance(tt.obj, pg)
			if tt.wantErr != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tt.wantErr)
				assert.Contains(t, err.Error(), "PostgresqlDb team/db")
				return
			}
			require.NoError(t, err)
			assert.Equal(t, metav1.TypeMeta{APIVersion: "services.lockstep.dev/v1alpha1", Kind: "PostgresqlDb"}, si.TypeMeta)
			assert.Equal(t, "db", si.Name)
			assert.Equal(t, "team", si.Namespace)
			assert.Equal(t, int64(2), si.Generation)
			assert.Equal(t, map[string]string{"app": "shop"}, si.Labels)
			assert.Equal(t, tt.want, si.Spec)
			assert.Equal(t, tt.status, si.Status)
			assert.True(t, v1alpha1.Typed(si))
			assert.Equal(t, v1alpha1.TargetKind("PostgresqlDb"), v1alpha1.InstanceKind(si))
			assert.Equal(t, "services.lockstep.dev", v1alpha1.InstanceAPIGroup(si))
		})
	}
}

func TestFromInstance(t *testing.T) {
	tests := []struct {
		name   string
		obj    *unstructured.Unstructured
		change func(si *v1alpha1.ServiceInstance)
		want   *unstructured.Unstructured
	}{
		{
			name:   "unchanged model, unchanged object",
			obj:    typed(map[string]any{"plan": "small", "brokerName": "acme", "parametersFromGeneration": int64(0), "parameters": map[string]any{"n": 1.5}}),
			change: func(*v1alpha1.ServiceInstance) {},
			want:   typed(map[string]any{"plan": "small", "brokerName": "acme", "parametersFromGeneration": int64(0), "parameters": map[string]any{"n": 1.5}}),
		},
		{
			name: "defaults and finalizer",
			obj:  typed(map[string]any{"plan": "small"}),
			change: func(si *v1alpha1.ServiceInstance) {
				si.Spec.ExternalID = "id-1"
				si.Finalizers = append(si.Finalizers, v1alpha1.Finalizer)
				si.Annotations = map[string]string{"a": "b"}
			},
			want: func() *unstructured.Unstructured {
				u := typed(map[string]any{"plan": "small", "brokerName": "acme", "externalID": "id-1"})
				u.SetFinalizers([]string{v1alpha1.Finalizer})
				u.SetAnnotations(map[string]string{"a": "b"})
				return u
			}(),
		},
		{
			name: "plan and parameters",
			obj:  typed(map[string]any{"plan": "small", "brokerName": "acme", "parameters": map[string]any{"size": int64(1)}}),
			change: func(si *v1alpha1.ServiceInstance) {
				si.Spec.PlanName = "large"
				si.Spec.Parameters = nil
				si.Spec.ServiceName = "ignored"
			},
			want: typed(map[string]any{"plan": "large", "brokerName": "acme"}),
		},
		{
			name: "status",
			obj:  typed(map[string]any{"plan": "small", "brokerName": "acme"}),
			change: func(si *v1alpha1.ServiceInstance) {
				si.Status.ObservedGeneration = 2
				si.Status.LastApplied = &v1alpha1.AppliedInstance{PlanName: "small", PlanID: "p", Parameters: &runtime.RawExtension{Raw: []byte(`{"size":10}`)}}
			},
			want: func() *unstructured.Unstructured {
				u := typed(map[string]any{"plan": "small", "brokerName": "acme"})
				u.Object["status"] = map[string]any{"observedGeneration": int64(2),
					"lastApplied": map[string]any{"planName": "small", "planID": "p", "parameters": map[string]any{"size": int64(10)}}}
				return u
			}(),
		},
		{
			name: "status removed",
			obj: func() *unstructured.Unstructured {
				u := typed(map[string]any{"plan": "small", "brokerName": "acme"})
				u.Object["status"] = map[string]any{"observedGeneration": int64(2)}
				return u
			}(),
			change: func(si *v1alpha1.ServiceInstance) { si.Status = v1alpha1.ServiceInstanceStatus{} },
			want:   typed(map[string]any{"plan": "small", "brokerName": "acme"}),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			si, err := ToInstance(tt.obj, pg)
			require.NoError(t, err)
			tt.change(si)
			require.NoError(t, FromInstance(si, tt.obj))
			assert.Equal(t, tt.want.Object, tt.obj.Object)
		})
	}
}

// A ServiceInstance, with or without its TypeMeta, names itself.
func TestInstanceKindOfServiceInstance(t *testing.T) {
	for _, tm := range []metav1.TypeMeta{{}, {APIVersion: "lockstep.dev/v1alpha1", Kind: "ServiceInstance"}} {
		si := &v1alpha1.ServiceInstance{TypeMeta: tm}
		assert.False(t, v1alpha1.Typed(si))
		assert.Equal(t, v1alpha1.KindServiceInstance, v1alpha1.InstanceKind(si))
		assert.Empty(t, v1alpha1.InstanceAPIGroup(si))
	}
}
