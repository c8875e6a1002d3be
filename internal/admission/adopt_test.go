package admission

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/lockstep-dev/lockstep/api/v1alpha1"
	"github.com/lockstep-dev/lockstep/internal/broker/fakebroker"
	"github.com/lockstep-dev/lockstep/internal/catalog"
)

// TestAdoptInstance: a create annotated lockstep.dev/adopt=true reads the
// instance the broker holds instead of provisioning, and is allowed only
// when it equals the spec.
func TestAdoptInstance(t *testing.T) {
	adopt := withAnnotations(v1alpha1.AnnotationAdopt, "true")
	held := fakebroker.Instance{ID: "ext-1", ServiceID: fakebroker.ServiceDBID, PlanID: fakebroker.PlanSmallID,
		Parameters: map[string]any{"storageGB": 10.0}}
	heldWithSecret := held
	heldWithSecret.Parameters = map[string]any{"storageGB": 10.0, "region": "s3cr3t-eu"}
	adminSecret := paramsSecret("db-admin", map[string]string{"params": `{"region":"s3cr3t-eu"}`})
	tests := []struct {
		name string
		held *fakebroker.Instance
		new  Instance
		// hidden: the catalog says instances of the service cannot be read
		hidden   bool
		objects  []runtime.Object
		wantCode int32
		wantMsg  string
	}{
		{name: "equal: adopted", held: &held, new: instance("small", `{"storageGB": 10}`, adopt)},
		{name: "equal with the parameters from a Secret: adopted", held: &heldWithSecret, new: instance("small", `{"storageGB": 10}`, adopt, from("db-admin/params")),
			objects: []runtime.Object{adminSecret}},
		{name: "other parameters from a Secret: refused without the values", held: &heldWithSecret, new: instance("small", `{"storageGB": 10}`, adopt, from("other/params")),
			objects:  []runtime.Object{paramsSecret("other", map[string]string{"params": `{"region":"s3cr3t-us"}`})},
			wantCode: http.StatusConflict, wantMsg: `holds it with other parameters than the spec and its Secrets (spec.parametersFrom) say (the values are not shown`},
		{name: "other plan: refused with the broker's plan", held: &held, new: instance("large", `{"storageGB": 10}`, adopt),
			wantCode: http.StatusConflict, wantMsg: `instance "db" cannot adopt "ext-1": broker "acme" holds it with plan "small" (the spec says "large"); nothing was created; write the broker's values into the spec`},
		{name: "other parameters: refused with the broker's parameters", held: &held, new: instance("small", `{"storageGB": 20}`, adopt),
			wantCode: http.StatusConflict, wantMsg: `holds it with parameters {"storageGB":10} (the spec says {"storageGB":20})`},
		{name: "nothing at the broker: refused", new: instance("small", "", adopt),
			wantCode: http.StatusNotFound, wantMsg: `broker "acme" holds no instance with this id; nothing was created`},
		{name: "broker cannot show instances: refused", held: &held, new: instance("small", `{"storageGB": 10}`, adopt), hidden: true,
			wantCode: 422, wantMsg: `broker "acme" does not let lockstep read instances of service "db" (instances_retrievable is false)`},
		{name: "no external id: refused", new: instance("small", "", adopt, func(si *v1alpha1.ServiceInstance) { si.Spec.ExternalID = "" }),
			wantCode: 422, wantMsg: `spec.externalID: Required value: lockstep.dev/adopt=true adopts what the broker holds under this id`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, tt.objects...)
			if tt.held != nil {
				h.broker.PutInstance(*tt.held)
			}
			if tt.hidden {
				cat := fakebroker.DefaultCatalog()
				for i := range cat.Services {
					cat.Services[i].InstancesRetrievable = false
				}
				entry, _ := h.cache.Get("acme")
				h.cache.Store(catalog.NewEntry("acme", entry.Client, &cat, nil, time.Now()))
			}
			_, err := h.admit(admissionv1.Create, nil, tt.new, false)
			if tt.wantCode == 0 {
				require.NoError(t, err)
			} else {
				require.Error(t, err)
				var status apierrors.APIStatus
				require.ErrorAs(t, err, &status)
				assert.Equal(t, tt.wantCode, status.Status().Code, err.Error())
				assert.Contains(t, err.Error(), tt.wantMsg)
				assert.NotContains(t, err.Error(), secretMark)
			}
			assert.Zero(t, h.broker.Count(fakebroker.OpProvision, fakebroker.OpUpdate, fakebroker.OpDeprovision), "adoption changes nothing at the broker")
			var ops v1alpha1.BrokerOperationList
			require.NoError(t, h.client.List(context.Background(), &ops))
			if tt.new.Spec.ExternalID == "" || tt.hidden {
				assert.Empty(t, ops.Items, "refused before the broker step")
				return
			}
			require.Len(t, ops.Items, 1)
			assert.Equal(t, v1alpha1.VerbAdopt, ops.Items[0].Spec.Verb)
		})
	}
}

func TestAdoptBinding(t *testing.T) {
	db := instance("small", "")
	adopted := func(b *v1alpha1.ServiceBinding) { b.Annotations = map[string]string{v1alpha1.AnnotationAdopt: "true"} }
	t.Run("equal: adopted, credentials in the Secret", func(t *testing.T) {
		h := newHarness(t, db)
		h.broker.PutInstance(fakebroker.Instance{ID: "ext-1", ServiceID: fakebroker.ServiceDBID, PlanID: fakebroker.PlanSmallID})
		h.broker.PutBinding(fakebroker.Binding{InstanceID: "ext-1", ID: "bind-1", Credentials: map[string]any{"password": "s3cret"}})
		_, err := h.admitBinding(admissionv1.Create, nil, binding("", adopted), false)
		require.NoError(t, err)
		assert.Zero(t, h.broker.Count(fakebroker.OpBind))
		var s corev1.Secret
		require.NoError(t, h.client.Get(context.Background(), client.ObjectKey{Namespace: "team", Name: "creds"}, &s))
		assert.Equal(t, "s3cret", string(s.Data["password"]))
	})
	t.Run("nothing at the broker: refused", func(t *testing.T) {
		h := newHarness(t, []runtime.Object{db}...)
		h.broker.PutInstance(fakebroker.Instance{ID: "ext-1", ServiceID: fakebroker.ServiceDBID, PlanID: fakebroker.PlanSmallID})
		_, err := h.admitBinding(admissionv1.Create, nil, binding("", adopted), false)
		require.Error(t, err)
		assert.Contains(t, err.Error(), `broker "acme" holds no binding with this id for instance "db"; nothing was created`)
	})
}
