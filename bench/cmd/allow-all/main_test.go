package main

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/webhook"

	"github.com/lockstep-dev/lockstep/api/v1alpha1"
	"github.com/lockstep-dev/lockstep/bench/loadgen"
	"github.com/lockstep-dev/lockstep/internal/admission"
	"github.com/lockstep-dev/lockstep/internal/app"
	"github.com/lockstep-dev/lockstep/internal/certs"
)

func object(t *testing.T, externalID string, deleting bool) []byte {
	t.Helper()
	si := &v1alpha1.ServiceInstance{
		TypeMeta:   metav1.TypeMeta{APIVersion: v1alpha1.GroupVersion.String(), Kind: "ServiceInstance"},
		ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: "team", UID: "uid-1"},
		Spec:       v1alpha1.ServiceInstanceSpec{BrokerName: "acme", ServiceName: "db", PlanName: "small", ExternalID: externalID},
	}
	if deleting {
		now := metav1.Now()
		si.DeletionTimestamp = &now
	}
	raw, err := json.Marshal(si)
	require.NoError(t, err)
	return raw
}

func reviewOf(t *testing.T, op admissionv1.Operation, old, new []byte) []byte {
	t.Helper()
	req := &admissionv1.AdmissionRequest{UID: "r1", Operation: op, Name: "db", Namespace: "team",
		Kind: metav1.GroupVersionKind{Group: "lockstep.dev", Version: "v1alpha1", Kind: "ServiceInstance"}}
	req.Object.Raw, req.OldObject.Raw = new, old
	raw, err := json.Marshal(admissionv1.AdmissionReview{TypeMeta: metav1.TypeMeta{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview"}, Request: req})
	require.NoError(t, err)
	return raw
}

// start serves a mode on a free loopback port until the test ends.
func start(t *testing.T, mode string, bundle *certs.Bundle) string {
	t.Helper()
	dir := t.TempDir()
	require.NoError(t, bundle.Write(dir))
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	port := l.Addr().(*net.TCPAddr).Port
	require.NoError(t, l.Close())
	h, err := instanceHandler(mode, app.Scheme())
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- serve(ctx, webhook.Options{Host: "127.0.0.1", Port: port, CertDir: dir}, h) }()
	t.Cleanup(func() {
		cancel()
		assert.NoError(t, <-done)
	})
	addr := "127.0.0.1:" + strconv.Itoa(port)
	require.Eventually(t, func() bool {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err != nil {
			return false
		}
		_ = c.Close()
		return true
	}, 10*time.Second, 20*time.Millisecond)
	return "https://" + addr
}

func TestModes(t *testing.T) {
	bundle, err := certs.Generate([]string{"127.0.0.1"}, time.Hour)
	require.NoError(t, err)
	client, err := loadgen.NewReviewClient(bundle.CACert, 10*time.Second)
	require.NoError(t, err)
	defer client.Close()

	a, b := object(t, "ext-a", false), object(t, "ext-b", false)
	broken := []byte(`{"apiVersion":"lockstep.dev/v1alpha1","kind":"ServiceInstance","spec":{"planName":7}}`)
	tests := []struct {
		name     string
		op       admissionv1.Operation
		old, new []byte
		// readsObjects: modes that decode the objects answer 400 to a broken one.
		readsObjects map[string]bool
	}{
		{name: "same spec", op: admissionv1.Update, old: a, new: a},
		{name: "changed spec", op: admissionv1.Update, old: a, new: b},
		{name: "old being deleted", op: admissionv1.Update, old: object(t, "ext-a", true), new: b},
		{name: "create", op: admissionv1.Create, new: a},
		{name: "delete", op: admissionv1.Delete, old: a},
		{name: "broken new object", op: admissionv1.Update, old: a, new: broken, readsObjects: map[string]bool{"typed": true, "spec-first": true}},
		{name: "broken create", op: admissionv1.Create, new: broken, readsObjects: map[string]bool{"typed": true, "spec-first": true}},
	}
	for _, mode := range []string{"allow", "typed", "spec-first"} {
		t.Run(mode, func(t *testing.T) {
			url := start(t, mode, bundle) + admission.ValidateInstancePath
			for _, tt := range tests {
				t.Run(tt.name, func(t *testing.T) {
					want := loadgen.Expect{Allowed: true}
					if tt.readsObjects[mode] {
						want = loadgen.Expect{Code: http.StatusBadRequest}
					}
					resp, err := client.Post(context.Background(), url, reviewOf(t, tt.op, tt.old, tt.new))
					require.NoError(t, err)
					assert.NoError(t, want.Check(resp))
				})
			}
		})
	}
}

func TestUnknownMode(t *testing.T) {
	_, err := instanceHandler("deny", app.Scheme())
	assert.ErrorContains(t, err, `-mode "deny"`)
}
