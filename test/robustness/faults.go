package robustness

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/lockstep-dev/lockstep/api/v1alpha1"
	"github.com/lockstep-dev/lockstep/internal/broker/osbclient"
	"github.com/lockstep-dev/lockstep/test/framework"
	"github.com/lockstep-dev/lockstep/test/robustness/faultproxy"
	"github.com/lockstep-dev/lockstep/test/robustness/history"
)

// The kinds of faults.
const (
	// KillLeader and KillFollower end a lockstep replica with SIGKILL;
	// it comes back after a pause.
	KillLeader   history.FaultKind = "kill-leader"
	KillFollower history.FaultKind = "kill-follower"
	// KillAPIServer ends kube-apiserver with SIGKILL and starts it again.
	KillAPIServer history.FaultKind = "kill-apiserver"
	// BrokerStopped: nothing listens at the broker's address.
	BrokerStopped history.FaultKind = "broker-stopped"
	// BrokerHung, Broker5xx and BrokerDrop: the broker never sees the
	// request; it gets no answer, 503, or a closed connection.
	BrokerHung history.FaultKind = "broker-hung"
	Broker5xx  history.FaultKind = "broker-5xx"
	BrokerDrop history.FaultKind = "broker-drop"
	// BrokerSlow, BrokerGarbage and DropAfter202: the broker carries the
	// request out, and its answer comes late, is not JSON, or (a 202) is
	// replaced by a closed connection.
	BrokerSlow    history.FaultKind = "broker-slow"
	BrokerGarbage history.FaultKind = "broker-garbage"
	DropAfter202  history.FaultKind = "drop-after-202"
	// AsyncFails: the test broker's asynchronous operations end failed.
	AsyncFails history.FaultKind = "async-fails"
)

// AllFaults lists every kind of fault, in the order the results show
// them.
var AllFaults = []history.FaultKind{KillLeader, KillFollower, KillAPIServer, BrokerStopped, BrokerHung, Broker5xx, BrokerDrop,
	BrokerSlow, BrokerGarbage, DropAfter202, AsyncFails}

// proxyFaults are the faults a broker's proxy injects into requests.
var proxyFaults = map[history.FaultKind]faultproxy.Kind{
	BrokerHung: faultproxy.Hang, BrokerSlow: faultproxy.Slow, Broker5xx: faultproxy.Unavailable,
	BrokerGarbage: faultproxy.Garbage, BrokerDrop: faultproxy.Drop, DropAfter202: faultproxy.DropAfter202,
}

// requestGroups are the sets of broker requests a fault window hits.
var requestGroups = map[string][]osbclient.Op{
	"changes": {osbclient.OpProvision, osbclient.OpUpdate, osbclient.OpDeprovision, osbclient.OpBind, osbclient.OpUnbind},
	"polls":   {osbclient.OpInstanceLastOperation, osbclient.OpBindingLastOperation},
	"reads":   {osbclient.OpGetInstance, osbclient.OpGetBinding, osbclient.OpCatalog},
	"all": {osbclient.OpProvision, osbclient.OpUpdate, osbclient.OpDeprovision, osbclient.OpBind, osbclient.OpUnbind,
		osbclient.OpInstanceLastOperation, osbclient.OpBindingLastOperation, osbclient.OpGetInstance, osbclient.OpGetBinding, osbclient.OpCatalog},
}

// injector injects the faults of a profile until its context ends, each
// kind of target in a loop of its own.
type injector struct {
	env  *env
	hist *history.History
	p    Profile
	// gate holds back the admissions a kill spares.
	gate *gate
}

// run injects until ctx ends, then heals everything.
func (in *injector) run(ctx context.Context) {
	var wg sync.WaitGroup
	seed := in.env.opts.Seed
	if in.p.injects(KillLeader) || in.p.injects(KillFollower) {
		wg.Go(func() { in.replicas(ctx, rng(seed, "replica faults")) })
	}
	if in.p.injects(KillAPIServer) {
		wg.Go(func() { in.apiServer(ctx, rng(seed, "kube-apiserver faults")) })
	}
	for _, b := range in.env.brokers {
		for i, st := range in.p.Steady {
			wg.Go(func() { in.steady(ctx, b, i, st) })
		}
		if in.p.injects(BrokerStopped) {
			wg.Go(func() { in.brokerStops(ctx, b, rng(seed, "stops of "+b.name)) })
		}
		for lane := range max(in.p.BrokerFaultLanes, 1) {
			name := "faults of " + b.name
			if lane > 0 {
				name = fmt.Sprintf("faults of %s, lane %d", b.name, lane+1)
			}
			wg.Go(func() { in.brokerFaults(ctx, b, lane, rng(seed, name)) })
		}
	}
	wg.Wait()
}

// around returns a duration between half and one and a half times d.
func around(r *rand.Rand, d time.Duration) time.Duration {
	return d/2 + time.Duration(r.Int64N(int64(d)+1))
}

