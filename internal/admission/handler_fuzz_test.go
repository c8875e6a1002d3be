package admission

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	admissionv1 "k8s.io/api/admission/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/lockstep-dev/lockstep/api/v1alpha1"
	"github.com/lockstep-dev/lockstep/internal/broker/fakebroker"
	"github.com/lockstep-dev/lockstep/internal/catalog"
	"github.com/lockstep-dev/lockstep/internal/journal"
	"github.com/lockstep-dev/lockstep/test/fuzzrun"
)

// The differential test of the validators' admission.Handler
// (validatingHandler) against controller-runtime's admission.WithValidator
// serving the same Validator: the same answer (allowed, status code,
// reason, message, details, warnings) for every request.
//
// The domain: requests as the API server sends them to the validating
// webhook. Objects are typed objects the API server wrote; an UPDATE
// carries the old and the new object with the same status (the main
// resource cannot change it), a CREATE carries no status (the API server
// drops it), a DELETE carries the persisted object as the old object and
// no new one. Within that, the requests vary: creates, updates that change
// only metadata, that change the spec, that write the same spec in other
// bytes, of objects being deleted; deletes; dry runs; reconcile policies
// and adoption; CONNECT and an unknown operation.
//
// Both handlers run the real chain (field policies, spec checks, the
// reconcile policy, parameters from Secrets, catalog look-ups and checks)
// against the same catalog and a fake API server each, which holds the
// same objects before every request; the broker steps are replaced by a
// step whose answer the input chooses.

var handlerTarget = fuzzrun.Target{
	Name:   "FuzzValidatingHandler",
	Seeds:  handlerSeeds(),
	Inputs: 600,
	Dict:   []string{"\x00", "\x01", "\x02", "\x03", "\x04", "\x05", "\x06", "\x07", "\x08", "\x09"},
}

// handlerSeeds are the choices of requestGen for each kind, operation and
// kind of update, each with another answer of the broker; mutations vary
// the rest.
func handlerSeeds() [][][]byte {
	var seeds [][][]byte
	for kind := range 2 {
		for op := range 7 {
			// kind, verdict, operation, dry run, object name, annotations,
			// spec edits, kind of update
			seeds = append(seeds, [][]byte{{byte(kind), byte(op % 4), byte(op), 0, 0, 0, 0, byte(op % 5), 1, 2, 3}})
		}
	}
	return seeds
}

func FuzzValidatingHandler(f *testing.F) {
	fuzzrun.Add(f, handlerTarget)
	f.Fuzz(func(t *testing.T, in []byte) { checkHandler(t, in) })
}

func TestValidatingHandlerAgreesWithWithValidator(t *testing.T) {
	fuzzrun.Run(t, handlerTarget, func(t *testing.T, in [][]byte) { checkHandler(t, in[0]) })
}

func checkHandler(t *testing.T, in []byte) {
	handlerWorlds.Lock()
	defer handlerWorlds.Unlock()
	g := &requestGen{Choices: fuzzrun.Choices{Data: in}}
	kind, verdict := g.Pick(2), g.Pick(4)
	req := g.request(kind)
	ours := handlerResponse(t, kind, verdict, req, false)
	stock := handlerResponse(t, kind, verdict, req, true)
	if !reflect.DeepEqual(ours.AdmissionResponse, stock.AdmissionResponse) {
		t.Fatalf("%s %s (dry run %v): the answers differ\nlockstep:      %s\nWithValidator: %s\nold: %s\nnew: %s",
			req.Operation, [...]string{"ServiceInstance", "ServiceBinding"}[kind], *req.DryRun,
			describeResponse(ours), describeResponse(stock), req.OldObject.Raw, req.Object.Raw)
	}
}

func describeResponse(r admission.Response) string {
	b, _ := json.Marshal(r.AdmissionResponse)
	return string(b)
}

