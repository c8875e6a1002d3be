package parametersfrom

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
)

// The keys of digests live in the Secret KeysSecret of lockstep's
// namespace: each data key but
// "current" is a key id and its value a key (at least 32 bytes), and
// "current" holds the id of the key new digests are made with. lockstep
// creates the Secret with one random key where it is missing, reads it at
// start, and again every KeysRefresh. It never changes the Secret once
// it exists: keys are the administrator's to rotate (docs/security.md).
//
// A rotation adds a key and makes it current; the old key stays, so that
// digests made under it still verify (nothing looks drifted), until
// nothing uses it any more: resync writes an instance's or binding's
// digest again under the current key once it finds the broker holds what
// the digest says, an update writes new ones, and operation records go
// with their retention.

// KeysSecret is the name of the Secret, in lockstep's namespace, that
// holds the keys of digests.
const KeysSecret = "lockstep-digest-keys"

// currentField is the Secret's data key that names the current key.
const currentField = "current"

// KeysRefresh is how often lockstep reads the keys' Secret again.
const KeysRefresh = 30 * time.Second

// EnsureKeys reads the keys from Secret name in namespace, and creates
// the Secret with one new random key when it is missing (c reads and
// writes it, past any cache).
func EnsureKeys(ctx context.Context, c client.Client, namespace, name string) (*Keys, error) {
	var s corev1.Secret
	err := c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, &s)
	if apierrors.IsNotFound(err) {
		created, cerr := createKeys(ctx, c, namespace, name)
		if !apierrors.IsAlreadyExists(cerr) {
			if cerr != nil {
				return nil, fmt.Errorf("creating Secret %s/%s with the key of parameters' digests: %w; create it yourself: "+
					"kubectl create secret generic %s -n %s --from-literal=current=1 --from-literal=1=$(openssl rand -hex 32)", namespace, name, cerr, name, namespace)
			}
			return KeysFromSecret(created)
		}
		err = c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, &s) // another replica created it
	}
	if err != nil {
		return nil, fmt.Errorf("reading Secret %s/%s with the keys of parameters' digests: %w", namespace, name, err)
	}
	return KeysFromSecret(&s)
}

func createKeys(ctx context.Context, c client.Client, namespace, name string) (*corev1.Secret, error) {
	key := make([]byte, minKeyBytes)
	if _, err := rand.Read(key); err != nil {
		return nil, err
	}
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name,
		Labels: map[string]string{"app.kubernetes.io/name": "lockstep", "app.kubernetes.io/component": "digest-keys"}},
		Type: corev1.SecretTypeOpaque,
		Data: map[string][]byte{currentField: []byte("1"), "1": []byte(hex.EncodeToString(key))}}
	return s, c.Create(ctx, s)
}

// KeysFromSecret reads the keys a Secret holds. The error names the
// Secret and what is wrong, never a key.
func KeysFromSecret(s *corev1.Secret) (*Keys, error) {
	current := string(s.Data[currentField])
	byID := map[string][]byte{}
	for id, k := range s.Data {
		if id != currentField {
			byID[id] = k
		}
	}
	k, err := NewKeys(current, byID)
	if err != nil {
		return nil, fmt.Errorf("Secret %s/%s does not hold the keys of parameters' digests as lockstep reads them (%v): "+
			"each data key but %q is a key id, its value the key, and %q names the current key", s.Namespace, s.Name, err, currentField, currentField)
	}
	return k, nil
}

// KeysWatch reads the keys' Secret every Every (KeysRefresh when zero)
// and makes what it holds the keys of digests (UseKeys); a Secret it
// cannot read or use leaves the keys as they were, and is logged. It is a
// manager.Runnable of every replica.
type KeysWatch struct {
	Reader          client.Reader
	Namespace, Name string
	Every           time.Duration
}

// NeedLeaderElection is false: every replica makes and verifies digests.
func (w *KeysWatch) NeedLeaderElection() bool { return false }

// Start implements manager.Runnable.
func (w *KeysWatch) Start(ctx context.Context) error {
	logger := log.FromContext(ctx).WithName("digest-keys")
	every := w.Every
	if every <= 0 {
		every = KeysRefresh
	}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
		var s corev1.Secret
		if err := w.Reader.Get(ctx, client.ObjectKey{Namespace: w.Namespace, Name: w.Name}, &s); err != nil {
			logger.Error(err, "could not read the keys of parameters' digests; the keys stay as they were")
			continue
		}
		k, err := KeysFromSecret(&s)
		if err != nil {
			logger.Error(err, "the keys stay as they were")
			continue
		}
		if prev := keys.Load(); prev.current != k.current {
			logger.Info("new digests are made under another key", "key", k.current)
		}
		UseKeys(k)
	}
}
