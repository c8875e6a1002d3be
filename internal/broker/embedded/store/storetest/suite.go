package storetest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lockstep-dev/lockstep/internal/broker/embedded/store"
)

// Backend opens stores of one kind for the suite.
type Backend struct {
	// NewLocation returns a fresh, empty location (a file path, a key
	// prefix...).
	NewLocation func(t *testing.T) string
	// Open opens the store at a location. Opening a location again after
	// Close must see what was committed before.
	Open func(t *testing.T, location string) store.Store
}

// Run runs the whole suite against a backend.
func Run(t *testing.T, b Backend) {
	t.Run("KeyValue", func(t *testing.T) { testKeyValue(t, b) })
	t.Run("List", func(t *testing.T) { testList(t, b) })
	t.Run("ReadYourWrites", func(t *testing.T) { testReadYourWrites(t, b) })
	t.Run("Rollback", func(t *testing.T) { testRollback(t, b) })
	t.Run("ViewIsReadOnly", func(t *testing.T) { testViewReadOnly(t, b) })
	t.Run("NoLostUpdates", func(t *testing.T) { testNoLostUpdates(t, b) })
	t.Run("NoPhantoms", func(t *testing.T) { testNoPhantoms(t, b) })
	t.Run("Persistence", func(t *testing.T) { testPersistence(t, b) })
	t.Run("Records", func(t *testing.T) { testRecords(t, b) })
	t.Run("CancelledContext", func(t *testing.T) { testCancelled(t, b) })
}

func open(t *testing.T, b Backend) store.Store {
	t.Helper()
	s := b.Open(t, b.NewLocation(t))
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func testKeyValue(t *testing.T, b Backend) {
	s := open(t, b)
	ctx := context.Background()
	tests := []struct {
		name  string
		key   string
		value []byte
	}{
		{"plain", "a", []byte("1")},
		{"nested", "x/y/z", []byte(`{"json":true}`)},
		{"empty value", "empty", []byte{}},
		{"binary", "bin", []byte{0, 1, 2, 255}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			require.NoError(t, s.Update(ctx, func(tx store.Tx) error { return tx.Put(tt.key, tt.value) }))
			var got []byte
			require.NoError(t, s.View(ctx, func(tx store.Tx) error {
				var err error
				got, err = tx.Get(tt.key)
				return err
			}))
			assert.Equal(t, tt.value, got)

			require.NoError(t, s.Update(ctx, func(tx store.Tx) error { return tx.Delete(tt.key) }))
			require.NoError(t, s.View(ctx, func(tx store.Tx) error {
				_, err := tx.Get(tt.key)
				assert.ErrorIs(t, err, store.ErrNotFound)
				return nil
			}))
			// Deleting again is not an error.
			require.NoError(t, s.Update(ctx, func(tx store.Tx) error { return tx.Delete(tt.key) }))
		})
	}
}

func testList(t *testing.T, b Backend) {
	s := open(t, b)
	ctx := context.Background()
	require.NoError(t, s.Update(ctx, func(tx store.Tx) error {
		for _, k := range []string{"p/c", "p/a", "p/b", "pa", "q/a", "o/z"} {
			if err := tx.Put(k, []byte(k)); err != nil {
				return err
			}
		}
		return nil
	}))
	tests := []struct {
		prefix string
		want   []string
	}{
		{"p/", []string{"p/a", "p/b", "p/c"}},
		{"p", []string{"p/a", "p/b", "p/c", "pa"}},
		{"q/", []string{"q/a"}},
		{"none/", nil},
	}
	for _, tt := range tests {
		t.Run(tt.prefix, func(t *testing.T) {
			require.NoError(t, s.View(ctx, func(tx store.Tx) error {
				kvs, err := tx.List(tt.prefix)
				require.NoError(t, err)
				var keys []string
				for _, kv := range kvs {
					keys = append(keys, kv.Key)
					assert.Equal(t, kv.Key, string(kv.Value))
				}
				assert.Equal(t, tt.want, keys)
				return nil
			}))
		})
	}
}

