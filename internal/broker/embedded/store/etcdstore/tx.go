package etcdstore

import (
	"context"
	"sort"
	"strings"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/lockstep-dev/lockstep/internal/broker/embedded/store"
)

// tx is one optimistic transaction; see the package documentation.
type tx struct {
	s        *Store
	ctx      context.Context
	writable bool
	// rev is the snapshot revision, set by the first read.
	rev int64
	// reads maps every key read to its mod revision (0: absent).
	reads map[string]int64
	// ranges are the prefixes listed.
	ranges []string
	// writes maps keys to new values; a nil value deletes.
	writes map[string][]byte
}

func (s *Store) newTx(ctx context.Context, writable bool) *tx {
	return &tx{s: s, ctx: ctx, writable: writable, reads: map[string]int64{}, writes: map[string][]byte{}}
}

func (t *tx) readOpts(extra ...clientv3.OpOption) []clientv3.OpOption {
	if t.rev > 0 {
		extra = append(extra, clientv3.WithRev(t.rev))
	}
	return extra
}

func (t *tx) pin(resp *clientv3.GetResponse) {
	if t.rev == 0 {
		t.rev = resp.Header.Revision
	}
}

func (t *tx) Get(key string) ([]byte, error) {
	if v, ok := t.writes[key]; ok {
		if v == nil {
			return nil, store.ErrNotFound
		}
		return v, nil
	}
	full := t.s.prefix + key
	resp, err := t.s.cli.Get(t.ctx, full, t.readOpts()...)
	if err != nil {
		return nil, err
	}
	t.pin(resp)
	if len(resp.Kvs) == 0 {
		t.reads[full] = 0
		return nil, store.ErrNotFound
	}
	t.reads[full] = resp.Kvs[0].ModRevision
	v := resp.Kvs[0].Value
	if v == nil {
		v = []byte{}
	}
	return v, nil
}

func (t *tx) Put(key string, value []byte) error {
	if !t.writable {
		return store.ErrReadOnly
	}
	if value == nil {
		value = []byte{}
	}
	t.writes[key] = value
	return nil
}

func (t *tx) Delete(key string) error {
	if !t.writable {
		return store.ErrReadOnly
	}
	t.writes[key] = nil
	return nil
}

func (t *tx) List(prefix string) ([]store.KV, error) {
	full := t.s.prefix + prefix
	resp, err := t.s.cli.Get(t.ctx, full, t.readOpts(clientv3.WithPrefix(), clientv3.WithSort(clientv3.SortByKey, clientv3.SortAscend))...)
	if err != nil {
		return nil, err
	}
	t.pin(resp)
	t.ranges = append(t.ranges, full)
	merged := map[string][]byte{}
	for _, kv := range resp.Kvs {
		t.reads[string(kv.Key)] = kv.ModRevision
		v := kv.Value
		if v == nil {
			v = []byte{}
		}
		merged[strings.TrimPrefix(string(kv.Key), t.s.prefix)] = v
	}
	for k, v := range t.writes {
		if !strings.HasPrefix(k, prefix) {
			continue
		}
		if v == nil {
			delete(merged, k)
		} else {
			merged[k] = v
		}
	}
	out := make([]store.KV, 0, len(merged))
	for k, v := range merged {
		out = append(out, store.KV{Key: k, Value: v})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return out, nil
}

// commit applies the writes if nothing read changed; ok is false on a
// conflict.
func (t *tx) commit() (ok bool, err error) {
	if len(t.writes) == 0 {
		return true, nil
	}
	var cmps []clientv3.Cmp
	for k, rev := range t.reads {
		cmps = append(cmps, clientv3.Compare(clientv3.ModRevision(k), "=", rev))
	}
	for _, p := range t.ranges {
		// No key under the prefix changed (or appeared) after the snapshot.
		cmps = append(cmps, clientv3.Compare(clientv3.ModRevision(p), "<", t.rev+1).WithPrefix())
	}
	ops := make([]clientv3.Op, 0, len(t.writes))
	keys := make([]string, 0, len(t.writes))
	for k := range t.writes {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if v := t.writes[k]; v == nil {
			ops = append(ops, clientv3.OpDelete(t.s.prefix+k))
		} else {
			ops = append(ops, clientv3.OpPut(t.s.prefix+k, string(v)))
		}
	}
	resp, err := t.s.cli.Txn(t.ctx).If(cmps...).Then(ops...).Commit()
	if err != nil {
		return false, err
	}
	return resp.Succeeded, nil
}
