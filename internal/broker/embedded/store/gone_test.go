package store

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestGoneRoundTrip(t *testing.T) {
	tx := memTx{}
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	require.NoError(t, PutGone(tx, GoneInstanceKey("i"), &Gone{Job: "j", DeletedAt: at}))
	g, err := GetGone(tx, GoneInstanceKey("i"))
	require.NoError(t, err)
	assert.Equal(t, "j", g.Job)
	assert.True(t, at.Equal(g.DeletedAt))

	require.NoError(t, DeleteGone(tx, GoneInstanceKey("i")))
	_, err = GetGone(tx, GoneInstanceKey("i"))
	assert.True(t, IsNotFound(err), "a forgotten record is gone: %v", err)
}

func TestPruneGone(t *testing.T) {
	cut := time.Date(2026, 1, 2, 0, 0, 0, 0, time.UTC)
	tests := []struct {
		name      string
		records   map[string]time.Time
		wantN     int
		wantLeft  []string
		wantError string
	}{
		{"nothing recorded", nil, 0, []string{}, ""},
		{
			"only records deleted before the cut go",
			map[string]time.Time{
				GoneInstanceKey("old"):        cut.Add(-time.Hour),
				GoneBindingKey("old", "b"):    cut.Add(-time.Second),
				GoneInstanceKey("at-the-cut"): cut,
				GoneBindingKey("new", "b"):    cut.Add(time.Hour),
			},
			2, []string{GoneBindingKey("new", "b"), GoneInstanceKey("at-the-cut")}, "",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tx := memTx{}
			for k, at := range tt.records {
				require.NoError(t, PutGone(tx, k, &Gone{Job: "j", DeletedAt: at}))
			}
			require.NoError(t, PutInstance(tx, &Instance{ID: "kept"}), "other records are never pruned")
			n, err := PruneGone(tx, cut)
			require.NoError(t, err)
			assert.Equal(t, tt.wantN, n)
			left := []string{}
			for _, k := range tx.keys() {
				if k != InstanceKey("kept") {
					left = append(left, k)
				}
			}
			assert.Equal(t, tt.wantLeft, left)
		})
	}
}

func TestPruneGoneReportsARecordItCannotDecode(t *testing.T) {
	tx := memTx{GoneInstanceKey("bad"): []byte("not json")}
	n, err := PruneGone(tx, time.Now())
	require.Error(t, err)
	assert.Zero(t, n)
	assert.Contains(t, err.Error(), `decode store record "gone/instances/bad"`)
}