func testReadYourWrites(t *testing.T, b Backend) {
	s := open(t, b)
	ctx := context.Background()
	require.NoError(t, s.Update(ctx, func(tx store.Tx) error { return tx.Put("r/old", []byte("old")) }))
	require.NoError(t, s.Update(ctx, func(tx store.Tx) error {
		require.NoError(t, tx.Put("r/new", []byte("new")))
		require.NoError(t, tx.Delete("r/old"))
		v, err := tx.Get("r/new")
		require.NoError(t, err)
		assert.Equal(t, "new", string(v))
		_, err = tx.Get("r/old")
		assert.ErrorIs(t, err, store.ErrNotFound)
		kvs, err := tx.List("r/")
		require.NoError(t, err)
		require.Len(t, kvs, 1)
		assert.Equal(t, "r/new", kvs[0].Key)
		return nil
	}))
}

func testRollback(t *testing.T, b Backend) {
	s := open(t, b)
	ctx := context.Background()
	boom := errors.New("boom")
	err := s.Update(ctx, func(tx store.Tx) error {
		require.NoError(t, tx.Put("rb", []byte("x")))
		return boom
	})
	require.ErrorIs(t, err, boom)
	require.NoError(t, s.View(ctx, func(tx store.Tx) error {
		_, err := tx.Get("rb")
		assert.ErrorIs(t, err, store.ErrNotFound)
		return nil
	}))
}

func testViewReadOnly(t *testing.T, b Backend) {
	s := open(t, b)
	ctx := context.Background()
	require.NoError(t, s.View(ctx, func(tx store.Tx) error {
		assert.ErrorIs(t, tx.Put("k", []byte("v")), store.ErrReadOnly)
		assert.ErrorIs(t, tx.Delete("k"), store.ErrReadOnly)
		return nil
	}))
}

// testNoLostUpdates increments one counter from many goroutines: a backend
// that is not serializable loses increments.
func testNoLostUpdates(t *testing.T, b Backend) {
	s := open(t, b)
	ctx := context.Background()
	const workers, rounds = 6, 15
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range rounds {
				if err := s.Update(ctx, func(tx store.Tx) error {
					n := 0
					v, err := tx.Get("counter")
					switch {
					case store.IsNotFound(err):
					case err != nil:
						return err
					default:
						if n, err = strconv.Atoi(string(v)); err != nil {
							return err
						}
					}
					return tx.Put("counter", []byte(strconv.Itoa(n+1)))
				}); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	require.NoError(t, s.View(ctx, func(tx store.Tx) error {
		v, err := tx.Get("counter")
		require.NoError(t, err)
		assert.Equal(t, strconv.Itoa(workers*rounds), string(v))
		return nil
	}))
}

// testNoPhantoms has many goroutines add a key under a prefix only while the
// prefix holds fewer than limit keys: a backend that does not validate what
// List read lets more than limit through.
func testNoPhantoms(t *testing.T, b Backend) {
	s := open(t, b)
	ctx := context.Background()
	const workers, limit = 8, 3
	var wg sync.WaitGroup
	for i := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := s.Update(ctx, func(tx store.Tx) error {
				kvs, err := tx.List("slot/")
				if err != nil {
					return err
				}
				if len(kvs) >= limit {
					return nil
				}
				return tx.Put(fmt.Sprintf("slot/%02d", i), []byte("taken"))
			})
			assert.NoError(t, err)
		}()
	}
	wg.Wait()
	require.NoError(t, s.View(ctx, func(tx store.Tx) error {
		kvs, err := tx.List("slot/")
		require.NoError(t, err)
		assert.Len(t, kvs, limit)
		return nil
	}))
}

func testPersistence(t *testing.T, b Backend) {
	ctx := context.Background()
	loc := b.NewLocation(t)
	s := b.Open(t, loc)
	require.NoError(t, s.Update(ctx, func(tx store.Tx) error { return tx.Put("kept", []byte("yes")) }))
	require.NoError(t, s.Close())

	s = b.Open(t, loc)
	defer func() { _ = s.Close() }()
	require.NoError(t, s.View(ctx, func(tx store.Tx) error {
		v, err := tx.Get("kept")
		require.NoError(t, err)
		assert.Equal(t, "yes", string(v))
		return nil
	}))
}