// between returns a duration in [lo, hi].
func between(r *rand.Rand, lo, hi time.Duration) time.Duration {
	return lo + time.Duration(r.Int64N(int64(hi-lo)+1))
}

// replicas kills a replica every ReplicaEvery or so, the leader and the
// follower in turn; the killed one restarts after its pause while the
// next kill is already on its way (faults overlap).
func (in *injector) replicas(ctx context.Context, r *rand.Rand) {
	var kinds []history.FaultKind
	for _, k := range []history.FaultKind{KillLeader, KillFollower} {
		if in.p.injects(k) {
			kinds = append(kinds, k)
		}
	}
	var healed sync.WaitGroup
	defer healed.Wait()
	for turn := 0; sleep(ctx, around(r, in.p.ReplicaEvery)); turn++ {
		kind := kinds[turn%len(kinds)]
		pause := between(r, 200*time.Millisecond, 1500*time.Millisecond)
		var target *replica
		for range 100 { // a lead given up or lost takes a moment to be taken again
			target, kind = in.replicaTarget(kind, kinds)
			if target != nil || !sleep(ctx, 100*time.Millisecond) {
				break
			}
		}
		if target == nil {
			continue
		}
		var spared []v1alpha1.Verb
		for _, op := range in.p.Spare[kind].Ops {
			spared = append(spared, v1alpha1.Verb(op))
		}
		quiet, release := in.gate.hold(ctx, spared, time.Minute)
		if !quiet {
			release()
			continue
		}
		f := in.hist.Inject(&history.Fault{Kind: kind, Target: "replica " + target.name, Detail: fmt.Sprintf("SIGKILL, down for %s", pause.Round(time.Millisecond))})
		target.kill(pause)
		release()
		healed.Go(func() {
			time.Sleep(pause)
			in.hist.Heal(f)
		})
	}
}

// replicaTarget finds the replica a kill of kind hits, or else one that a
// kill of another kind in kinds hits (the leader is not known for a moment
// after it changed); nil when there is none.
func (in *injector) replicaTarget(kind history.FaultKind, kinds []history.FaultKind) (*replica, history.FaultKind) {
	leader := in.env.leader()
	for _, k := range append([]history.FaultKind{kind}, kinds...) {
		for _, rep := range in.env.replicas {
			if (k == KillLeader && rep == leader) || (k == KillFollower && leader != nil && rep != leader && rep.running()) {
				return rep, k
			}
		}
	}
	return nil, kind
}

// apiServer kills a kube-apiserver every APIServerEvery or so, counted
// from one kill to the next, each in turn, and starts it again at once on
// the same etcd; the next kill does not wait for that restart, only for
// another kube-apiserver to stay ready.
func (in *injector) apiServer(ctx context.Context, r *rand.Rand) {
	var restarts sync.WaitGroup
	defer restarts.Wait()
	last := time.Now()
	for sleep(ctx, max(around(r, in.p.APIServerEvery)-time.Since(last), 0)) {
		down := between(r, 0, 300*time.Millisecond)
		i, err := in.env.cp.KillAPIServer()
		for errors.Is(err, framework.ErrNoAPIServerToKill) && sleep(ctx, 100*time.Millisecond) {
			i, err = in.env.cp.KillAPIServer()
		}
		if errors.Is(err, framework.ErrNoAPIServerToKill) {
			return
		}
		last = time.Now()
		f := in.hist.Inject(&history.Fault{Kind: KillAPIServer, Target: fmt.Sprintf("kube-apiserver %d", i+1),
			Detail: fmt.Sprintf("SIGKILL, restarted after %s", down.Round(time.Millisecond))})
		if err != nil {
			in.env.logf("killing kube-apiserver %d: %v", i+1, err)
		}
		restarts.Go(func() {
			time.Sleep(down) // restarted even when ctx ended
			if err := in.env.cp.RestartAPIServer(context.WithoutCancel(ctx), i, 5*time.Minute); err != nil {
				in.env.logf("restarting kube-apiserver %d: %v", i+1, err)
			}
			in.hist.Heal(f)
		})
	}
}

func (in *injector) brokerStops(ctx context.Context, b *brokerUnderTest, r *rand.Rand) {
	for sleep(ctx, around(r, in.p.BrokerStopEvery)) {
		down := between(r, 300*time.Millisecond, 2*time.Second)
		f := in.hist.Inject(&history.Fault{Kind: BrokerStopped, Target: "broker " + b.name, Detail: fmt.Sprintf("for %s", down.Round(time.Millisecond))})
		var spared []osbclient.Op
		for _, op := range in.p.Spare[BrokerStopped].Ops {
			spared = append(spared, osbclient.Op(op))
		}
		// The requests spared in flight get their answers first.
		b.proxy.StopAfter(spared, 10*time.Second)
		time.Sleep(down)
		if err := b.proxy.Resume(); err != nil {
			in.env.logf("resuming broker %s: %v", b.name, err)
		}
		in.hist.Heal(f)
	}
}

