package conformance

import (
	"context"
	"errors"
	"io"
	"log"
	"net"
	"net/http"
	"testing"

	"github.com/google/go-containerregistry/pkg/registry"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lockstep-dev/lockstep/internal/broker/embedded"
	osbregistry "github.com/lockstep-dev/lockstep/internal/broker/embedded/registry"
	"github.com/lockstep-dev/lockstep/internal/broker/embedded/registry/oci"
	"github.com/lockstep-dev/lockstep/internal/broker/embedded/registry/oci/ocitest"
)

// ociServer is go-containerregistry's in-process registry on a fixed
// address that can go down (its listener closed: connections are refused)
// and come back with its content.
type ociServer struct {
	t       *testing.T
	addr    string
	handler http.Handler
	srv     *http.Server
	done    chan struct{}
}

func startOCI(t *testing.T) *ociServer {
	t.Helper()
	s := &ociServer{t: t, handler: registry.New(registry.Logger(log.New(io.Discard, "", 0)))}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	s.addr = ln.Addr().String()
	s.serve(ln)
	t.Cleanup(s.down)
	return s
}

func (s *ociServer) serve(ln net.Listener) {
	s.srv = &http.Server{Handler: s.handler}
	s.done = make(chan struct{})
	go func() {
		defer close(s.done)
		if err := s.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			s.t.Errorf("OCI registry: %v", err)
		}
	}()
}

func (s *ociServer) down() {
	if s.srv == nil {
		return
	}
	_ = s.srv.Close()
	<-s.done
	s.srv = nil
}

func (s *ociServer) up() {
	ln, err := net.Listen("tcp", s.addr)
	require.NoError(s.t, err)
	s.serve(ln)
}

func TestOCIRegistryLoss(t *testing.T) {
	ctx := context.Background()
	reg := startOCI(t)
	repo := reg.addr + "/lockstep/bundles"
	opts := oci.Options{Insecure: true}
	for tag, m := range map[string]string{"quick": quickManifest, "slow": slowManifest} {
		_, err := ocitest.Publish(ctx, repo, tag, []byte(m), opts)
		require.NoError(t, err)
	}
	r, err := oci.New("remote", repo, opts)
	require.NoError(t, err)
	h := newHarness(t, withBundles(map[string]string{}), noInitialSync, withConfig(func(c *embedded.Config) {
		c.Registries = []osbregistry.Registry{r}
		c.FailureThreshold = 2
	}))
	h.broker.Sync(ctx)
	require.Equal(t, []string{"quick", "slow"}, h.catalogNames())
	h.provision("i-oci", map[string]any{"size": 1})

	reg.down()
	rep := h.broker.Sync(ctx)
	require.Error(t, rep.Registries[0].Err)
	assert.Contains(t, rep.Registries[0].Err.Error(), "connection refused")
	assert.Equal(t, []string{"quick", "slow"}, h.catalogNames(), "one failure: nothing changes")
	deleted, err := h.broker.Sweep(ctx)
	require.NoError(t, err)
	assert.Empty(t, deleted)

	h.broker.Sync(ctx)
	assert.Equal(t, []string{"quick"}, h.catalogNames(), "at the threshold the unused spec is marked; the used one stays")
	r2 := h.do("PUT", instPath("i-slow")+"?accepts_incomplete=true", slow())
	requireStatus(t, http.StatusBadRequest, r2)
	assert.Contains(t, r2.str("description"), `registry "remote" failed 2 consecutive fetches`)
	requireStatus(t, http.StatusCreated, h.do("PUT", bindPath("i-oci", "b1"), quickBind(nil)), "the instance works without its registry")
	deleted, err = h.broker.Sweep(ctx)
	require.NoError(t, err)
	assert.Equal(t, []string{"svc-slow"}, deleted)

	reg.up()
	h.broker.Sync(ctx)
	assert.Equal(t, []string{"quick", "slow"}, h.catalogNames(), "the registry is back")

	// A spec unpublished while in use: hidden, the instance lives on.
	require.NoError(t, ocitest.Unpublish(ctx, repo, "quick", opts))
	h.broker.Sync(ctx)
	assert.Equal(t, []string{"slow"}, h.catalogNames())
	requireStatus(t, http.StatusOK, h.do("DELETE", bindPath("i-oci", "b1")+"?"+quickQuery, nil))
	requireStatus(t, http.StatusOK, h.do("DELETE", instPath("i-oci")+"?"+quickQuery, nil))
	deleted, err = h.broker.Sweep(ctx)
	require.NoError(t, err)
	assert.Equal(t, []string{"svc-quick"}, deleted)
}
