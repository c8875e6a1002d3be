package controllertest

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/lockstep-dev/lockstep/api/v1alpha1"
	"github.com/lockstep-dev/lockstep/internal/broker/fakebroker"
	"github.com/lockstep-dev/lockstep/internal/broker/osbapi"
	"github.com/lockstep-dev/lockstep/internal/journal"
	"github.com/lockstep-dev/lockstep/internal/typed/object"
	"github.com/lockstep-dev/lockstep/internal/typed/render"
)

// InstallTypedKind renders the typed kind of service, as lockstep does
// for ServiceBroker brokerName, installs its CRD through cfg (a real API
// server) and returns the kind once the API server serves it (in
// discovery, so that kubectl finds it too). When the test ends the CRD
// is removed and waited on until gone (the next test may install it
// again); the objects it still has are let go of (their finalizers are
// removed here, not waiting for lockstep's reconciler of the kind to
// remove each at the broker first).
func InstallTypedKind(t testing.TB, cfg *rest.Config, brokerName string, service *osbapi.Service) (object.Kind, *apiextensionsv1.CustomResourceDefinition) {
	t.Helper()
	crd, _, err := render.Render(brokerName, service, render.Options{})
	require.NoError(t, err)
	kind, ok := object.KindOf(crd)
	require.True(t, ok, "the rendered CRD %s is a typed kind", crd.Name)
	_, err = envtest.InstallCRDs(cfg, envtest.CRDInstallOptions{CRDs: []*apiextensionsv1.CustomResourceDefinition{crd}})
	require.NoError(t, err)
	scheme := runtime.NewScheme()
	require.NoError(t, apiextensionsv1.AddToScheme(scheme))
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	require.NoError(t, err)
	t.Cleanup(func() {
		deleteTypedKind(t, c, crd, func(ctx context.Context) {
			list := &unstructured.UnstructuredList{}
			list.SetGroupVersionKind(kind.GVK.GroupVersion().WithKind(crd.Spec.Names.ListKind))
			if c.List(ctx, list) != nil {
				return
			}
			for i := range list.Items {
				if u := &list.Items[i]; u.GetDeletionTimestamp() != nil && len(u.GetFinalizers()) > 0 {
					_ = c.Patch(ctx, u, client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`)))
				}
			}
		})
	})
	return kind, crd
}

// DeleteTypedKind deletes a typed kind's CRD and waits until it is gone.
func DeleteTypedKind(t testing.TB, c client.Client, crd *apiextensionsv1.CustomResourceDefinition) {
	t.Helper()
	deleteTypedKind(t, c, crd, func(context.Context) {})
}

// deleteTypedKind deletes crd and waits until it is gone, calling meanwhile
// on every poll.
func deleteTypedKind(t testing.TB, c client.Client, crd *apiextensionsv1.CustomResourceDefinition, meanwhile func(context.Context)) {
	t.Helper()
	ctx := context.Background()
	require.NoError(t, client.IgnoreNotFound(c.Delete(ctx, crd)))
	require.Eventually(t, func() bool {
		meanwhile(ctx)
		return apierrors.IsNotFound(c.Get(ctx, client.ObjectKeyFromObject(crd), &apiextensionsv1.CustomResourceDefinition{}))
	}, 60*time.Second, 100*time.Millisecond, "CRD %s is gone", crd.Name)
}

// ProvisionedTyped creates through c an object of typed kind (of the
// test broker's service "db", plan "small"), with annotations, as
// admission leaves it once broker b provisioned it: with lockstep's
// finalizer, the committed record of its provision next to it, and the
// instance, under the external id <namespace>-<name>, at b.
func ProvisionedTyped(t testing.TB, c client.Client, b *fakebroker.Broker, kind object.Kind, ns, name string, annotations map[string]string) *unstructured.Unstructured {
	t.Helper()
	ctx := context.Background()
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(kind.GVK)
	u.SetNamespace(ns)
	u.SetName(name)
	u.SetFinalizers([]string{v1alpha1.Finalizer})
	u.SetAnnotations(annotations)
	externalID := ns + "-" + name
	require.NoError(t, unstructured.SetNestedMap(u.Object, map[string]any{
		"plan": fakebroker.PlanSmall, "brokerName": kind.Broker, "externalID": externalID,
		"parameters": map[string]any{"storageGB": int64(10)},
	}, "spec"))
	require.NoError(t, c.Create(ctx, u))
	si, err := object.ToInstance(u, kind)
	require.NoError(t, err)

	now := metav1.Now()
	op := &v1alpha1.BrokerOperation{
		ObjectMeta: metav1.ObjectMeta{Name: name + "-provision", Namespace: ns, Labels: map[string]string{journal.LabelTargetUID: string(u.GetUID())}},
		Spec: v1alpha1.BrokerOperationSpec{
			Target: v1alpha1.OperationTarget{Kind: v1alpha1.InstanceKind(si), APIGroup: v1alpha1.InstanceAPIGroup(si),
				Name: name, UID: u.GetUID(), ExternalID: externalID},
			BrokerName: kind.Broker, ServiceID: fakebroker.ServiceDBID, PlanID: fakebroker.PlanSmallID, Verb: v1alpha1.VerbProvision,
			Requester: v1alpha1.Requester{Username: "alice"}, SpecHash: journal.SpecHash(si.Spec), Generation: u.GetGeneration(),
		},
	}
	op.Status = v1alpha1.BrokerOperationStatus{Phase: v1alpha1.PhaseCommitted, StartTime: &now, CompletionTime: &now, HTTPStatus: 201}
	require.NoError(t, c.Create(ctx, op)) // a record is written with its status
	b.PutInstance(fakebroker.Instance{ID: externalID, ServiceID: fakebroker.ServiceDBID, PlanID: fakebroker.PlanSmallID,
		Parameters: map[string]any{"storageGB": 10}})
	return u
}

// ReadyTyped waits until the status of the object of typed kind ns/name
// says Ready and InSync, and returns its model.
func ReadyTyped(t testing.TB, c client.Reader, kind object.Kind, ns, name string) *v1alpha1.ServiceInstance {
	t.Helper()
	var si *v1alpha1.ServiceInstance
	require.Eventually(t, func() bool {
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(kind.GVK)
		if c.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, u) != nil {
			return false
		}
		var err error
		if si, err = object.ToInstance(u, kind); err != nil {
			return false
		}
		return meta.IsStatusConditionTrue(si.Status.Conditions, v1alpha1.ConditionReady) &&
			meta.IsStatusConditionTrue(si.Status.Conditions, v1alpha1.ConditionInSync)
	}, 30*time.Second, 100*time.Millisecond, "%s %s/%s is ready", kind.GVK.Kind, ns, name)
	return si
}
