package store

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestIsNotFound(t *testing.T) {
	tests := []struct {
		name string
		err  error
		want bool
	}{
		{"nil", nil, false},
		{"ErrNotFound", ErrNotFound, true},
		{"wrapped", fmt.Errorf("reading instance: %w", ErrNotFound), true},
		{"another error", ErrReadOnly, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, IsNotFound(tt.err))
		})
	}
}

// Every typed record goes in under its key and comes out equal; a missing
// one is ErrNotFound; a deleted one is missing.
func TestTypedRecordsRoundTrip(t *testing.T) {
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	tests := []struct {
		name   string
		key    string
		put    func(Tx) error
		get    func(Tx) (any, error)
		delete func(Tx) error
		want   any
	}{
		{
			"spec", SpecKey("s"),
			func(tx Tx) error {
				return PutSpec(tx, &SpecRecord{ServiceID: "s", Name: "n", Bundle: []byte(`{}`), UpdatedAt: at})
			},
			func(tx Tx) (any, error) { return GetSpec(tx, "s") },
			func(tx Tx) error { return DeleteSpec(tx, "s") },
			&SpecRecord{ServiceID: "s", Name: "n", Bundle: []byte(`{}`), UpdatedAt: at},
		},
		{
			"instance", InstanceKey("i"),
			func(tx Tx) error {
				return PutInstance(tx, &Instance{ID: "i", State: InstanceProvisioned, CreatedAt: at})
			},
			func(tx Tx) (any, error) { return GetInstance(tx, "i") },
			func(tx Tx) error { return DeleteInstance(tx, "i") },
			&Instance{ID: "i", State: InstanceProvisioned, CreatedAt: at},
		},
		{
			"binding", BindingKey("i", "b"),
			func(tx Tx) error { return PutBinding(tx, &Binding{InstanceID: "i", ID: "b", State: BindingBound}) },
			func(tx Tx) (any, error) { return GetBinding(tx, "i", "b") },
			func(tx Tx) error { return DeleteBinding(tx, "i", "b") },
			&Binding{InstanceID: "i", ID: "b", State: BindingBound},
		},
		{
			"job", JobKey("t"),
			func(tx Tx) error { return PutJob(tx, &Job{Token: "t", Method: Bind, State: JobRunning}) },
			func(tx Tx) (any, error) { return GetJob(tx, "t") },
			func(tx Tx) error { return DeleteJob(tx, "t") },
			&Job{Token: "t", Method: Bind, State: JobRunning},
		},
		{
			"runner", RunnerKey("r"),
			func(tx Tx) error { return PutRunner(tx, &Runner{ID: "r", PID: 7, Heartbeat: at}) },
			func(tx Tx) (any, error) { return GetRunner(tx, "r") },
			func(tx Tx) error { return DeleteRunner(tx, "r") },
			&Runner{ID: "r", PID: 7, Heartbeat: at},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tx := memTx{}
			_, err := tt.get(tx)
			assert.True(t, IsNotFound(err), "missing: %v", err)

			require.NoError(t, tt.put(tx))
			assert.Equal(t, []string{tt.key}, tx.keys())
			got, err := tt.get(tx)
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)

			require.NoError(t, tt.delete(tx))
			assert.Empty(t, tx.keys())
		})
	}
}

func TestGetReportsARecordItCannotDecode(t *testing.T) {
	tx := memTx{InstanceKey("i"): []byte("{")}
	_, err := GetInstance(tx, "i")
	require.Error(t, err)
	assert.False(t, IsNotFound(err))
	assert.Contains(t, err.Error(), `decode store record "instances/i"`)
}

