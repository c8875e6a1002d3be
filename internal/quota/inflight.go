package quota

import (
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/clock"
)

// InFlight counts, per quota, the creates this replica is deciding or has
// just allowed that the cached quota does not count yet, and decides a
// create with them (Admit), so that two creates through one replica never
// both take a quota's last unit.
//
// kube-apiserver charges a create to its quotas (a write of status.used)
// right after the webhooks allowed it, and lockstep's cache sees that
// write a moment later. So a create counts:
//
//   - while its admission runs (the broker call included): kube-apiserver
//     has certainly not charged it yet;
//   - once allowed, until the cached quota changes from the version it was
//     decided against (the charge, most likely), or Tail passed (the
//     create was refused after lockstep, and no charge comes);
//   - once refused, no longer.
//
// Creates through other replicas are not seen here: two replicas may each
// allow the last unit, and kube-apiserver then refuses one of them after
// its broker call (lockstep undoes that provision, as any create the API
// server did not persist). So may a create decided after another
// replica's, or this one's beyond Tail, but before the cache saw the
// charge.
type InFlight struct {
	// Tail is how long an allowed create counts at most; 0 means
	// DefaultTail.
	Tail time.Duration
	// Clock, when set, replaces the real clock (tests).
	Clock clock.PassiveClock

	mu sync.Mutex
	// held are the creates counted, by quota (namespace/name) and
	// resource counted.
	held map[string][]*hold
	// swept is when held was last swept of what no longer counts.
	swept time.Time
}

// DefaultTail is how long an allowed create counts at most when the
// cached quota does not change: far longer than kube-apiserver takes to
// charge it and lockstep's cache to see the charge on a healthy cluster.
const DefaultTail = 2 * time.Second

// hold is one create counted against one quota.
type hold struct {
	// version is the quota's resourceVersion the create was decided
	// against.
	version string
	// ended is set when the admission answered; until then the create
	// counts whatever the quota says.
	ended bool
	// until is when an allowed create stops counting.
	until time.Time
}

// Admit decides the create of one object counted as name against quotas
// (those of the object's namespace, from the cache), counting the
// creates in flight. It returns the refusal, or, when reserve is set (not
// for a dry run, which kube-apiserver never charges), release, to be
// called once with whether the create was allowed.
func (f *InFlight) Admit(quotas []corev1.ResourceQuota, name corev1.ResourceName, reserve bool) (release func(allowed bool), refusal *Refusal) {
	covering := Covering(quotas, name)
	if len(covering) == 0 {
		return func(bool) {}, nil
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	now := f.now()
	f.sweep(now)
	if refusal := Check(covering, name, func(q *corev1.ResourceQuota) int64 { return f.count(q, name, now) }); refusal != nil {
		return nil, refusal
	}
	if !reserve {
		return func(bool) {}, nil
	}
	if f.held == nil {
		f.held = map[string][]*hold{}
	}
	type taken struct {
		key string
		h   *hold
	}
	var holds []taken
	for i := range covering {
		k := key(&covering[i], name)
		h := &hold{version: covering[i].ResourceVersion}
		f.held[k] = append(f.held[k], h)
		holds = append(holds, taken{k, h})
	}
	var once sync.Once
	return func(allowed bool) {
		once.Do(func() {
			f.mu.Lock()
			defer f.mu.Unlock()
			now := f.now()
			for _, t := range holds {
				t.h.ended, t.h.until = true, now.Add(f.tail())
				if !allowed {
					f.drop(t.key, t.h)
				}
			}
		})
	}, nil
}

// count is how many creates in flight count as name against q as the
// cache has it now. Callers hold f.mu.
func (f *InFlight) count(q *corev1.ResourceQuota, name corev1.ResourceName, now time.Time) int64 {
	var n int64
	for _, h := range f.held[key(q, name)] {
		if counts(h, q.ResourceVersion, now) {
			n++
		}
	}
	return n
}

// counts reports whether h counts against a quota at version.
func counts(h *hold, version string, now time.Time) bool {
	return !h.ended || (h.version == version && now.Before(h.until))
}

// Len is how many creates are held, counting or not yet swept (tests).
func (f *InFlight) Len() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := 0
	for _, hs := range f.held {
		n += len(hs)
	}
	return n
}

// sweep drops, at most once per tail, the allowed creates whose time is
// up: those that still count by version are few and short-lived, so
// held stays as small as the creates of the last moments. Callers hold
// f.mu.
func (f *InFlight) sweep(now time.Time) {
	if now.Sub(f.swept) < f.tail() {
		return
	}
	f.swept = now
	for k, hs := range f.held {
		kept := hs[:0]
		for _, h := range hs {
			if !h.ended || now.Before(h.until) {
				kept = append(kept, h)
			}
		}
		if len(kept) == 0 {
			delete(f.held, k)
			continue
		}
		f.held[k] = kept
	}
}

// drop removes h from the creates held against k. Callers hold f.mu.
func (f *InFlight) drop(k string, h *hold) {
	hs := f.held[k]
	for i, x := range hs {
		if x == h {
			hs = append(hs[:i], hs[i+1:]...)
			break
		}
	}
	if len(hs) == 0 {
		delete(f.held, k)
		return
	}
	f.held[k] = hs
}

func (f *InFlight) tail() time.Duration {
	if f.Tail > 0 {
		return f.Tail
	}
	return DefaultTail
}

func (f *InFlight) now() time.Time {
	if f.Clock != nil {
		return f.Clock.Now()
	}
	return time.Now()
}

func key(q *corev1.ResourceQuota, name corev1.ResourceName) string {
	return q.Namespace + "/" + q.Name + "/" + string(name)
}
