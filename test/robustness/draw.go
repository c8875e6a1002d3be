package robustness

import (
	"encoding/binary"
	"hash/fnv"
	"math/rand/v2"
	"sync"
)

// draws hands out random numbers that depend on the seed and on what they
// are for, not on the order in which concurrent requests ask: the n-th
// draw for the same key is the same in every run with the seed.
type draws struct {
	seed int64
	mu   sync.Mutex
	seen map[string]uint64
}

func newDraws(seed int64) *draws { return &draws{seed: seed, seen: map[string]uint64{}} }

// float returns a number in [0, 1) for the next draw of key.
func (d *draws) float(key string) float64 {
	d.mu.Lock()
	n := d.seen[key]
	d.seen[key] = n + 1
	d.mu.Unlock()
	h := fnv.New64a()
	_ = binary.Write(h, binary.LittleEndian, d.seed)
	_ = binary.Write(h, binary.LittleEndian, n)
	_, _ = h.Write([]byte(key))
	return rand.New(rand.NewPCG(h.Sum64(), 0)).Float64()
}

// rng returns a generator for one purpose (a client, the fault schedule)
// that depends on the seed and the purpose only.
func rng(seed int64, purpose string) *rand.Rand {
	h := fnv.New64a()
	_ = binary.Write(h, binary.LittleEndian, seed)
	_, _ = h.Write([]byte(purpose))
	return rand.New(rand.NewPCG(h.Sum64(), uint64(seed)))
}
