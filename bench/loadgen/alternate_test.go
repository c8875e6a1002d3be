package loadgen

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestAlternate(t *testing.T) {
	var (
		mu  sync.Mutex
		log []string // "arm:index", in the order requests were sent
	)
	arm := func(name string) Arm {
		return Arm{Name: name, Work: Work{Do: func(_ context.Context, i int) error {
			mu.Lock()
			defer mu.Unlock()
			log = append(log, fmt.Sprintf("%s:%d", name, i))
			return nil
		}}}
	}
	res, err := Alternate(context.Background(), []Arm{arm("L"), arm("B")},
		Plan{Load: Load{Concurrency: 1, Requests: 7, MaxDuration: time.Minute}, Rounds: 3, Warmup: 1})
	require.NoError(t, err)
	require.Len(t, res, 2)
	assert.Equal(t, []string{
		"L:0", "B:0", // warmup, unmeasured
		"L:1", "L:2", "B:1", "B:2", // round 1: L first
		"B:3", "B:4", "L:3", "L:4", // round 2: B first
		"L:5", "L:6", "L:7", "B:5", "B:6", "B:7", // round 3 takes the remainder
	}, log)
	assert.Equal(t, 7, res[0].Completed(), "warmup requests are not measured")
	assert.Equal(t, 7, res[1].Completed())
}

func TestAlternateRejects(t *testing.T) {
	ok := Plan{Load: Load{Concurrency: 1, Requests: 1, MaxDuration: time.Second}, Rounds: 1}
	arm := []Arm{{"a", Work{Do: func(context.Context, int) error { return nil }}}}
	_, err := Alternate(context.Background(), nil, ok)
	assert.ErrorContains(t, err, "no arms")
	_, err = Alternate(context.Background(), arm, Plan{Load: ok.Load})
	assert.ErrorContains(t, err, "rounds 0")
	_, err = Alternate(context.Background(), arm, Plan{Load: Load{Concurrency: 1, Requests: 1}, Rounds: 1})
	assert.ErrorContains(t, err, "bounded in time")
}