// handlerWorlds are the chains of the two handlers, each with its own
// fake API server; the test runs one input at a time and puts back what a
// request wrote, so that each input finds both as handlerWorld says.
var handlerWorlds struct {
	sync.Mutex
	scheme *runtime.Scheme
	cache  *catalog.Cache
	worlds [2]*chainWorld // lockstep's handler, WithValidator's
}

// chainWorld is one fake API server and the validators that read it.
type chainWorld struct {
	client    client.WithWatch
	instances *Validator[Instance]
	bindings  *Validator[Binding]
}

// handlerResponse answers req with lockstep's handler, or with
// admission.WithValidator's when stock.
func handlerResponse(t *testing.T, kind, verdict int, req admission.Request, stock bool) admission.Response {
	w := &handlerWorlds
	if w.scheme == nil {
		w.scheme = runtime.NewScheme()
		for _, add := range []func(*runtime.Scheme) error{v1alpha1.AddToScheme, corev1.AddToScheme, coordinationv1.AddToScheme} {
			if err := add(w.scheme); err != nil {
				t.Fatal(err)
			}
		}
		cat := fakebroker.DefaultCatalog()
		w.cache = catalog.NewCache(time.Hour)
		w.cache.Store(catalog.NewEntry("acme", nil, &cat, nil, time.Now()))
	}
	i := 0
	if stock {
		i = 1
	}
	if w.worlds[i] == nil {
		c := fake.NewClientBuilder().WithScheme(w.scheme).WithObjects(handlerWorld()...).
			WithIndex(&v1alpha1.ServiceBinding{}, BindingInstanceField, BindingInstance).Build()
		deps := Deps{
			Reader: c, Writer: c, Secrets: c, Catalogs: w.cache, Journal: &journal.Journal{Client: c},
			Leases: &journal.Leases{Client: c, Duration: time.Minute, Wait: time.Millisecond}, Budget: 5 * time.Second,
			Broker: BrokerOptions{Log: logr.Discard()},
		}
		w.worlds[i] = &chainWorld{client: c, instances: NewInstanceValidator(deps, nil), bindings: NewBindingValidator(deps, nil)}
	}
	world := w.worlds[i]
	defer world.putBack(t)
	var wh *admission.Webhook
	if kind == 0 {
		world.instances.Steps = []Step[Instance]{scriptedStep[Instance]{verdict}}
		wh = InstanceValidatorWebhook(world.instances)
		if stock {
			wh = admission.WithValidator[Instance](w.scheme, world.instances)
		}
	} else {
		world.bindings.Steps = []Step[Binding]{scriptedStep[Binding]{verdict}}
		wh = BindingValidatorWebhook(world.bindings)
		if stock {
			wh = admission.WithValidator[Binding](w.scheme, world.bindings)
		}
	}
	return wh.Handler.Handle(context.Background(), req)
}

// putBack deletes what a request wrote: journal records and locks (the
// broker steps, which write the rest, are scripted).
func (w *chainWorld) putBack(t *testing.T) {
	ctx := context.Background()
	for _, obj := range []client.Object{&v1alpha1.BrokerOperation{}, &coordinationv1.Lease{}} {
		if err := w.client.DeleteAllOf(ctx, obj, client.InNamespace("team")); err != nil {
			t.Fatalf("putting the fake API server back: %v", err)
		}
		if err := w.client.DeleteAllOf(ctx, obj, client.InNamespace("lockstep-system")); err != nil {
			t.Fatalf("putting the fake API server back: %v", err)
		}
	}
}

// scriptedStep stands for the broker steps: it answers as verdict says.
type scriptedStep[T client.Object] struct{ verdict int }

func (s scriptedStep[T]) Name() string { return "broker" }

func (s scriptedStep[T]) Admit(_ context.Context, a *Attributes[T], _ *Target) (admission.Warnings, error) {
	switch s.verdict {
	case 1:
		return admission.Warnings{"the broker is still at it"}, nil
	case 2:
		return admission.Warnings{"asked"}, conflict("the broker refuses %s %q", a.Operation, a.Object().GetName())
	case 3:
		return nil, errors.New("the broker said no")
	}
	return nil, nil
}

