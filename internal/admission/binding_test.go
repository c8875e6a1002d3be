package admission

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionv1 "k8s.io/api/admission/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/lockstep-dev/lockstep/api/v1alpha1"
	"github.com/lockstep-dev/lockstep/internal/broker/fakebroker"
	"github.com/lockstep-dev/lockstep/internal/credentials"
)

func binding(params string, mutate ...func(*v1alpha1.ServiceBinding)) Binding {
	b := &v1alpha1.ServiceBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "creds", Namespace: "team", UID: "b-uid"},
		Spec:       v1alpha1.ServiceBindingSpec{InstanceName: "db", SecretName: "creds", ExternalID: "bind-1"},
	}
	if params != "" {
		b.Spec.Parameters = &runtime.RawExtension{Raw: json.RawMessage(params)}
	}
	for _, m := range mutate {
		m(b)
	}
	return b
}

func (h *harness) admitBinding(op admissionv1.Operation, old, new Binding, dryRun bool) (admission.Warnings, error) {
	defer h.answers.Wait()
	ctx := admission.NewContextWithRequest(context.Background(), admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{
		Operation: op, DryRun: &dryRun, UserInfo: authenticationv1.UserInfo{Username: "alice"},
	}})
	switch op {
	case admissionv1.Create:
		return h.bindings.ValidateCreate(ctx, new)
	case admissionv1.Update:
		return h.bindings.ValidateUpdate(ctx, old, new)
	default:
		return h.bindings.ValidateDelete(ctx, old)
	}
}