// brokerFaults runs windows of request faults at a broker, one after
// the other in one lane (the lanes' windows overlap). Every kind gets its
// turn in each round, in a seeded order; drop-after-202 twice, and at the
// test broker async-fails twice too, as a window of either breaks fewer
// requests than one of another kind. A drop-after-202 window makes every
// change of the test broker asynchronous, so that only a 202 is dropped
// while most changes are answered at once otherwise. A window hits the
// broker's changes or all its requests three times as often as its polls
// or reads alone, which are fewer.
func (in *injector) brokerFaults(ctx context.Context, b *brokerUnderTest, lane int, r *rand.Rand) {
	var kinds []history.FaultKind
	for _, k := range AllFaults {
		if _, ok := proxyFaults[k]; (ok || (k == AsyncFails && b.fake != nil)) && in.p.injects(k) {
			kinds = append(kinds, k)
			if k == DropAfter202 || k == AsyncFails {
				kinds = append(kinds, k)
			}
		}
	}
	if len(kinds) == 0 {
		return
	}
	groups := []string{"changes", "changes", "changes", "all", "all", "all", "polls", "reads"}
	var round []history.FaultKind
	for window := 0; sleep(ctx, around(r, in.p.BrokerFaultEvery)); window++ {
		if len(round) == 0 {
			round = slices.Clone(kinds)
			r.Shuffle(len(round), func(i, j int) { round[i], round[j] = round[j], round[i] })
		}
		kind := round[0]
		round = round[1:]
		group := groups[r.IntN(len(groups))]
		if kind == AsyncFails || kind == DropAfter202 {
			group = "changes"
		}
		ops := slices.DeleteFunc(slices.Clone(requestGroups[group]), func(op osbclient.Op) bool {
			return slices.Contains(in.p.Spare[kind].Ops, string(op))
		})
		if len(ops) == 0 {
			continue
		}
		p := 0.6 + 0.4*r.Float64()
		length := between(r, 1500*time.Millisecond, 3500*time.Millisecond)
		f := in.hist.Inject(&history.Fault{Kind: kind, Target: "broker " + b.name,
			Detail: fmt.Sprintf("on %.0f%% of %s", 100*p, strings.Join(opNames(ops), ", "))})
		// Each lane's windows have numbers of their own, so that two
		// windows never draw the same requests.
		id := window*max(in.p.BrokerFaultLanes, 1) + lane
		switch kind {
		case AsyncFails:
			b.open(lane, faultWindow{fail: p})
		case DropAfter202:
			b.open(lane, faultWindow{async: 1, faults: in.faults(b, id, proxyFaults[kind], ops, p)})
		default:
			b.open(lane, faultWindow{faults: in.faults(b, id, proxyFaults[kind], ops, p)})
		}
		sleep(ctx, length)
		b.shut(lane)
		in.hist.Heal(f)
	}
}

// steady keeps a fault on at a broker until ctx ends.
func (in *injector) steady(ctx context.Context, b *brokerUnderTest, window int, st Steady) {
	var ops []osbclient.Op
	for _, op := range st.Ops {
		ops = append(ops, osbclient.Op(op))
	}
	f := in.hist.Inject(&history.Fault{Kind: st.Kind, Target: "broker " + b.name, Detail: "for the whole run on " + strings.Join(st.Ops, ", ")})
	// Steady faults have lanes of their own, after the windows'.
	lane := max(in.p.BrokerFaultLanes, 1) + window
	if st.Kind == AsyncFails {
		b.open(lane, faultWindow{fail: 1})
	} else {
		b.open(lane, faultWindow{faults: in.faults(b, -1-window, proxyFaults[st.Kind], ops, 1)})
	}
	<-ctx.Done()
	b.shut(lane)
	in.hist.Heal(f)
}

// faults is a proxy's fault function for one window: kind on a share p of
// the requests ops, drawn per request from the seed.
func (in *injector) faults(b *brokerUnderTest, window int, kind faultproxy.Kind, ops []osbclient.Op, p float64) func(faultproxy.Request) faultproxy.Fault {
	return func(q faultproxy.Request) faultproxy.Fault {
		if !slices.Contains(ops, q.Op) {
			return faultproxy.Fault{}
		}
		key := fmt.Sprintf("%s/%d/%s/%s/%s", b.name, window, q.Op, q.InstanceID, q.BindingID)
		if in.env.draws.float(key) >= p {
			return faultproxy.Fault{}
		}
		f := faultproxy.Fault{Kind: kind}
		if kind == faultproxy.Slow {
			f.Delay = time.Duration(200+int(3800*in.env.draws.float(key+"/delay"))) * time.Millisecond
		}
		return f
	}
}

func opNames(ops []osbclient.Op) []string {
	out := make([]string, len(ops))
	for i, op := range ops {
		out[i] = string(op)
	}
	return out
}
