package admission

import (
	"sync"
)

// Answers writes the broker's answers to allowed operations after the
// webhook replied, so that the reply waits for one write fewer.
//
// This is safe because of what the API server does with the reply: it
// persists an object only if every webhook allowed it, and lockstep allows
// only what the broker carried out. A record whose answer was never written
// (lockstep stopped first) stays Pending; the operations reconciler finds
// the change persisted as recorded and settles it as Succeeded.
//
// Until an answer is written, this replica remembers the change it carried
// out, so that the API server's retry of the same request (after an etcd
// conflict) is allowed without a second broker call, as it is once the
// answer is in the journal.
type Answers struct {
	mu      sync.Mutex
	pending map[string]changeKey // record name → the change it carried out
	wg      sync.WaitGroup
}

// NewAnswers returns an empty Answers.
func NewAnswers() *Answers {
	return &Answers{pending: map[string]changeKey{}}
}

// write runs fn, which writes the answer of the operation named record, in
// the background. A nil Answers runs it at once.
func (a *Answers) write(record string, change changeKey, fn func()) {
	if a == nil {
		fn()
		return
	}
	a.mu.Lock()
	a.pending[record] = change
	a.mu.Unlock()
	a.wg.Go(func() {
		defer func() {
			a.mu.Lock()
			delete(a.pending, record)
			a.mu.Unlock()
		}()
		fn()
	})
}

// carriedOut reports whether the operation named record carried out change
// and its answer is still being written.
func (a *Answers) carriedOut(record string, change changeKey) bool {
	if a == nil {
		return false
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	got, ok := a.pending[record]
	return ok && got == change
}

// Wait blocks until every answer handed to the background is written.
func (a *Answers) Wait() {
	if a != nil {
		a.wg.Wait()
	}
}
