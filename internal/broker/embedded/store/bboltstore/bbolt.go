package bboltstore

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/lockstep-dev/lockstep/internal/broker/embedded/store"
)

var bucket = []byte("lockstep-broker")

// Options tune Open.
type Options struct {
	// LockTimeout bounds the wait for the file lock held by another process;
	// zero means one second.
	LockTimeout time.Duration
}

// Store is a store.Store in one bbolt file.
type Store struct {
	db *bolt.DB
}

var _ store.Store = (*Store)(nil)

// Open opens (creating when absent) the store file at path.
func Open(path string, opts Options) (*Store, error) {
	if path == "" {
		return nil, errors.New("open broker store: no file path given")
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("open broker store %s: create its directory: %w", path, err)
	}
	timeout := opts.LockTimeout
	if timeout <= 0 {
		timeout = time.Second
	}
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: timeout})
	if errors.Is(err, bolt.ErrTimeout) {
		return nil, fmt.Errorf("open broker store %s: the file is locked by another process (is a second broker using it? use the etcd store for replicas): %w", path, err)
	}
	if err != nil {
		return nil, fmt.Errorf("open broker store %s: %w", path, err)
	}
	if err := db.Update(func(tx *bolt.Tx) error {
		_, err := tx.CreateBucketIfNotExists(bucket)
		return err
	}); err != nil {
		_ = db.Close()
		return nil, fmt.Errorf("open broker store %s: create bucket: %w", path, err)
	}
	return &Store{db: db}, nil
}

// View implements store.Store.
func (s *Store) View(ctx context.Context, fn func(store.Tx) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	return s.db.View(func(btx *bolt.Tx) error {
		return fn(&tx{b: btx.Bucket(bucket)})
	})
}

// Update implements store.Store. bbolt has one writer at a time, so fn runs
// exactly once.
func (s *Store) Update(ctx context.Context, fn func(store.Tx) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	return s.db.Update(func(btx *bolt.Tx) error {
		return fn(&tx{b: btx.Bucket(bucket), writable: true})
	})
}

// Exclusive implements store.Store: the file is locked by this process.
func (s *Store) Exclusive() bool { return true }

// Close implements store.Store.
func (s *Store) Close() error { return s.db.Close() }

type tx struct {
	b        *bolt.Bucket
	writable bool
}

func (t *tx) Get(key string) ([]byte, error) {
	v := t.b.Get([]byte(key))
	if v == nil {
		return nil, store.ErrNotFound
	}
	return bytes.Clone(v), nil
}

func (t *tx) Put(key string, value []byte) error {
	if !t.writable {
		return store.ErrReadOnly
	}
	if value == nil {
		value = []byte{}
	}
	return t.b.Put([]byte(key), value)
}

func (t *tx) Delete(key string) error {
	if !t.writable {
		return store.ErrReadOnly
	}
	return t.b.Delete([]byte(key))
}

func (t *tx) List(prefix string) ([]store.KV, error) {
	var out []store.KV
	c := t.b.Cursor()
	p := []byte(prefix)
	for k, v := c.Seek(p); k != nil && bytes.HasPrefix(k, p); k, v = c.Next() {
		out = append(out, store.KV{Key: string(k), Value: bytes.Clone(v)})
	}
	return out, nil
}
