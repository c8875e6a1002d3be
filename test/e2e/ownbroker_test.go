package e2e

import (
	"bytes"
	"context"
	"encoding/base64"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/lockstep-dev/lockstep/api/v1alpha1"
	"github.com/lockstep-dev/lockstep/internal/broker/fakebroker"
)

// ownBrokerExample is what examples/own-broker.yaml holds: a Secret with
// basic-auth credentials and the ServiceBroker that names it.
type ownBrokerExample struct {
	raw    string
	secret corev1.Secret
	broker v1alpha1.ServiceBroker
}

func readOwnBrokerExample(t *testing.T, root string) ownBrokerExample {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(root, "examples", "own-broker.yaml"))
	require.NoError(t, err)
	ex := ownBrokerExample{raw: string(raw)}
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(raw), 4096)
	require.NoError(t, dec.Decode(&ex.secret))
	require.NoError(t, dec.Decode(&ex.broker))
	require.Equal(t, "Secret", ex.secret.Kind, "examples/own-broker.yaml holds the Secret first")
	require.Equal(t, "ServiceBroker", ex.broker.Kind, "then the ServiceBroker")
	ref := ex.broker.Spec.AuthSecretRef
	require.NotNil(t, ref, "the ServiceBroker names its Secret")
	require.Equal(t, ex.secret.Namespace+"/"+ex.secret.Name, ref.Namespace+"/"+ref.Name)
	require.Equal(t, v1alpha1.AuthBasic, ref.Type)
	require.NotEmpty(t, ex.secret.StringData["username"])
	require.NotEmpty(t, ex.secret.StringData["password"])
	return ex
}

// TestGuideOwnBroker runs the guide page docs/guide/own-broker.md as
// TestReadmeWalkthrough runs the walkthrough, against a test broker over
// real HTTP that requires the basic-auth credentials of
// examples/own-broker.yaml. The example is applied with its URL set to
// that broker's, as a person edits it; what kubectl prints is compared
// with the broker's URL read as the example's.
func TestGuideOwnBroker(t *testing.T) {
	repo, err := filepath.Abs("../..")
	require.NoError(t, err)
	ex := readOwnBrokerExample(t, repo)
	user, password := ex.secret.StringData["username"], ex.secret.StringData["password"]
	b, err := fakebroker.Start(fakebroker.WithBasicAuth(user, password))
	require.NoError(t, err)
	t.Cleanup(b.Close)

	// The repository as the person has it after editing the example.
	root := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(root, "examples"), 0o755))
	edited := strings.Replace(ex.raw, "url: "+ex.broker.Spec.URL, "url: "+b.URL(), 1)
	require.NotEqual(t, ex.raw, edited, "the example's url is on a line of its own")
	require.NoError(t, os.WriteFile(filepath.Join(root, "examples", "own-broker.yaml"), []byte(edited), 0o644))
	instance, err := os.ReadFile(filepath.Join(repo, "examples", "own-broker-instance.yaml"))
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(root, "examples", "own-broker-instance.yaml"), instance, 0o644))
	t.Cleanup(func() { unregisterOwnBroker(t, ex) })

	ns := namespace(t)
	runSteps(t, docSection(t, "docs/guide/own-broker.md", ""), root, walkthroughKubeconfig(t, ns), ns,
		func(out string) string { return strings.ReplaceAll(out, b.URL(), ex.broker.Spec.URL) })

	provisions := b.Calls(fakebroker.OpProvision)
	require.Len(t, provisions, 1, "the instance was provisioned at the broker")
	credentials := base64.StdEncoding.EncodeToString([]byte(user + ":" + password))
	assert.Equal(t, "Basic "+credentials, provisions[0].Header.Get("Authorization"), "with the example's credentials")
	assert.Equal(t, 1, b.Count(fakebroker.OpDeprovision), "and deprovisioned")

	// With a wrong password the ServiceBroker is not Ready, and says why.
	wrong := ownBrokerExample{secret: *ex.secret.DeepCopy(), broker: *ex.broker.DeepCopy()}
	wrong.secret.Name, wrong.secret.StringData["password"] = "wrong-password", "not-"+password
	wrong.broker.Name, wrong.broker.Spec.URL, wrong.broker.Spec.AuthSecretRef.Name = "wrong-password", b.URL(), wrong.secret.Name
	require.NoError(t, cluster.client.Create(context.Background(), &wrong.secret))
	require.NoError(t, cluster.client.Create(context.Background(), &wrong.broker))
	t.Cleanup(func() { unregisterOwnBroker(t, wrong) })
	var ready *metav1.Condition
	require.Eventually(t, func() bool {
		require.NoError(t, cluster.client.Get(context.Background(), client.ObjectKeyFromObject(&wrong.broker), &wrong.broker))
		ready = meta.FindStatusCondition(wrong.broker.Status.Conditions, v1alpha1.ConditionReady)
		return ready != nil
	}, 15*time.Second, 100*time.Millisecond, "the ServiceBroker with a wrong password gets a Ready condition")
	assert.Equal(t, metav1.ConditionFalse, ready.Status)
	assert.Contains(t, ready.Message, "401", "the broker's refusal is in the condition kubectl describe shows")
}

// unregisterOwnBroker deletes the example's ServiceBroker and Secret, so
// that no other test sees a broker it does not expect. The ServiceBroker
// can go once lockstep no longer manages any object at it.
func unregisterOwnBroker(t *testing.T, ex ownBrokerExample) {
	ctx := context.Background()
	sb := &v1alpha1.ServiceBroker{ObjectMeta: metav1.ObjectMeta{Name: ex.broker.Name}}
	assert.Eventually(t, func() bool {
		err := cluster.client.Delete(ctx, sb)
		return err == nil || apierrors.IsNotFound(err)
	}, 20*time.Second, 200*time.Millisecond, "deleting ServiceBroker %s", sb.Name)
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ex.secret.Namespace, Name: ex.secret.Name}}
	if err := cluster.client.Delete(ctx, secret); err != nil && !apierrors.IsNotFound(err) {
		t.Errorf("deleting Secret %s/%s: %v", secret.Namespace, secret.Name, err)
	}
}
