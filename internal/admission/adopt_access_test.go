package admission

import (
	"context"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionv1 "k8s.io/api/admission/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/lockstep-dev/lockstep/api/v1alpha1"
	"github.com/lockstep-dev/lockstep/internal/broker/fakebroker"
)

// asked is an Authorizer that records every question and answers with
// grants.
type asked struct {
	grants
	questions []authorizationv1.ResourceAttributes
}

func (a *asked) Allowed(ctx context.Context, user authenticationv1.UserInfo, attrs authorizationv1.ResourceAttributes) (bool, error) {
	a.questions = append(a.questions, attrs)
	return a.grants.Allowed(ctx, user, attrs)
}

// Adopting needs the verb "adopt" on the object's resource in its
// namespace: without it the request is refused with what is missing and
// how an administrator grants it, before anything reaches the broker.
func TestAdoptionNeedsItsOwnPermission(t *testing.T) {
	adopt := withAnnotations(v1alpha1.AnnotationAdopt, "true")
	held := fakebroker.Instance{ID: "ext-1", ServiceID: fakebroker.ServiceDBID, PlanID: fakebroker.PlanSmallID}
	tests := []struct {
		name     string
		grants   grants
		new      Instance
		dryRun   bool
		wantCode int32
		wantMsg  string
		// resource is the request's resource; empty: serviceinstances.
		resource metav1.GroupVersionResource
		// wantAsked is the one question asked, "" for none.
		wantAsked string
	}{
		{name: "no permission: refused", new: instance("small", "", adopt), wantCode: http.StatusForbidden, wantAsked: "adopt serviceinstances team/db",
			wantMsg: `user "ben" may not adopt: lockstep.dev/adopt=true takes over what the broker already holds, which needs the permission "adopt" on serviceinstances.lockstep.dev in namespace "team"; ` +
				`nothing was created and the broker was not called; a cluster administrator grants it with: kubectl create rolebinding lockstep-adopt --clusterrole=lockstep-adopt --user=ben -n team; ` +
				`or remove the annotation to create a new instance`},
		{name: "permission in another namespace only: refused", grants: grants{"ben adopt serviceinstances.lockstep.dev elsewhere/db"}, new: instance("small", "", adopt),
			wantCode: http.StatusForbidden, wantMsg: `user "ben" may not adopt`, wantAsked: "adopt serviceinstances team/db"},
		{name: "a dry run is refused as well", new: instance("small", "", adopt), dryRun: true,
			wantCode: http.StatusForbidden, wantMsg: `user "ben" may not adopt`, wantAsked: "adopt serviceinstances team/db"},
		{name: "the permission: adopted", grants: grants{"ben adopt serviceinstances.lockstep.dev team/db"}, new: instance("small", "", adopt),
			wantAsked: "adopt serviceinstances team/db"},
		{name: "a typed kind: the permission on its own resource is asked", new: instance("small", "", adopt),
			resource: metav1.GroupVersionResource{Group: "services.lockstep.dev", Version: "v1alpha1", Resource: "dbs"},
			grants:   grants{"ben adopt serviceinstances.lockstep.dev team/db"}, wantAsked: "adopt dbs.services.lockstep.dev team/db",
			wantCode: http.StatusForbidden, wantMsg: `needs the permission "adopt" on dbs.services.lockstep.dev in namespace "team"`},
		{name: "a typed kind with the permission on its resource: adopted", new: instance("small", "", adopt),
			resource: metav1.GroupVersionResource{Group: "services.lockstep.dev", Version: "v1alpha1", Resource: "dbs"},
			grants:   grants{"ben adopt dbs.services.lockstep.dev team/db"}, wantAsked: "adopt dbs.services.lockstep.dev team/db"},
		{name: "no adoption: nothing asked", new: instance("small", "", func(si *v1alpha1.ServiceInstance) { si.Spec.ExternalID = "ext-2" })},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t)
			h.broker.PutInstance(held)
			access := &asked{grants: tt.grants}
			d := h.deps
			d.Access = access
			v := NewInstanceValidator(d, nil)
			defer h.answers.Wait()
			ctx := admission.NewContextWithRequest(context.Background(), admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{
				Operation: admissionv1.Create, DryRun: &tt.dryRun, UserInfo: authenticationv1.UserInfo{Username: "ben"}, Resource: tt.resource,
			}})
			_, err := v.ValidateCreate(ctx, tt.new)
			var questions []string
			for _, q := range access.questions {
				resource := q.Resource
				if q.Group != v1alpha1.GroupVersion.Group {
					resource = resourceName(q)
				}
				questions = append(questions, q.Verb+" "+resource+" "+q.Namespace+"/"+q.Name)
			}
			if tt.wantAsked == "" {
				assert.Empty(t, questions)
			} else {
				assert.Equal(t, []string{tt.wantAsked}, questions)
			}
			if tt.wantCode == 0 {
				require.NoError(t, err)
				return
			}
			require.Error(t, err)
			var status apierrors.APIStatus
			require.ErrorAs(t, err, &status)
			assert.Equal(t, tt.wantCode, status.Status().Code)
			assert.Contains(t, err.Error(), tt.wantMsg)
			assert.Empty(t, h.broker.Calls(), "the broker is not called")
			assert.Empty(t, h.records(t))
			assert.Empty(t, leases(t, h))
		})
	}
}

func TestBindingAdoptionNeedsItsOwnPermission(t *testing.T) {
	h := newHarness(t, instance("small", ""))
	d := h.deps
	d.Access = grants{"ben adopt serviceinstances.lockstep.dev *"} // instances, not bindings
	_, err := admitAs(h, NewBindingValidator(d, nil), "ben", admissionv1.Create, nil,
		binding("", func(b *v1alpha1.ServiceBinding) { b.Annotations = map[string]string{v1alpha1.AnnotationAdopt: "true"} }))
	require.Error(t, err)
	assert.True(t, apierrors.IsForbidden(err))
	assert.Contains(t, err.Error(), `needs the permission "adopt" on servicebindings.lockstep.dev in namespace "team"`)
	assert.Contains(t, err.Error(), "or remove the annotation to create a new binding")
	assert.Empty(t, h.broker.Calls())
}
