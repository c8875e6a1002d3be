package controllertest

import (
	"encoding/base64"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	authenticationv1 "k8s.io/api/authentication/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/lockstep-dev/lockstep/api/v1alpha1"
	"github.com/lockstep-dev/lockstep/internal/broker/fakebroker"
	"github.com/lockstep-dev/lockstep/internal/broker/osbapi"
	"github.com/lockstep-dev/lockstep/internal/broker/osbclient"
	"github.com/lockstep-dev/lockstep/internal/brokercall"
	"github.com/lockstep-dev/lockstep/internal/journal"
)

// Self is lockstep's identity in the controller tests.
var Self = v1alpha1.ServiceAccountUser(v1alpha1.DefaultNamespace)

// Protocol is the one protocol of a broker call as a controller uses it,
// over c: the locks (which it never waits for) live in c in namespace
// (empty: the object's), the records in c next to their objects, and
// lockstep is Self.
func Protocol(c client.Client, namespace string) *brokercall.Protocol {
	return &brokercall.Protocol{
		Carrier: &journal.Carrier{Leases: &journal.Leases{Client: c, Namespace: namespace, Duration: time.Minute},
			Journal: &journal.Journal{Client: c, Namespace: namespace}, Log: logr.Discard()},
		Self: authenticationv1.UserInfo{Username: Self},
		Poll: osbclient.PollOptions{MinInterval: time.Millisecond, MaxInterval: time.Millisecond},
		Log:  logr.Discard(),
	}
}

// Identity decodes the originating identity a broker got with call.
func Identity(t testing.TB, call fakebroker.Call) osbclient.Identity {
	t.Helper()
	v := call.Header.Get(osbapi.HeaderOriginatingIdentity)
	platform, encoded, ok := strings.Cut(v, " ")
	if !ok || platform != osbapi.KubernetesPlatform {
		t.Fatalf("originating identity %q is not of the kubernetes platform", v)
	}
	raw, err := base64.StdEncoding.DecodeString(encoded)
	if err != nil {
		t.Fatalf("originating identity %q: %v", v, err)
	}
	var id osbclient.Identity
	if err := json.Unmarshal(raw, &id); err != nil {
		t.Fatalf("originating identity %q: %v", v, err)
	}
	return id
}