func testRecords(t *testing.T, b Backend) {
	s := open(t, b)
	ctx := context.Background()
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	inst := &store.Instance{
		ID: "inst/with/slashes", ServiceID: "svc", PlanID: "plan",
		Parameters: json.RawMessage(`{"a":1}`), State: store.InstanceProvisioned,
		Job: "job-1", CreatedAt: now, UpdatedAt: now,
	}
	bind := &store.Binding{InstanceID: inst.ID, ID: "b1", ServiceID: "svc", PlanID: "plan",
		State: store.BindingBound, Job: "job-2", Credentials: json.RawMessage(`{"u":"p"}`), CreatedAt: now}
	other := &store.Binding{InstanceID: "inst", ID: "b2", State: store.BindingBound, CreatedAt: now}
	job := &store.Job{Token: "job-1", Method: store.Provision, InstanceID: inst.ID, State: store.JobSucceeded,
		RunnerID: "r1", Request: store.JobRequest{ServiceID: "svc", PlanID: "plan"},
		Identity:  &store.Identity{Platform: "kubernetes", Value: json.RawMessage(`{"username":"alice"}`)},
		CreatedAt: now}
	spec := &store.SpecRecord{ServiceID: "svc", Name: "quick", Registry: "local", Digest: "d1",
		Bundle: json.RawMessage(`{"manifest":{}}`), UpdatedAt: now}
	runner := &store.Runner{ID: "r1", Host: "h", PID: 1, Heartbeat: now}

	require.NoError(t, s.Update(ctx, func(tx store.Tx) error {
		return errors.Join(store.PutInstance(tx, inst), store.PutBinding(tx, bind), store.PutBinding(tx, other),
			store.PutJob(tx, job), store.PutSpec(tx, spec), store.PutRunner(tx, runner),
			store.PutState(tx, inst.ID, map[string]string{"token": "s3cr3t"}))
	}))
	require.NoError(t, s.View(ctx, func(tx store.Tx) error {
		gi, err := store.GetInstance(tx, inst.ID)
		require.NoError(t, err)
		assert.Equal(t, inst, gi)
		_, err = store.GetInstance(tx, "inst")
		assert.True(t, store.IsNotFound(err), "an id that is a prefix of another must not match it")

		bs, err := store.ListBindings(tx, inst.ID)
		require.NoError(t, err)
		require.Len(t, bs, 1, "bindings of another instance must not be listed")
		assert.Equal(t, bind, bs[0])

		gj, err := store.GetJob(tx, job.Token)
		require.NoError(t, err)
		assert.Equal(t, job, gj)
		gs, err := store.GetSpec(tx, "svc")
		require.NoError(t, err)
		assert.Equal(t, spec, gs)
		gr, err := store.GetRunner(tx, "r1")
		require.NoError(t, err)
		assert.Equal(t, runner, gr)

		st, err := store.GetState(tx, inst.ID)
		require.NoError(t, err)
		assert.Equal(t, map[string]string{"token": "s3cr3t"}, st)
		st, err = store.GetState(tx, "no-such-instance")
		require.NoError(t, err)
		assert.Empty(t, st)
		return nil
	}))
	require.NoError(t, s.Update(ctx, func(tx store.Tx) error {
		return errors.Join(store.PutState(tx, inst.ID, nil), store.DeleteInstance(tx, inst.ID))
	}))
	require.NoError(t, s.View(ctx, func(tx store.Tx) error {
		_, err := tx.Get(store.StateKey(inst.ID))
		assert.ErrorIs(t, err, store.ErrNotFound, "an empty state removes the key")
		_, err = store.GetInstance(tx, inst.ID)
		assert.ErrorIs(t, err, store.ErrNotFound)
		return nil
	}))
}

func testCancelled(t *testing.T, b Backend) {
	s := open(t, b)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	assert.Error(t, s.Update(ctx, func(tx store.Tx) error { return tx.Put("k", []byte("v")) }))
	assert.Error(t, s.View(ctx, func(tx store.Tx) error { _, err := tx.Get("k"); return err }))
}
