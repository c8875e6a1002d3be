package robustness

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/lockstep-dev/lockstep/internal/broker/embedded"
	"github.com/lockstep-dev/lockstep/internal/broker/embedded/registry"
	"github.com/lockstep-dev/lockstep/internal/broker/embedded/store"
	"github.com/lockstep-dev/lockstep/internal/broker/embedded/store/bboltstore"
	"github.com/lockstep-dev/lockstep/internal/broker/fakebroker"
	"github.com/lockstep-dev/lockstep/internal/broker/osbapi"
	"github.com/lockstep-dev/lockstep/internal/broker/osbclient"
	"github.com/lockstep-dev/lockstep/test/robustness/check"
	"github.com/lockstep-dev/lockstep/test/robustness/faultproxy"
)

// The two brokers of a run, by their ServiceBroker names.
const (
	fakeBroker     = "fake"
	embeddedBroker = "embedded"
)

// Credential markers: every password the brokers hand out begins with
// one.
const (
	fakeMarker     = "robustness-fake-credential-"
	embeddedMarker = "robustness-embedded-credential-"
)

// brokerUnderTest is a broker behind its fault proxy.
type brokerUnderTest struct {
	name  string
	proxy *faultproxy.Proxy
	// service and plans are what clients ask for; planIDs maps
	// "<service>/<plan>" to ids and createOnly to the create-only
	// parameters, from the broker's catalog.
	service    string
	plans      []string
	planIDs    map[string]string
	createOnly map[string][]string
	// bindable says that bindings take a role parameter.
	roleParameter bool

	fake *fakebroker.Broker
	// async is the share of the fake broker's changes answered 202, and
	// failAsync the share whose operation then fails (a fault): the most
	// any open fault window asks for, and at least baseAsync.
	mu        sync.Mutex
	async     float64
	failAsync float64
	baseAsync float64
	// windows are the fault windows open at the broker, by lane.
	windows map[int]faultWindow
	failed  int // asynchronous answers made to fail
	draws   *draws

	embedded *embedded.Broker
	store    store.Store
	srv      *http.Server
}

// startFake starts the test broker behind a proxy. A share async of its
// changes are asynchronous (they end on their own within two seconds).
func startFake(d *draws, async float64) (*brokerUnderTest, error) {
	fb, err := fakebroker.Start(fakebroker.WithCredentialMarker(fakeMarker))
	if err != nil {
		return nil, err
	}
	b := &brokerUnderTest{name: fakeBroker, fake: fb, service: fakebroker.ServiceDB,
		plans: []string{fakebroker.PlanSmall, fakebroker.PlanLarge}, roleParameter: true, async: async, baseAsync: async, draws: d}
	fb.SetResponder(b.respond)
	if err := b.front(fb.URL()); err != nil {
		fb.Close()
		return nil, err
	}
	return b, nil
}

// respond picks the fake broker's answer: the default, or an asynchronous
// one (which fails while that fault is on).
func (b *brokerUnderTest) respond(r fakebroker.Request) (fakebroker.Respond, bool) {
	switch r.Op {
	case fakebroker.OpProvision, fakebroker.OpUpdate, fakebroker.OpDeprovision, fakebroker.OpBind, fakebroker.OpUnbind:
	default:
		return fakebroker.Respond{}, false
	}
	b.mu.Lock()
	async, fail := b.async, b.failAsync
	b.mu.Unlock()
	key := fmt.Sprintf("fake/%s/%s/%s", r.Op, r.InstanceID, r.BindingID)
	failing := b.draws.float(key+"/fail") < fail
	if !failing && b.draws.float(key+"/async") >= async {
		return fakebroker.Respond{}, false
	}
	if failing {
		b.mu.Lock()
		b.failed++
		b.mu.Unlock()
	}
	after := time.Duration(200+int(1800*b.draws.float(key+"/after"))) * time.Millisecond
	return fakebroker.Respond{Async: &fakebroker.Async{
		InProgressPolls: 1 << 20, After: after, UnlessRefused: true, Fail: failing,
		Description: map[bool]string{true: "robustness: the operation failed on purpose", false: ""}[failing],
	}}, true
}

// setAsync sets the share of asynchronous changes outside fault windows,
// and closes every window.
func (b *brokerUnderTest) setAsync(async float64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.baseAsync, b.windows = async, nil
	b.applyLocked()
}

