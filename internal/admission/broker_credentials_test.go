package admission

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionv1 "k8s.io/api/admission/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/lockstep-dev/lockstep/api/v1alpha1"
)

// TestBrokerCredentials: a ServiceBroker names credentials lockstep may
// use for its writer only: a Secret in lockstep's own namespace that the
// writer may get. A create without credentials, and an update that keeps
// the reference and the URL, are not asked about.
func TestBrokerCredentials(t *testing.T) {
	broker := func(url, ns, name string) []byte {
		sb := v1alpha1.ServiceBroker{ObjectMeta: metav1.ObjectMeta{Name: "acme"}, Spec: v1alpha1.ServiceBrokerSpec{URL: url}}
		if name != "" {
			sb.Spec.AuthSecretRef = &v1alpha1.SecretReference{Namespace: ns, Name: name, Type: v1alpha1.AuthBasic}
		}
		raw, err := json.Marshal(sb)
		require.NoError(t, err)
		return raw
	}
	const url = "https://broker.example"
	tests := []struct {
		name     string
		op       admissionv1.Operation
		old, new []byte
		grants   grants
		wantCode int32 // 0: allowed
		wantMsg  string
		asked    int
	}{
		{name: "no credentials", op: admissionv1.Create, new: broker(url, "", "")},
		{name: "a Secret in lockstep's namespace the writer may get", op: admissionv1.Create, new: broker(url, "lockstep-system", "acme-auth"),
			grants: grants{"admin get secrets lockstep-system/acme-auth"}, asked: 1},
		{name: "a Secret in a user's namespace", op: admissionv1.Create, new: broker(url, "team", "acme-auth"), wantCode: 422,
			wantMsg: `ServiceBroker.lockstep.dev "acme" is invalid: spec.authSecretRef.namespace: Invalid value: "team": lockstep reads a broker's credentials only from its own namespace "lockstep-system", out of the users' namespaces; put the Secret there (kubectl create secret generic acme-auth -n lockstep-system --from-literal=username=... --from-literal=password=...) and name that namespace`},
		{name: "a Secret the writer may not get", op: admissionv1.Create, new: broker(url, "lockstep-system", "other-auth"), wantCode: 403, asked: 1,
			grants:  grants{"admin get secrets lockstep-system/acme-auth"},
			wantMsg: `ServiceBroker "acme": user "admin" may not get Secret "other-auth" in namespace "lockstep-system", and lockstep sends a broker's credentials only for a writer who may read them`},
		{name: "an update that points the credentials elsewhere", op: admissionv1.Update, old: broker(url, "lockstep-system", "acme-auth"),
			new: broker("https://mine.example", "lockstep-system", "acme-auth"), wantCode: 403, asked: 1,
			wantMsg: `user "admin" may not get Secret "acme-auth"`},
		{name: "an update that keeps reference and URL is not asked about", op: admissionv1.Update, old: broker(url, "team", "acme-auth"),
			new: broker(url, "team", "acme-auth")},
		{name: "an update that moves an old Secret into lockstep's namespace", op: admissionv1.Update, old: broker(url, "team", "acme-auth"),
			new: broker(url, "lockstep-system", "acme-auth"), grants: grants{"admin get secrets lockstep-system/acme-auth"}, asked: 1},
		{name: "an update of the URL of a broker whose Secret is elsewhere", op: admissionv1.Update, old: broker(url, "team", "acme-auth"),
			new: broker("https://mine.example", "team", "acme-auth"), wantCode: 422, wantMsg: `spec.authSecretRef.namespace: Invalid value: "team"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			scheme := runtime.NewScheme()
			require.NoError(t, v1alpha1.AddToScheme(scheme))
			access := &asked{grants: tt.grants}
			g := &BrokerGuard{Reader: fake.NewClientBuilder().WithScheme(scheme).Build(), Namespace: "lockstep-system", Access: access}
			resp := g.Handle(context.Background(), admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{
				Operation: tt.op, Name: "acme", UserInfo: authenticationv1.UserInfo{Username: "admin"},
				OldObject: runtime.RawExtension{Raw: tt.old}, Object: runtime.RawExtension{Raw: tt.new}}})
			assert.Len(t, access.questions, tt.asked, "SubjectAccessReviews")
			if tt.wantCode == 0 {
				assert.True(t, resp.Allowed, "%+v", resp.Result)
				return
			}
			require.False(t, resp.Allowed)
			assert.Equal(t, tt.wantCode, resp.Result.Code)
			assert.Contains(t, resp.Result.Message, tt.wantMsg)
		})
	}
}
