package loadgen

import (
	"container/heap"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"
)

// Backoff is how long a refused item waits before it is sent again: Initial
// before the first retry, then Factor times longer each time up to Max,
// each delay spread by ±Jitter (a fraction) so that retries do not arrive
// in lockstep.
type Backoff struct {
	Initial, Max time.Duration
	Factor       float64
	Jitter       float64
}

// Delay is the wait before retry number retry (1 for the first).
func (b Backoff) Delay(retry int, rnd *rand.Rand) time.Duration {
	d := float64(b.Initial)
	for range retry - 1 {
		d *= b.Factor
		if d >= float64(b.Max) {
			break
		}
	}
	d = min(d, float64(b.Max))
	if b.Jitter > 0 && rnd != nil {
		d *= 1 + b.Jitter*(2*rnd.Float64()-1)
	}
	return time.Duration(d)
}

// String describes the schedule.
func (b Backoff) String() string {
	return fmt.Sprintf("%s, ×%g each retry up to %s, ±%.0f%% jitter", b.Initial, b.Factor, b.Max, 100*b.Jitter)
}

// BurstLoad bounds a burst: Items objects sent at once by Clients workers,
// every refusal sent again after a back-off, as a GitOps tool applies a
// directory of manifests.
type BurstLoad struct {
	Clients, Items int
	// MaxAttempts bounds the tries of one item; MaxDuration the whole
	// burst. An item that exhausts either is left not done.
	MaxAttempts int
	MaxDuration time.Duration
	Backoff     Backoff
	// Seed makes the jitter repeatable.
	Seed uint64
}

// Validate reports a burst that cannot run.
func (l BurstLoad) Validate() error {
	switch {
	case l.Clients < 1:
		return fmt.Errorf("burst: clients %d: must be at least 1", l.Clients)
	case l.Items < 0:
		return fmt.Errorf("burst: items %d: must not be negative", l.Items)
	case l.MaxAttempts < 1:
		return fmt.Errorf("burst: max attempts %d: must be at least 1", l.MaxAttempts)
	case l.MaxDuration <= 0:
		return fmt.Errorf("burst: max duration %s: must be more than 0 (every load loop is bounded in time)", l.MaxDuration)
	case l.Backoff.Initial <= 0 || l.Backoff.Max < l.Backoff.Initial || l.Backoff.Factor < 1:
		return fmt.Errorf("burst: back-off %s: needs 0 < initial <= max and a factor of at least 1", l.Backoff)
	}
	return nil
}

// Outcome is what happened to one item of a burst.
type Outcome struct {
	// Done is true once a try succeeded, At when (since the burst began).
	Done bool
	At   time.Duration
	// Refusals counts the failed tries by the class the burst's classify
	// gave their errors; each was sent again unless the burst ended first.
	Refusals map[string]int
	// LastError is the error of the last failed try.
	LastError error
}

// Tries is how many times the item was sent.
func (o Outcome) Tries() int {
	n := 0
	for _, c := range o.Refusals {
		n += c
	}
	if o.Done {
		n++
	}
	return n
}

// BurstResult is what a burst did, item by item.
type BurstResult struct {
	Items []Outcome
	// Elapsed is the wall time of the burst, until the last item was done
	// or the burst gave up.
	Elapsed time.Duration
	// TimedOut is true when MaxDuration ended the burst with items left.
	TimedOut bool
}

// Done counts the items done.
func (r BurstResult) Done() int {
	n := 0
	for _, o := range r.Items {
		if o.Done {
			n++
		}
	}
	return n
}

// Last is when the last item was done (since the burst began).
func (r BurstResult) Last() time.Duration {
	var last time.Duration
	for _, o := range r.Items {
		if o.Done {
			last = max(last, o.At)
		}
	}
	return last
}

// Refusals sums the refusals of every item by class, and gives the most
// of each class any one item had.
func (r BurstResult) Refusals() (total, most map[string]int) {
	total, most = map[string]int{}, map[string]int{}
	for _, o := range r.Items {
		for class, n := range o.Refusals {
			total[class] += n
			most[class] = max(most[class], n)
		}
	}
	return total, most
}