// faultWindow is a window of faults open at a broker: the requests it breaks
// (nil: none), and the shares of the test broker's changes it makes
// asynchronous and failing.
type faultWindow struct {
	faults      func(faultproxy.Request) faultproxy.Fault
	async, fail float64
}

// open opens w in lane (replacing the lane's window); shut closes it.
// Windows of several lanes are open at once: a request gets the fault of
// the first lane that breaks it.
func (b *brokerUnderTest) open(lane int, w faultWindow) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.windows == nil {
		b.windows = map[int]faultWindow{}
	}
	b.windows[lane] = w
	b.applyLocked()
}

func (b *brokerUnderTest) shut(lane int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	delete(b.windows, lane)
	b.applyLocked()
}

func (b *brokerUnderTest) applyLocked() {
	b.async, b.failAsync = b.baseAsync, 0
	var lanes []int
	for lane, w := range b.windows {
		b.async, b.failAsync = max(b.async, w.async), max(b.failAsync, w.fail)
		if w.faults != nil {
			lanes = append(lanes, lane)
		}
	}
	if len(lanes) == 0 {
		b.proxy.SetFaults(nil)
		return
	}
	slices.Sort(lanes)
	picks := make([]func(faultproxy.Request) faultproxy.Fault, len(lanes))
	for i, lane := range lanes {
		picks[i] = b.windows[lane].faults
	}
	b.proxy.SetFaults(func(q faultproxy.Request) faultproxy.Fault {
		for _, pick := range picks {
			if f := pick(q); f.Kind != faultproxy.Pass {
				return f
			}
		}
		return faultproxy.Fault{}
	})
}

// startEmbedded starts the embedded broker in this process, serving the
// suite's bundle, with its store in dir, behind a proxy.
func startEmbedded(ctx context.Context, dir, bundles string) (*brokerUnderTest, error) {
	st, err := bboltstore.Open(filepath.Join(dir, "embedded-broker.db"), bboltstore.Options{})
	if err != nil {
		return nil, err
	}
	logFile, err := os.Create(filepath.Join(dir, "embedded-broker.log"))
	if err != nil {
		_ = st.Close()
		return nil, err
	}
	eb, err := embedded.New(embedded.Config{
		Store: st, Registries: []registry.Registry{registry.NewLocal("robustness", bundles, 1<<20)},
		WorkDir: filepath.Join(dir, "embedded-broker"), SyncWindow: time.Second, RetryAfter: 200 * time.Millisecond,
		Logger: slog.New(slog.NewJSONHandler(logFile, nil)),
	})
	if err != nil {
		_ = st.Close()
		return nil, err
	}
	if err := eb.Start(ctx); err != nil {
		_ = eb.Close()
		_ = st.Close()
		return nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		_ = eb.Close()
		_ = st.Close()
		return nil, err
	}
	b := &brokerUnderTest{name: embeddedBroker, embedded: eb, store: st, service: "robust", plans: []string{"one", "two"},
		srv: &http.Server{Handler: eb, ReadHeaderTimeout: 10 * time.Second}}
	go func() { _ = b.srv.Serve(ln) }()
	if err := b.front("http://" + ln.Addr().String()); err != nil {
		b.close()
		return nil, err
	}
	return b, nil
}