func TestBindingValidator(t *testing.T) {
	db := instance("small", "")
	fixed := instance("fixed", "", func(si *v1alpha1.ServiceInstance) { si.Name = "fixed"; si.Spec.ExternalID = "ext-fixed" })
	foreign := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "creds", Namespace: "team"}, Data: map[string][]byte{"x": []byte("y")}}
	extra := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "extra", Namespace: "team"}, Data: map[string][]byte{"ca.crt": []byte("pem")}}
	tests := []struct {
		name      string
		op        admissionv1.Operation
		old, new  Binding
		dryRun    bool
		objects   []runtime.Object
		script    func(b *fakebroker.Broker)
		wantCode  int32
		wantMsg   string
		wantCalls map[fakebroker.Op]int
		wantStore bool
		// wantData are Secret entries besides the broker's credentials.
		wantData  map[string]string
		wantPhase v1alpha1.OperationPhase
	}{
		{name: "bind stores the credentials", op: admissionv1.Create, new: binding(`{"role":"reader"}`), objects: []runtime.Object{db},
			wantCalls: map[fakebroker.Op]int{fakebroker.OpBind: 1}, wantStore: true},
		{name: "bind writes the well-known entries: type from the service's first tag, provider from the broker", op: admissionv1.Create, new: binding(""), objects: []runtime.Object{db},
			wantCalls: map[fakebroker.Op]int{fakebroker.OpBind: 1}, wantStore: true, wantData: map[string]string{"type": "sql", "provider": "acme"}},
		{name: "bind applies the secret transforms", op: admissionv1.Create, objects: []runtime.Object{db, extra},
			new: binding("", func(b *v1alpha1.ServiceBinding) {
				b.Spec.BindingType = "postgresql"
				b.Spec.SecretTransforms = []v1alpha1.SecretTransform{
					{RenameKey: &v1alpha1.RenameKeyTransform{From: "username", To: "user"}},
					{AddKey: &v1alpha1.AddKeyTransform{Key: "login", Template: ptr.To("{{.user}}")}},
					{AddKeysFrom: &v1alpha1.AddKeysFromTransform{SecretRef: v1alpha1.LocalSecretReference{Name: "extra"}}},
					{RemoveKey: &v1alpha1.RemoveKeyTransform{Key: "uri"}},
				}
			}),
			wantCalls: map[fakebroker.Op]int{fakebroker.OpBind: 1}, wantStore: true,
			wantData: map[string]string{"type": "postgresql", "provider": "acme", "user": "user-bind-1", "login": "user-bind-1", "ca.crt": "pem", "username": "", "uri": ""}},
		{name: "a transform that does not parse is refused before the broker", op: admissionv1.Create, objects: []runtime.Object{db},
			new: binding("", func(b *v1alpha1.ServiceBinding) {
				b.Spec.SecretTransforms = []v1alpha1.SecretTransform{{AddKey: &v1alpha1.AddKeyTransform{Key: "uri", Template: ptr.To("{{.user")}}}
			}),
			wantCode: 422, wantMsg: `spec.secretTransforms[0].addKey.template: Invalid value: "{{.user": not a Go template`, wantCalls: map[fakebroker.Op]int{}},
		{name: "a transform that copies from a missing Secret is refused before the broker", op: admissionv1.Create, objects: []runtime.Object{db},
			new: binding("", func(b *v1alpha1.ServiceBinding) {
				b.Spec.SecretTransforms = []v1alpha1.SecretTransform{{AddKeysFrom: &v1alpha1.AddKeysFromTransform{SecretRef: v1alpha1.LocalSecretReference{Name: "nope"}}}}
			}),
			wantCode: 422, wantMsg: `spec.secretTransforms[0].addKeysFrom.secretRef.name: Not found: "nope"`, wantCalls: map[fakebroker.Op]int{}},
		{name: "a transform that cannot apply to the credentials: the bind is undone", op: admissionv1.Create, objects: []runtime.Object{db},
			new: binding("", func(b *v1alpha1.ServiceBinding) {
				b.Spec.SecretTransforms = []v1alpha1.SecretTransform{{RenameKey: &v1alpha1.RenameKeyTransform{From: "hostname", To: "host"}}}
			}),
			wantCode: 422, wantMsg: `spec.secretTransforms[0].renameKey.from: Invalid value: "hostname": the Secret holds no such key at this point (it holds: password, provider, type, uri, username); ` +
				`check the key, or the transforms before this one; lockstep undoes it at the broker (orphan mitigation: its BrokerOperation shows the progress); nothing was created: ` +
				`correct spec.secretTransforms for the keys the Secret holds, then create the binding again`,
			wantCalls: map[fakebroker.Op]int{fakebroker.OpBind: 1}, wantPhase: v1alpha1.PhaseOrphaned},
		{name: "dry-run bind calls nobody", op: admissionv1.Create, new: binding(""), objects: []runtime.Object{db}, dryRun: true,
			wantCalls: map[fakebroker.Op]int{}},
		{name: "missing instance", op: admissionv1.Create, new: binding(""),
			wantCode: 422, wantMsg: "no ServiceInstance of this name", wantCalls: map[fakebroker.Op]int{}},
		{name: "instance being deleted", op: admissionv1.Create, new: binding(""),
			objects:  []runtime.Object{instance("small", "", func(si *v1alpha1.ServiceInstance) { now := metav1.Now(); si.DeletionTimestamp = &now })},
			wantCode: http.StatusConflict, wantMsg: "is being deleted", wantCalls: map[fakebroker.Op]int{}},
		{name: "plan not bindable", op: admissionv1.Create, new: binding("", func(b *v1alpha1.ServiceBinding) { b.Spec.InstanceName = "fixed" }),
			objects: []runtime.Object{fixed}, wantCode: 422, wantMsg: "is not bindable", wantCalls: map[fakebroker.Op]int{}},
		{name: "bind schema", op: admissionv1.Create, new: binding(`{"role":"root"}`), objects: []runtime.Object{db},
			wantCode: 422, wantMsg: "spec.parameters.role", wantCalls: map[fakebroker.Op]int{}},
		{name: "foreign secret", op: admissionv1.Create, new: binding(""), objects: []runtime.Object{db, foreign},
			wantCode: http.StatusConflict, wantMsg: "lockstep never overwrites it", wantCalls: map[fakebroker.Op]int{}},
		{name: "bind refused", op: admissionv1.Create, new: binding(""), objects: []runtime.Object{db},
			script: func(b *fakebroker.Broker) {
				b.Script(fakebroker.OpBind, fakebroker.Respond{Status: 409, Description: "exists"})
			},
			wantCode: http.StatusConflict, wantMsg: `broker "acme" refused to bind instance "db" for binding "creds": "exists" (HTTP 409)`,
			wantCalls: map[fakebroker.Op]int{fakebroker.OpBind: 1}},
		{name: "async bind then GET", op: admissionv1.Create, new: binding(""), objects: []runtime.Object{db},
			script: func(b *fakebroker.Broker) {
				b.Script(fakebroker.OpBind, fakebroker.Respond{Async: &fakebroker.Async{InProgressPolls: 1}})
			},
			wantCalls: map[fakebroker.Op]int{fakebroker.OpBind: 1, fakebroker.OpBindingLastOperation: 2, fakebroker.OpGetBinding: 1}, wantStore: true},
		{name: "async bind whose end cannot be learned: outcome unknown, followed", op: admissionv1.Create, new: binding(""), objects: []runtime.Object{db},
			script: func(b *fakebroker.Broker) {
				b.Script(fakebroker.OpBind, fakebroker.Respond{Async: &fakebroker.Async{}})
				b.Always(fakebroker.OpBindingLastOperation, fakebroker.Respond{Status: 503, Description: "restarting"})
			},
			wantCode: http.StatusServiceUnavailable, wantMsg: "the outcome is unknown: the binding is not created; lockstep keeps asking the broker, and if the broker created the binding, lockstep unbinds it",
			wantCalls: map[fakebroker.Op]int{fakebroker.OpBind: 1, fakebroker.OpBindingLastOperation: 4}, wantPhase: v1alpha1.PhaseInProgress},
		{name: "instance's ServiceBroker gone: nothing to bind at", op: admissionv1.Create, new: binding(""),
			objects:  []runtime.Object{instance("small", "", func(si *v1alpha1.ServiceInstance) { si.Spec.BrokerName = "gone" })},
			wantCode: 422, wantMsg: `spec.instanceName: Invalid value: "db": instance "db" uses ServiceBroker "gone", which does not exist`,
			wantCalls: map[fakebroker.Op]int{}},
		{name: "delete with the instance's ServiceBroker gone says what to do", op: admissionv1.Delete, old: binding(""),
			objects:  []runtime.Object{instance("small", "", func(si *v1alpha1.ServiceInstance) { si.Spec.BrokerName = "gone" })},
			wantCode: http.StatusConflict, wantMsg: `binding "creds" cannot be deleted: its instance "db" uses ServiceBroker "gone", which no longer exists, so lockstep cannot unbind at the broker; ` +
				`the binding and its Secret stay as they were (no deletion was started); recreate ServiceBroker "gone" with the URL of the broker that holds the binding, then delete again; ` +
				`or to delete it without the broker (which then keeps what it holds): kubectl annotate servicebinding creds -n team lockstep.dev/reconcile-policy=detach-on-delete, then delete again`,
			wantCalls: map[fakebroker.Op]int{}},
		{name: "spec change", op: admissionv1.Update, old: binding(`{"role":"reader"}`), new: binding(`{"role":"writer"}`), objects: []runtime.Object{db},
			wantCode: 422, wantMsg: "delete and recreate", wantCalls: map[fakebroker.Op]int{}},
		{name: "unbind", op: admissionv1.Delete, old: binding(""), objects: []runtime.Object{db},
			wantCalls: map[fakebroker.Op]int{fakebroker.OpUnbind: 1}},
		{name: "unbind answered 500: outcome unknown, followed", op: admissionv1.Delete, old: binding(""), objects: []runtime.Object{db},
			script: func(b *fakebroker.Broker) {
				b.Script(fakebroker.OpUnbind, fakebroker.Respond{Status: 500, Description: "down"})
			},
			wantCode: http.StatusServiceUnavailable, wantMsg: `no answer came back: broker answered 500: "down"`,
			wantCalls: map[fakebroker.Op]int{fakebroker.OpUnbind: 1}, wantPhase: v1alpha1.PhaseInProgress},
		{name: "unbind refused", op: admissionv1.Delete, old: binding(""), objects: []runtime.Object{db},
			script: func(b *fakebroker.Broker) {
				b.Script(fakebroker.OpUnbind, fakebroker.Respond{Status: 400, Description: "protected"})
			},
			wantCode: http.StatusBadRequest, wantMsg: `the binding and its Secret "creds" stay as they were`,
			wantCalls: map[fakebroker.Op]int{fakebroker.OpUnbind: 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, tt.objects...)
			h.broker.PutInstance(fakebroker.Instance{ID: "ext-1", ServiceID: fakebroker.ServiceDBID, PlanID: fakebroker.PlanSmallID})
			if tt.op == admissionv1.Delete {
				h.broker.PutBinding(fakebroker.Binding{InstanceID: "ext-1", ID: "bind-1"})
			}
			if tt.script != nil {
				tt.script(h.broker)
			}
			_, err := h.admitBinding(tt.op, tt.old, tt.new, tt.dryRun)
			if tt.wantCode == 0 {
				require.NoError(t, err)
			} else {
				require.Error(t, err)
				var status apierrors.APIStatus
				require.ErrorAs(t, err, &status)
				assert.Equal(t, tt.wantCode, status.Status().Code, err.Error())
				assert.Contains(t, err.Error(), tt.wantMsg)
			}
			got := map[fakebroker.Op]int{}
			for _, c := range h.broker.Calls() {
				got[c.Op]++
			}
			assert.Equal(t, tt.wantCalls, got)
			h.assertJournal(t, len(got) > 0, tt.wantCode == 0, tt.wantPhase)

			var s corev1.Secret
			err = h.client.Get(context.Background(), client.ObjectKey{Namespace: "team", Name: "creds"}, &s)
			if tt.wantStore {
				require.NoError(t, err)
				held, ok := h.broker.Binding("ext-1", "bind-1")
				require.True(t, ok)
				assert.Equal(t, held.Credentials["password"], string(s.Data["password"]))
				assert.Equal(t, "b-uid", s.Labels[credentials.LabelBindingUID])
				for k, v := range tt.wantData {
					if v == "" {
						assert.NotContains(t, s.Data, k)
						continue
					}
					assert.Equal(t, v, string(s.Data[k]), "entry %q", k)
				}
			} else if err == nil {
				assert.Equal(t, foreign.Data, s.Data, "only the foreign Secret may exist, unchanged")
			}
		})
	}
}
