package store

import (
	"encoding/json"
	"fmt"
	"time"
)

// GetGone returns the record of a deleted instance or binding (key from
// GoneInstanceKey or GoneBindingKey).
func GetGone(tx Tx, key string) (*Gone, error) { return get[Gone](tx, key) }

// PutGone records that an instance or binding was deleted.
func PutGone(tx Tx, key string, g *Gone) error { return put(tx, key, g) }

// DeleteGone forgets a deleted instance or binding (its identifier is in
// use again).
func DeleteGone(tx Tx, key string) error { return tx.Delete(key) }

// PruneGone deletes the records of instances and bindings deleted before
// the given time and returns how many it deleted.
func PruneGone(tx Tx, before time.Time) (int, error) {
	kvs, err := tx.List(gonePrefix)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, kv := range kvs {
		var g Gone
		if err := json.Unmarshal(kv.Value, &g); err != nil {
			return n, fmt.Errorf("decode store record %q: %w", kv.Key, err)
		}
		if g.DeletedAt.Before(before) {
			if err := tx.Delete(kv.Key); err != nil {
				return n, err
			}
			n++
		}
	}
	return n, nil
}
