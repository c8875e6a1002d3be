package operations

import (
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/lockstep-dev/lockstep/api/v1alpha1"
)

// maxRetryWait caps the wait before a broker is asked again.
const maxRetryWait = 2 * time.Minute

// retries counts, per record, how often in a row the broker did not
// answer or a compensation did not get done, so that each next try waits
// twice as long as the one before. It lives in the elected replica; a new
// leader starts counting again.
type retries struct {
	mu    sync.Mutex
	tries map[types.UID]int
}

// next counts one more try of the record uid and returns how many came
// before it.
func (r *retries) next(uid types.UID) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.tries == nil {
		r.tries = map[types.UID]int{}
	}
	n := r.tries[uid]
	r.tries[uid] = n + 1
	return n
}

// forget ends the count of the record uid: the broker answered.
func (r *retries) forget(uid types.UID) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.tries, uid)
}

// retryAfter is the wait before the broker is asked again about op: Poll,
// doubled for every try in a row before, at most maxRetryWait.
func (r *Reconciler) retryAfter(op *v1alpha1.BrokerOperation) time.Duration {
	wait := max(r.Poll, time.Millisecond)
	for range r.retries.next(op.UID) {
		if wait >= maxRetryWait {
			break
		}
		wait *= 2
	}
	return min(wait, maxRetryWait)
}