// handlerWorld is what the fake API server holds: the broker, an instance
// with a binding, an instance being deleted, a Secret of parameters.
func handlerWorld() []client.Object {
	deleted := metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	return []client.Object{
		&v1alpha1.ServiceBroker{ObjectMeta: metav1.ObjectMeta{Name: "acme"}, Spec: v1alpha1.ServiceBrokerSpec{URL: "http://127.0.0.1:1"}},
		&v1alpha1.ServiceInstance{ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: "team", UID: "uid-db"},
			Spec: v1alpha1.ServiceInstanceSpec{BrokerName: "acme", ServiceName: "db", PlanName: "small", ExternalID: "ext-1"}},
		&v1alpha1.ServiceInstance{ObjectMeta: metav1.ObjectMeta{Name: "going", Namespace: "team", UID: "uid-going",
			DeletionTimestamp: &deleted, Finalizers: []string{v1alpha1.Finalizer}},
			Spec: v1alpha1.ServiceInstanceSpec{BrokerName: "acme", ServiceName: "db", PlanName: "small", ExternalID: "ext-2"}},
		&v1alpha1.ServiceBinding{ObjectMeta: metav1.ObjectMeta{Name: "creds", Namespace: "team", UID: "uid-creds"},
			Spec: v1alpha1.ServiceBindingSpec{InstanceName: "db", SecretName: "creds", ExternalID: "bind-1"}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "params", Namespace: "team"},
			Data: map[string][]byte{"json": []byte(`{"storageGB":5}`), "bad": []byte(`[1]`)}},
	}
}

// requestGen makes admission requests from a fuzz input's bytes.
type requestGen struct {
	fuzzrun.Choices
}

var (
	genParameters = []string{"", `{}`, `{"region":"eu"}`, `{"region":"us"}`, `{"storageGB":10}`, `{"storageGB":10.0}`,
		`{"region":"eu","storageGB":10}`, `{"storageGB":10,"region":"eu"}`, `[1]`, `{"storageGB":"ten"}`}
	genParametersFrom = [][]v1alpha1.ParametersFromSource{nil,
		{{SecretKeyRef: v1alpha1.SecretKeyReference{Name: "params", Key: "json"}}},
		{{SecretKeyRef: v1alpha1.SecretKeyReference{Name: "params", Key: "bad"}}},
		{{SecretKeyRef: v1alpha1.SecretKeyReference{Name: "missing", Key: "json"}}},
	}
	genAnnotations = []map[string]string{nil, nil,
		{v1alpha1.AnnotationReconcilePolicy: string(v1alpha1.PolicyManage)},
		{v1alpha1.AnnotationReconcilePolicy: string(v1alpha1.PolicyObserve)},
		{v1alpha1.AnnotationReconcilePolicy: string(v1alpha1.PolicyDetachOnDelete)},
		{v1alpha1.AnnotationReconcilePolicy: "sometimes"},
		{v1alpha1.AnnotationAdopt: "true"},
		{v1alpha1.AnnotationAdopt: "true", v1alpha1.AnnotationReconcilePolicy: string(v1alpha1.PolicyObserve)},
	}
)

func (g *requestGen) str(values ...string) string { return values[g.Pick(len(values))] }

func (g *requestGen) parameters() *runtime.RawExtension {
	if p := genParameters[g.Pick(len(genParameters))]; p != "" {
		return &runtime.RawExtension{Raw: []byte(p)}
	}
	return nil
}

