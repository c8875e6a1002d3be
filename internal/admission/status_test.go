package admission

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	admissionv1 "k8s.io/api/admission/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
)

func TestStatusGuard(t *testing.T) {
	g := &StatusGuard{Writers: map[string]bool{"system:serviceaccount:lockstep-system:lockstep": true}}
	req := func(user, sub string) admission.Request {
		return admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{
			Name: "db", SubResource: sub, Operation: admissionv1.Update,
			Kind:     metav1.GroupVersionKind{Kind: "ServiceInstance"},
			UserInfo: authenticationv1.UserInfo{Username: user},
		}}
	}
	assert.True(t, g.Handle(context.Background(), req("system:serviceaccount:lockstep-system:lockstep", "status")).Allowed)
	assert.True(t, g.Handle(context.Background(), req("alice", "")).Allowed, "only the status subresource is guarded")

	r := g.Handle(context.Background(), req("alice", "status"))
	assert.False(t, r.Allowed)
	assert.Equal(t, int32(403), r.Result.Code)
	assert.Contains(t, r.Result.Message, `the status of ServiceInstance "db" is written by lockstep only`)
	assert.Contains(t, r.Result.Message, `user "alice" may change the spec instead`)

	record := func(user string, op admissionv1.Operation) admission.Request {
		return admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{
			Name: "db-provision-1", Operation: op,
			Kind:     metav1.GroupVersionKind{Kind: "BrokerOperation"},
			Resource: metav1.GroupVersionResource{Group: "lockstep.dev", Version: "v1alpha1", Resource: "brokeroperations"},
			UserInfo: authenticationv1.UserInfo{Username: user},
		}}
	}
	assert.True(t, g.Handle(context.Background(), record("system:serviceaccount:lockstep-system:lockstep", admissionv1.Create)).Allowed)
	for _, op := range []admissionv1.Operation{admissionv1.Create, admissionv1.Update} {
		r := g.Handle(context.Background(), record("alice", op))
		assert.False(t, r.Allowed, "a record written by someone else: %s", op)
		assert.Equal(t, int32(403), r.Result.Code)
		assert.Contains(t, r.Result.Message, `the operation record "db-provision-1" is written by lockstep only`)
	}
}
