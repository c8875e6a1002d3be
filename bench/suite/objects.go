package suite

import (
	"encoding/json"
	"fmt"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"

	"github.com/lockstep-dev/lockstep/api/v1alpha1"
	"github.com/lockstep-dev/lockstep/bench/env"
)

// requester is the user every benchmark request comes from.
var requester = authenticationv1.UserInfo{Username: "alice", UID: "alice-uid", Groups: []string{"devs", "system:authenticated"}}

// instance returns a ServiceInstance as the API server holds it after
// lockstep provisioned it: defaulted, with lockstep's finalizer, a status
// and the managedFields of a client-side apply, so that AdmissionReviews
// are the size real ones are.
func instance(ns, name, brokerName, service, plan, params string) *v1alpha1.ServiceInstance {
	created := metav1.NewTime(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	si := &v1alpha1.ServiceInstance{
		TypeMeta: metav1.TypeMeta{APIVersion: v1alpha1.GroupVersion.String(), Kind: "ServiceInstance"},
		ObjectMeta: metav1.ObjectMeta{
			Namespace: ns, Name: name, UID: types.UID(fmt.Sprintf("00000000-0000-4000-8000-%012x", hash(ns+"/"+name))),
			ResourceVersion: "1234", Generation: 1, CreationTimestamp: created,
			Labels:     map[string]string{"app.kubernetes.io/name": "orders", "app.kubernetes.io/part-of": "shop"},
			Finalizers: []string{v1alpha1.Finalizer},
			ManagedFields: []metav1.ManagedFieldsEntry{{
				Manager: "kubectl-client-side-apply", Operation: metav1.ManagedFieldsOperationUpdate,
				APIVersion: v1alpha1.GroupVersion.String(), Time: &created, FieldsType: "FieldsV1",
				FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:metadata":{"f:labels":{".":{},"f:app.kubernetes.io/name":{},"f:app.kubernetes.io/part-of":{}}},"f:spec":{".":{},"f:brokerName":{},"f:parameters":{".":{},"f:storageGB":{}},"f:planName":{},"f:serviceName":{}}}`)},
			}},
		},
		Spec: v1alpha1.ServiceInstanceSpec{
			BrokerName: brokerName, ServiceName: service, PlanName: plan,
			ExternalID: fmt.Sprintf("%08x-0000-4000-8000-%012x", hash(name)&0xffffffff, hash(ns+name)),
		},
		Status: v1alpha1.ServiceInstanceStatus{
			Conditions: []metav1.Condition{
				{Type: v1alpha1.ConditionReady, Status: metav1.ConditionTrue, Reason: "Provisioned", ObservedGeneration: 1,
					LastTransitionTime: created, Message: fmt.Sprintf("broker %q holds the instance as specified", brokerName)},
				{Type: v1alpha1.ConditionInSync, Status: metav1.ConditionTrue, Reason: "Committed", ObservedGeneration: 1,
					LastTransitionTime: created, Message: "what the broker holds equals this object"},
			},
			LastOperation: &v1alpha1.LastOperation{
				Verb: v1alpha1.VerbProvision, State: v1alpha1.StateSucceeded, User: requester.Username,
				OperationName: name + "-provision-1a2b3c4d", StartTime: &created, EndTime: &created,
			},
			ObservedGeneration: 1,
		},
	}
	if params != "" {
		si.Spec.Parameters = &runtime.RawExtension{Raw: []byte(params)}
	}
	return si
}

// hash is FNV-1a, to derive stable ids from names.
func hash(s string) uint64 {
	h := uint64(14695981039346656037)
	for i := 0; i < len(s); i++ {
		h ^= uint64(s[i])
		h *= 1099511628211
	}
	return h & 0xffffffffffff
}

// review encodes the AdmissionReview the API server would send for op on
// a ServiceInstance; old is nil on CREATE, new is nil on DELETE.
func review(op admissionv1.Operation, old, new *v1alpha1.ServiceInstance, dryRun bool) ([]byte, error) {
	obj := new
	if obj == nil {
		obj = old
	}
	req := &admissionv1.AdmissionRequest{
		UID:       types.UID(fmt.Sprintf("%s-%s-%x", op, obj.Name, hash(string(op)+obj.Namespace+obj.Name+fmt.Sprint(dryRun)))),
		Kind:      metav1.GroupVersionKind(env.LockstepInstance),
		Resource:  metav1.GroupVersionResource{Group: v1alpha1.GroupVersion.Group, Version: v1alpha1.GroupVersion.Version, Resource: "serviceinstances"},
		Name:      obj.Name,
		Namespace: obj.Namespace,
		Operation: op,
		UserInfo:  requester,
		DryRun:    &dryRun,
	}
	req.RequestKind, req.RequestResource = &req.Kind, &req.Resource
	var err error
	if new != nil {
		if req.Object.Raw, err = json.Marshal(new); err != nil {
			return nil, fmt.Errorf("encoding the object: %w", err)
		}
	}
	if old != nil {
		if req.OldObject.Raw, err = json.Marshal(old); err != nil {
			return nil, fmt.Errorf("encoding the old object: %w", err)
		}
	}
	options := map[admissionv1.Operation]string{
		admissionv1.Create: `{"kind":"CreateOptions","apiVersion":"meta.k8s.io/v1","fieldManager":"kubectl-client-side-apply"}`,
		admissionv1.Update: `{"kind":"UpdateOptions","apiVersion":"meta.k8s.io/v1","fieldManager":"kubectl-client-side-apply"}`,
		admissionv1.Delete: `{"kind":"DeleteOptions","apiVersion":"meta.k8s.io/v1","propagationPolicy":"Background"}`,
	}
	req.Options.Raw = []byte(options[op])
	return json.Marshal(admissionv1.AdmissionReview{
		TypeMeta: metav1.TypeMeta{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview"},
		Request:  req,
	})
}

// reviews pre-encodes n AdmissionReviews, so that encoding is not timed.
func reviews(n int, build func(i int) ([]byte, error)) ([][]byte, error) {
	out := make([][]byte, n)
	for i := range out {
		var err error
		if out[i], err = build(i); err != nil {
			return nil, err
		}
	}
	return out, nil
}