// respelled returns the same parameters in other bytes, when there are.
func respelled(p *runtime.RawExtension) *runtime.RawExtension {
	if p == nil {
		return nil
	}
	switch string(p.Raw) {
	case `{"storageGB":10}`:
		return &runtime.RawExtension{Raw: []byte(`{"storageGB":10.0}`)}
	case `{"region":"eu","storageGB":10}`:
		return &runtime.RawExtension{Raw: []byte(`{"storageGB":1e1,"region":"eu"}`)}
	}
	return &runtime.RawExtension{Raw: append([]byte(" "), p.Raw...)}
}

func (g *requestGen) meta(name string) metav1.ObjectMeta {
	created := metav1.NewTime(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	return metav1.ObjectMeta{
		Name: name, Namespace: "team", UID: types.UID("uid-" + name), Generation: 1, CreationTimestamp: created,
		Annotations: genAnnotations[g.Pick(len(genAnnotations))],
		Finalizers:  []string{v1alpha1.Finalizer},
		ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kubectl", Operation: metav1.ManagedFieldsOperationUpdate,
			APIVersion: "lockstep.dev/v1alpha1", Time: &created, FieldsType: "FieldsV1",
			FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:spec":{"f:planName":{}}}`)}}},
	}
}

func (g *requestGen) instance() *v1alpha1.ServiceInstance {
	si := &v1alpha1.ServiceInstance{
		TypeMeta:   metav1.TypeMeta{APIVersion: "lockstep.dev/v1alpha1", Kind: "ServiceInstance"},
		ObjectMeta: g.meta(g.str("db", "db", "other", "going")),
		Spec:       v1alpha1.ServiceInstanceSpec{BrokerName: "acme", ServiceName: "db", PlanName: "small", ExternalID: "ext-1"},
	}
	for range g.Pick(4) {
		g.instanceEdit(&si.Spec)
	}
	return si
}

func (g *requestGen) instanceEdit(s *v1alpha1.ServiceInstanceSpec) {
	switch g.Pick(7) {
	case 0:
		s.BrokerName = g.str("acme", "acme", "", "gone")
	case 1:
		s.ServiceName = g.str("db", "db", "queue", "", "nope")
	case 2:
		s.PlanName = g.str("small", "large", "fixed", "", "nope")
	case 3:
		s.ExternalID = g.str("ext-1", "ext-9", "")
	case 4:
		s.Parameters = g.parameters()
	case 5:
		s.ParametersFrom = genParametersFrom[g.Pick(len(genParametersFrom))]
	case 6:
		s.ParametersFromGeneration = int64(g.Pick(2))
	}
}

func (g *requestGen) binding() *v1alpha1.ServiceBinding {
	b := &v1alpha1.ServiceBinding{
		TypeMeta:   metav1.TypeMeta{APIVersion: "lockstep.dev/v1alpha1", Kind: "ServiceBinding"},
		ObjectMeta: g.meta(g.str("creds", "other")),
		Spec:       v1alpha1.ServiceBindingSpec{InstanceName: "db", SecretName: "creds", ExternalID: "bind-1"},
	}
	for range g.Pick(4) {
		g.bindingEdit(&b.Spec)
	}
	return b
}

func (g *requestGen) bindingEdit(s *v1alpha1.ServiceBindingSpec) {
	switch g.Pick(5) {
	case 0:
		s.InstanceName = g.str("db", "going", "missing", "")
	case 1:
		s.SecretName = g.str("creds", "params", "")
	case 2:
		s.ExternalID = g.str("bind-1", "bind-2", "")
	case 3:
		s.Parameters = g.parameters()
	case 4:
		s.ParametersFrom = genParametersFrom[g.Pick(len(genParametersFrom))]
	}
}

// request makes a request for kind 0 (instances) or 1 (bindings).
func (g *requestGen) request(kind int) admission.Request {
	ops := []admissionv1.Operation{admissionv1.Create, admissionv1.Update, admissionv1.Update, admissionv1.Update,
		admissionv1.Delete, admissionv1.Connect, "PATCH"}
	op := ops[g.Pick(len(ops))]
	dryRun := g.Pick(3) == 1
	req := admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{
		UID: "req-1", Operation: op, DryRun: &dryRun,
		UserInfo: authenticationv1.UserInfo{Username: "alice", Groups: []string{"devs"}},
		Resource: metav1.GroupVersionResource{Group: "lockstep.dev", Version: "v1alpha1", Resource: "serviceinstances"},
	}}
	var old, new client.Object
	switch {
	case kind == 0 && op == admissionv1.Create:
		new = g.instance() // no status: the API server drops it
	case kind == 0:
		old, new = g.instancePair()
	case op == admissionv1.Create:
		new = g.binding()
	default:
		old, new = g.bindingPair()
	}
	if kind == 1 {
		req.Resource.Resource = "servicebindings"
	}
	req.Name, req.Namespace = new.GetName(), new.GetNamespace()
	switch op {
	case admissionv1.Create:
		req.Object = encoded(new)
	case admissionv1.Delete:
		req.OldObject = encoded(old)
	default:
		req.Object, req.OldObject = encoded(new), encoded(old)
	}
	return req
}