func TestLists(t *testing.T) {
	tx := memTx{}
	for _, id := range []string{"b", "a"} {
		require.NoError(t, PutInstance(tx, &Instance{ID: id}))
		require.NoError(t, PutSpec(tx, &SpecRecord{ServiceID: id, Bundle: []byte(`{}`)}))
		require.NoError(t, PutJob(tx, &Job{Token: id}))
		require.NoError(t, PutRunner(tx, &Runner{ID: id}))
	}
	require.NoError(t, PutBinding(tx, &Binding{InstanceID: "a", ID: "1"}))
	require.NoError(t, PutBinding(tx, &Binding{InstanceID: "a", ID: "2"}))
	require.NoError(t, PutBinding(tx, &Binding{InstanceID: "a/b", ID: "3"}))
	require.NoError(t, PutBinding(tx, &Binding{InstanceID: "ab", ID: "4"}))

	instances, err := ListInstances(tx)
	require.NoError(t, err)
	assert.Equal(t, []*Instance{{ID: "a"}, {ID: "b"}}, instances, "every instance, in key order, and nothing else")
	specs, err := ListSpecs(tx)
	require.NoError(t, err)
	assert.Equal(t, []*SpecRecord{{ServiceID: "a", Bundle: []byte(`{}`)}, {ServiceID: "b", Bundle: []byte(`{}`)}}, specs)
	jobs, err := ListJobs(tx)
	require.NoError(t, err)
	assert.Equal(t, []*Job{{Token: "a"}, {Token: "b"}}, jobs)
	runners, err := ListRunners(tx)
	require.NoError(t, err)
	assert.Equal(t, []*Runner{{ID: "a"}, {ID: "b"}}, runners)

	bindings, err := ListBindings(tx, "a")
	require.NoError(t, err)
	assert.Equal(t, []*Binding{{InstanceID: "a", ID: "1"}, {InstanceID: "a", ID: "2"}}, bindings, "the bindings of instance a only")
	none, err := ListBindings(tx, "c")
	require.NoError(t, err)
	assert.Empty(t, none)

	tx[InstanceKey("broken")] = []byte("[")
	_, err = ListInstances(tx)
	assert.ErrorContains(t, err, `decode store record "instances/broken"`)
}

func TestState(t *testing.T) {
	tests := []struct {
		name   string
		stored map[string][]byte
		put    map[string]string
		want   map[string]string
		keys   []string
	}{
		{"an instance without state has an empty map", nil, nil, map[string]string{}, []string{}},
		{"a stored null is an empty map", map[string][]byte{StateKey("i"): []byte("null")}, nil, map[string]string{}, []string{StateKey("i")}},
		{"state round-trips", nil, map[string]string{"password": "x"}, map[string]string{"password": "x"}, []string{StateKey("i")}},
		{"an empty state removes the key", map[string][]byte{StateKey("i"): []byte(`{"a":"b"}`)}, map[string]string{}, map[string]string{}, []string{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tx := memTx{}
			for k, v := range tt.stored {
				tx[k] = v
			}
			if tt.put != nil {
				require.NoError(t, PutState(tx, "i", tt.put))
			}
			got, err := GetState(tx, "i")
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
			keys := tx.keys()
			assert.Equal(t, tt.keys, keys)
		})
	}

	tx := memTx{}
	require.NoError(t, PutState(tx, "i", map[string]string{"a": "b"}))
	require.NoError(t, DeleteState(tx, "i"))
	assert.Empty(t, tx.keys(), "DeleteState removes the state")
	tx[StateKey("i")] = []byte("{")
	_, err := GetState(tx, "i")
	assert.ErrorContains(t, err, "decode store record")
}

func TestGetSpecMarkReadsOnlyTheMark(t *testing.T) {
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	tx := memTx{}
	require.NoError(t, PutSpec(tx, &SpecRecord{ServiceID: "s", Bundle: []byte(`{"files":{"a":"b"}}`), Marked: true, MarkedAt: at}))
	m, err := GetSpecMark(tx, "s")
	require.NoError(t, err)
	assert.True(t, m.Marked)
	assert.True(t, at.Equal(m.MarkedAt))

	require.NoError(t, PutSpec(tx, &SpecRecord{ServiceID: "u", Bundle: []byte(`{}`)}))
	m, err = GetSpecMark(tx, "u")
	require.NoError(t, err)
	assert.Equal(t, &SpecMark{}, m)

	_, err = GetSpecMark(tx, "missing")
	assert.True(t, IsNotFound(err))
}
