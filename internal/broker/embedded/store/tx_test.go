package store

import (
	"sort"
	"strings"
)

// memTx is a Tx over a map, for the tests of the helpers that sit on top
// of any store (the backends have their own conformance suite).
type memTx map[string][]byte

func (m memTx) Get(key string) ([]byte, error) {
	v, ok := m[key]
	if !ok {
		return nil, ErrNotFound
	}
	return v, nil
}

func (m memTx) Put(key string, value []byte) error { m[key] = value; return nil }

func (m memTx) Delete(key string) error { delete(m, key); return nil }

func (m memTx) List(prefix string) ([]KV, error) {
	var out []KV
	for k, v := range m {
		if strings.HasPrefix(k, prefix) {
			out = append(out, KV{Key: k, Value: v})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return out, nil
}

// keys returns the keys held, sorted.
func (m memTx) keys() []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