// front puts the fault proxy before the broker at url and reads its
// catalog (waiting for it to be there).
func (b *brokerUnderTest) front(url string) error {
	p, err := faultproxy.Start(url)
	if err != nil {
		return err
	}
	b.proxy = p
	c, err := osbclient.New(osbclient.Config{URL: url, Timeout: 10 * time.Second})
	if err != nil {
		return err
	}
	defer c.Close()
	deadline := time.Now().Add(2 * time.Minute)
	for {
		cat, err := c.Catalog(context.Background(), osbclient.RequestMeta{})
		if err == nil {
			b.planIDs, b.createOnly = map[string]string{}, map[string][]string{}
			for _, s := range cat.Services {
				for _, p := range s.Plans {
					b.planIDs[s.Name+"/"+p.Name] = p.ID
					b.createOnly[s.Name+"/"+p.Name] = createOnly(p.Schemas)
				}
			}
			if _, ok := b.planIDs[b.service+"/"+b.plans[0]]; ok {
				return nil
			}
			err = fmt.Errorf("its catalog has no service %q yet", b.service)
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("broker %s: %w", b.name, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// createOnly names the top-level parameters of a plan's create schema
// that its update schema does not have.
func createOnly(s *osbapi.Schemas) []string {
	if s == nil || s.ServiceInstance == nil || s.ServiceInstance.Create == nil {
		return nil
	}
	properties := func(p *osbapi.InputParameters) map[string]json.RawMessage {
		var schema struct {
			Properties map[string]json.RawMessage `json:"properties"`
		}
		if p != nil {
			_ = json.Unmarshal(p.Parameters, &schema)
		}
		return schema.Properties
	}
	update := properties(s.ServiceInstance.Update)
	if s.ServiceInstance.Update == nil {
		return nil // no update schema: nothing is create-only
	}
	var out []string
	for name := range properties(s.ServiceInstance.Create) {
		if _, ok := update[name]; !ok {
			out = append(out, name)
		}
	}
	return out
}

// state is what the broker holds and was asked, for the checks.
func (b *brokerUnderTest) state(ctx context.Context) (*check.Broker, error) {
	out := &check.Broker{PlanIDs: b.planIDs, CreateOnly: b.createOnly, Instances: map[string]check.Instance{}, Bindings: map[string]check.Binding{},
		Creations: map[string]int{}, Async: map[string]check.Async{}, Exchanges: b.proxy.Exchanges()}
	if b.fake != nil {
		for id, in := range b.fake.Instances() {
			out.Instances[id] = check.Instance{PlanID: in.PlanID, Parameters: in.Parameters}
		}
		for _, bnd := range b.fake.Bindings() {
			out.Bindings[bnd.InstanceID+"/"+bnd.ID] = check.Binding{Parameters: bnd.Parameters, Credentials: bnd.Credentials}
		}
		instances, bindings := b.fake.Creations()
		for k, n := range instances {
			out.Creations[k] = n
		}
		for k, n := range bindings {
			out.Creations[k] = n
		}
		for _, op := range b.fake.Operations() {
			out.Async[op.Key] = check.Async{Done: op.Done, Failed: op.Failed}
		}
		return out, nil
	}
	err := b.store.View(ctx, func(tx store.Tx) error {
		instances, err := store.ListInstances(tx)
		if err != nil {
			return err
		}
		for _, in := range instances {
			if in.State != store.InstanceProvisioned {
				continue
			}
			out.Instances[in.ID] = check.Instance{PlanID: in.PlanID, Parameters: object(in.Parameters)}
			bindings, err := store.ListBindings(tx, in.ID)
			if err != nil {
				return err
			}
			for _, bnd := range bindings {
				if bnd.State == store.BindingBound {
					out.Bindings[in.ID+"/"+bnd.ID] = check.Binding{Parameters: object(bnd.Parameters), Credentials: object(bnd.Credentials)}
				}
			}
		}
		jobs, err := store.ListJobs(tx)
		if err != nil {
			return err
		}
		for _, j := range jobs {
			out.Async[j.Token] = check.Async{Done: j.State.Finished(), Failed: j.State == store.JobFailed}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("reading the embedded broker's store: %w", err)
	}
	// Creations, from what the broker answered: 201, or a 202 whose
	// operation succeeded (each operation once).
	counted := map[string]bool{}
	for _, x := range out.Exchanges {
		key := x.InstanceID
		if x.BindingID != "" {
			key += "/" + x.BindingID
		}
		if x.Op != osbclient.OpProvision && x.Op != osbclient.OpBind {
			continue
		}
		a := out.Async[x.OperationKey]
		if x.BrokerStatus == http.StatusCreated || (x.BrokerStatus == http.StatusAccepted && a.Done && !a.Failed && !counted[x.OperationKey]) {
			out.Creations[key]++
			counted[x.OperationKey] = true
		}
	}
	return out, nil
}

// object decodes a JSON object; nil when there is none.
func object(raw json.RawMessage) map[string]any {
	if len(raw) == 0 {
		return nil
	}
	var m map[string]any
	if json.Unmarshal(raw, &m) != nil || len(m) == 0 {
		return nil
	}
	return m
}

// close stops the broker and its proxy.
func (b *brokerUnderTest) close() {
	if b.proxy != nil {
		b.proxy.Close()
	}
	if b.fake != nil {
		b.fake.Close()
	}
	if b.srv != nil {
		_ = b.srv.Close()
	}
	if b.embedded != nil {
		err := b.embedded.Close()
		err = errors.Join(err, b.store.Close())
		_ = err
	}
}