// Burst sends items 0..Items-1, in order, from Clients workers at once; a
// try that fails is classified (classify(err) names its class: "409",
// say) and the item sent again after the back-off of its retry number,
// while the workers go on with the items that are due. It ends when every
// item is done, or at MaxDuration, or when no item has tries left.
func Burst(ctx context.Context, load BurstLoad, do Do, classify func(error) string) (BurstResult, error) {
	if err := load.Validate(); err != nil {
		return BurstResult{}, err
	}
	res := BurstResult{Items: make([]Outcome, load.Items)}
	parent := ctx
	ctx, cancel := context.WithTimeout(ctx, load.MaxDuration)
	defer cancel()

	type tried struct {
		item int
		err  error
		at   time.Time
	}
	work, results := make(chan int), make(chan tried)
	for range load.Clients {
		go func() {
			for i := range work {
				err := do(ctx, i)
				results <- tried{item: i, err: err, at: time.Now()}
			}
		}()
	}
	rnd := rand.New(rand.NewPCG(load.Seed, load.Seed^0x9e3779b97f4a7c15))
	start := time.Now()
	queue := &dueQueue{}
	for i := range load.Items {
		queue.push(due{at: start, item: i})
	}
	// record counts one try of item that ended at at with err, and reports
	// whether it was refused. A try the bound cut short (its error is the
	// context's, once the bound has passed) is not the system's answer and
	// is not counted; a refusal that came back is, even after the bound.
	record := func(item int, err error, at time.Time) bool {
		o := &res.Items[item]
		switch {
		case err == nil:
			o.Done, o.At = true, at.Sub(start)
			return false
		case ctx.Err() != nil && (errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled)):
			return false
		}
		if o.Refusals == nil {
			o.Refusals = map[string]int{}
		}
		o.Refusals[classify(err)]++
		o.LastError = err
		return true
	}
	inFlight := 0
	for queue.Len() > 0 || inFlight > 0 {
		var (
			send  chan int
			next  due
			timer <-chan time.Time
		)
		if queue.Len() > 0 {
			next = (*queue)[0]
			if wait := time.Until(next.at); wait > 0 {
				timer = time.After(wait)
			} else {
				send = work
			}
		}
		select {
		case send <- next.item:
			heap.Pop(queue)
			inFlight++
		case t := <-results:
			inFlight--
			if !record(t.item, t.err, t.at) || ctx.Err() != nil {
				continue
			}
			if o := &res.Items[t.item]; o.Tries() < load.MaxAttempts {
				queue.push(due{at: t.at.Add(load.Backoff.Delay(o.Tries(), rnd)), item: t.item})
			}
		case <-timer:
		case <-ctx.Done():
			cancel()
			for ; inFlight > 0; inFlight-- {
				t := <-results
				record(t.item, t.err, t.at)
			}
			*queue = nil
		}
	}
	close(work)
	// The bound ended the burst, whether it was seen passing or only in
	// the results that came back after it, which are not sent again.
	res.TimedOut = ctx.Err() != nil && res.Done() < load.Items
	res.Elapsed = time.Since(start)
	if err := parent.Err(); err != nil {
		return res, fmt.Errorf("burst stopped: %w", err)
	}
	return res, nil
}

// due is an item and when it may be sent.
type due struct {
	at   time.Time
	item int
}

// dueQueue orders items by when they are due, then by number.
type dueQueue []due

func (q dueQueue) Len() int { return len(q) }
func (q dueQueue) Less(i, j int) bool {
	if !q[i].at.Equal(q[j].at) {
		return q[i].at.Before(q[j].at)
	}
	return q[i].item < q[j].item
}
func (q dueQueue) Swap(i, j int) { q[i], q[j] = q[j], q[i] }
func (q *dueQueue) Push(x any)   { *q = append(*q, x.(due)) }
func (q *dueQueue) Pop() any {
	old := *q
	x := old[len(old)-1]
	*q = old[:len(old)-1]
	return x
}
func (q *dueQueue) push(d due) { heap.Push(q, d) }