// encoded writes an object as the API server sends it.
func encoded(obj client.Object) runtime.RawExtension {
	b, err := json.Marshal(obj)
	if err != nil {
		panic(err)
	}
	return runtime.RawExtension{Raw: b}
}

// instancePair makes a persisted instance and an update of it; the update
// keeps the status, as the API server does.
func (g *requestGen) instancePair() (old, new *v1alpha1.ServiceInstance) {
	old = g.instance()
	old.Status = v1alpha1.ServiceInstanceStatus{ObservedGeneration: 1, DashboardURL: "https://dash",
		Conditions: []metav1.Condition{{Type: v1alpha1.ConditionReady, Status: metav1.ConditionTrue, Reason: "Provisioned",
			LastTransitionTime: old.CreationTimestamp, Message: "ready"}}}
	new = old.DeepCopy()
	g.update(&new.ObjectMeta, &old.ObjectMeta, func() {
		for range 1 + g.Pick(3) {
			g.instanceEdit(&new.Spec)
		}
	}, func() { new.Spec.Parameters = respelled(new.Spec.Parameters) })
	return old, new
}

func (g *requestGen) bindingPair() (old, new *v1alpha1.ServiceBinding) {
	old = g.binding()
	old.Status = v1alpha1.ServiceBindingStatus{ObservedGeneration: 1,
		Conditions: []metav1.Condition{{Type: v1alpha1.ConditionReady, Status: metav1.ConditionTrue, Reason: "Bound",
			LastTransitionTime: old.CreationTimestamp, Message: "ready"}}}
	new = old.DeepCopy()
	g.update(&new.ObjectMeta, &old.ObjectMeta, func() {
		for range 1 + g.Pick(3) {
			g.bindingEdit(&new.Spec)
		}
	}, func() { new.Spec.Parameters = respelled(new.Spec.Parameters) })
	return old, new
}

// update changes new as one kind of update does.
func (g *requestGen) update(new, old *metav1.ObjectMeta, editSpec, respell func()) {
	now := metav1.NewTime(time.Date(2026, 1, 3, 0, 0, 0, 0, time.UTC))
	new.ManagedFields[0].Time = &now
	switch g.Pick(5) {
	case 0: // metadata only
		new.Labels = map[string]string{"tier": g.str("gold", "silver")}
		new.Annotations = genAnnotations[g.Pick(len(genAnnotations))]
	case 1: // the spec
		new.Generation++
		editSpec()
	case 2: // an object being deleted: finalizers go, and the spec may change too
		old.DeletionTimestamp, new.DeletionTimestamp = &now, &now
		new.Finalizers = nil
		if g.Pick(2) == 0 {
			editSpec()
		}
	case 3: // the same spec in other bytes
		respell()
	case 4: // the spec, and a label
		new.Labels = map[string]string{"tier": "gold"}
		editSpec()
	}
}
