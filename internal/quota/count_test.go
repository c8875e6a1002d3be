package quota

import (
	"testing"

	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

const instances = corev1.ResourceName("count/serviceinstances.lockstep.dev")

// rq is a quota of namespace team: spec.hard as written, status as the
// resource quota controller (and the API server's charges) left it; a
// negative used leaves the resource out of status.used.
func rq(name string, hard, used int64, mutate ...func(*corev1.ResourceQuota)) corev1.ResourceQuota {
	q := corev1.ResourceQuota{
		ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: name, ResourceVersion: "1"},
		Spec:       corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{instances: *resource.NewQuantity(hard, resource.DecimalSI)}},
		Status: corev1.ResourceQuotaStatus{
			Hard: corev1.ResourceList{instances: *resource.NewQuantity(hard, resource.DecimalSI)},
			Used: corev1.ResourceList{},
		},
	}
	if used >= 0 {
		q.Status.Used[instances] = *resource.NewQuantity(used, resource.DecimalSI)
	}
	for _, m := range mutate {
		m(&q)
	}
	return q
}

func TestResourceName(t *testing.T) {
	assert.Equal(t, instances, ResourceName(schema.GroupResource{Group: "lockstep.dev", Resource: "serviceinstances"}))
	assert.Equal(t, corev1.ResourceName("count/dbs.services.lockstep.dev"), ResourceName(schema.GroupResource{Group: "services.lockstep.dev", Resource: "dbs"}))
	assert.Equal(t, corev1.ResourceName("count/secrets"), ResourceName(schema.GroupResource{Resource: "secrets"}))
}

// The decisions of kube-apiserver's quota admission for a custom
// resource's object count, row by row.
func TestCheck(t *testing.T) {
	noStatus := func(q *corev1.ResourceQuota) { q.Status = corev1.ResourceQuotaStatus{} }
	scoped := func(q *corev1.ResourceQuota) {
		q.Spec.Scopes = []corev1.ResourceQuotaScope{corev1.ResourceQuotaScopeBestEffort}
	}
	selected := func(q *corev1.ResourceQuota) {
		q.Spec.ScopeSelector = &corev1.ScopeSelector{MatchExpressions: []corev1.ScopedResourceSelectorRequirement{
			{ScopeName: corev1.ResourceQuotaScopePriorityClass, Operator: corev1.ScopeSelectorOpIn, Values: []string{"high"}}}}
	}
	other := func(q *corev1.ResourceQuota) {
		q.Status.Hard = corev1.ResourceList{"count/servicebindings.lockstep.dev": resource.MustParse("1")}
		q.Status.Used = corev1.ResourceList{"count/servicebindings.lockstep.dev": resource.MustParse("1")}
	}
	tests := []struct {
		name     string
		quotas   []corev1.ResourceQuota
		inFlight int64
		want     string // the refusal; "" when it fits
	}{
		{name: "no quota", want: ""},
		{name: "room left", quotas: []corev1.ResourceQuota{rq("q", 2, 1)}},
		{name: "at the limit", quotas: []corev1.ResourceQuota{rq("q", 1, 1)},
			want: "exceeded quota: q, requested: count/serviceinstances.lockstep.dev=1, used: count/serviceinstances.lockstep.dev=1, limited: count/serviceinstances.lockstep.dev=1"},
		{name: "over the limit (lowered after the fact)", quotas: []corev1.ResourceQuota{rq("q", 1, 3)},
			want: "exceeded quota: q, requested: count/serviceinstances.lockstep.dev=1, used: count/serviceinstances.lockstep.dev=3, limited: count/serviceinstances.lockstep.dev=1"},
		{name: "a limit of none", quotas: []corev1.ResourceQuota{rq("q", 0, 0)}, want: "exceeded quota: q,"},
		{name: "creates in flight count", quotas: []corev1.ResourceQuota{rq("q", 2, 1)}, inFlight: 1,
			want: "exceeded quota: q, requested: count/serviceinstances.lockstep.dev=1, used: count/serviceinstances.lockstep.dev=2, limited: count/serviceinstances.lockstep.dev=2"},
		{name: "no status yet: the API server limits nothing either", quotas: []corev1.ResourceQuota{rq("q", 0, 0, noStatus)}},
		{name: "status.hard without the use: status unknown", quotas: []corev1.ResourceQuota{rq("q", 5, -1)},
			want: "status unknown for quota: q, resources: count/serviceinstances.lockstep.dev"},
		{name: "a scoped quota never counts a custom resource", quotas: []corev1.ResourceQuota{rq("q", 0, 0, scoped)}},
		{name: "nor one with a scope selector", quotas: []corev1.ResourceQuota{rq("q", 0, 0, selected)}},
		{name: "a quota of another resource", quotas: []corev1.ResourceQuota{rq("q", 0, 0, other)}},
		{name: "every covering quota must hold, the first in name order refuses", quotas: []corev1.ResourceQuota{rq("z", 1, 1), rq("a", 5, 1), rq("m", 1, 1)},
			want: "exceeded quota: m,"},
		{name: "an unknown status before any limit", quotas: []corev1.ResourceQuota{rq("a", 1, 1), rq("b", 5, -1)},
			want: "status unknown for quota: b,"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Check(tt.quotas, instances, func(*corev1.ResourceQuota) int64 { return tt.inFlight })
			if tt.want == "" {
				assert.Nil(t, got)
				return
			}
			if assert.NotNil(t, got) {
				assert.Contains(t, got.Error(), tt.want)
			}
		})
	}
}
