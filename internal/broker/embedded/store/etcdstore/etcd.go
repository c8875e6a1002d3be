package etcdstore

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/lockstep-dev/lockstep/internal/broker/embedded/store"
)

// ErrTooManyConflicts is returned when a transaction kept conflicting with
// concurrent writers.
var ErrTooManyConflicts = errors.New("transaction conflicted with concurrent writers too many times")

// Config configures Open.
type Config struct {
	// Endpoints of the etcd cluster, e.g. http://127.0.0.1:2379.
	Endpoints []string
	// Prefix is prepended to every key, so that several brokers can share
	// one etcd cluster; it should end with "/".
	Prefix string
	// DialTimeout bounds connecting; zero means five seconds.
	DialTimeout time.Duration
	// Username and Password authenticate to etcd when set.
	Username string
	Password string
}

// Store is a store.Store on etcd.
type Store struct {
	cli        *clientv3.Client
	prefix     string
	ownsClient bool
	// MaxAttempts bounds how often a conflicting transaction runs.
	maxAttempts int
}

var _ store.Store = (*Store)(nil)

// Open connects to etcd and checks that it answers.
func Open(ctx context.Context, cfg Config) (*Store, error) {
	if len(cfg.Endpoints) == 0 {
		return nil, errors.New("open etcd broker store: no endpoints given")
	}
	dial := cfg.DialTimeout
	if dial <= 0 {
		dial = 5 * time.Second
	}
	cli, err := clientv3.New(clientv3.Config{
		Endpoints:   cfg.Endpoints,
		DialTimeout: dial,
		Username:    cfg.Username,
		Password:    cfg.Password,
		Logger:      zap.NewNop(),
	})
	if err != nil {
		return nil, fmt.Errorf("open etcd broker store at %s: %w", strings.Join(cfg.Endpoints, ","), err)
	}
	pingCtx, cancel := context.WithTimeout(ctx, dial)
	defer cancel()
	if _, err := cli.Get(pingCtx, "health-check-"+cfg.Prefix, clientv3.WithCountOnly()); err != nil {
		_ = cli.Close()
		return nil, fmt.Errorf("open etcd broker store at %s: etcd does not answer: %w", strings.Join(cfg.Endpoints, ","), err)
	}
	s := New(cli, cfg.Prefix)
	s.ownsClient = true
	return s, nil
}

// New wraps an existing client; Close does not close it.
func New(cli *clientv3.Client, prefix string) *Store {
	return &Store{cli: cli, prefix: prefix, maxAttempts: 100}
}

// View implements store.Store.
func (s *Store) View(ctx context.Context, fn func(store.Tx) error) error {
	for {
		t := s.newTx(ctx, false)
		err := fn(t)
		if errors.Is(err, rpctypes.ErrCompacted) {
			continue // the snapshot revision was compacted away: take a newer one
		}
		return err
	}
}

// Update implements store.Store.
func (s *Store) Update(ctx context.Context, fn func(store.Tx) error) error {
	for attempt := range s.maxAttempts {
		if err := ctx.Err(); err != nil {
			return err
		}
		t := s.newTx(ctx, true)
		err := fn(t)
		if errors.Is(err, rpctypes.ErrCompacted) {
			continue
		}
		if err != nil {
			return err
		}
		ok, err := t.commit()
		if err != nil {
			return err
		}
		if ok {
			return nil
		}
		backoff(ctx, attempt)
	}
	return ErrTooManyConflicts
}

func backoff(ctx context.Context, attempt int) {
	limit := time.Millisecond << min(attempt, 6) // up to 64ms
	d := time.Duration(rand.Int64N(int64(limit)) + 1)
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}

// Exclusive implements store.Store: etcd is shared.
func (s *Store) Exclusive() bool { return false }

// Close implements store.Store.
func (s *Store) Close() error {
	if s.ownsClient {
		return s.cli.Close()
	}
	return nil
}
