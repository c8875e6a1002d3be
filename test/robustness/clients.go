package robustness

import (
	"context"
	"fmt"
	"net/http"
	"sync"

	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/lockstep-dev/lockstep/internal/app"
)

// asUser is the context key of the user a request is made as.
type asUser struct{}

// warningsKey is the context key of where a request's warnings go.
type warningsKey struct{}

// warnings collects the warnings of one request.
type warnings struct {
	mu   sync.Mutex
	list []string
}

func (w *warnings) add(s string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.list = append(w.list, s)
}

func (w *warnings) all() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]string(nil), w.list...)
}

// as makes the requests made with ctx as user, and collects their
// warnings into w.
func as(ctx context.Context, user string, w *warnings) context.Context {
	return context.WithValue(context.WithValue(ctx, asUser{}, user), warningsKey{}, w)
}

// impersonating sets the user of each request from its context: every
// client request is made as a user of its own (a cluster administrator),
// so that the broker's requests and the journal's records it caused are
// found by that user.
type impersonating struct{ next http.RoundTripper }

func (t impersonating) RoundTrip(req *http.Request) (*http.Response, error) {
	user, _ := req.Context().Value(asUser{}).(string)
	if user == "" {
		return t.next.RoundTrip(req)
	}
	req = req.Clone(req.Context())
	req.Header.Set("Impersonate-User", user)
	req.Header.Add("Impersonate-Group", "system:masters")
	return t.next.RoundTrip(req)
}

// collectWarnings hands each warning to the request's collector.
type collectWarnings struct{}

func (collectWarnings) HandleWarningHeaderWithContext(ctx context.Context, _ int, _ string, message string) {
	if w, ok := ctx.Value(warningsKey{}).(*warnings); ok {
		w.add(message)
	}
}

// userClient is a client whose requests are made as the user their
// context names (see as). admin must be allowed to impersonate.
func userClient(admin *rest.Config) (client.Client, error) {
	cfg := rest.CopyConfig(admin)
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { return impersonating{next: rt} })
	cfg.WarningHandlerWithContext = collectWarnings{}
	cfg.QPS, cfg.Burst = -1, 0
	c, err := client.New(cfg, client.Options{Scheme: app.Scheme()})
	if err != nil {
		return nil, fmt.Errorf("creating the clients' client: %w", err)
	}
	return c, nil
}
