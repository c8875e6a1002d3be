package credentials

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestContentWellKnownEntries(t *testing.T) {
	postgres := Offering{Provider: "acme", Service: "small-db", Tags: []string{"postgresql", "sql"}}
	tests := []struct {
		name        string
		bindingType string
		offering    Offering
		creds       map[string]any
		want        map[string]string
	}{
		{name: "type from the service's first tag, provider from the broker", offering: postgres,
			creds: map[string]any{"username": "u"},
			want:  map[string]string{"username": "u", "type": "postgresql", "provider": "acme"}},
		{name: "spec.bindingType before the tags", bindingType: "mysql", offering: postgres,
			creds: map[string]any{"username": "u"},
			want:  map[string]string{"username": "u", "type": "mysql", "provider": "acme"}},
		{name: "the service's name when it has no tag", offering: Offering{Provider: "acme", Service: "small-db", Tags: []string{""}},
			creds: map[string]any{},
			want:  map[string]string{"type": "small-db", "provider": "acme"}},
		{name: "keys the broker sent stay as it sent them", bindingType: "mysql", offering: postgres,
			creds: map[string]any{"type": "redis", "provider": "cloud"},
			want:  map[string]string{"type": "redis", "provider": "cloud"}},
		{name: "nothing to derive from: no entries", offering: Offering{},
			creds: map[string]any{"password": "p"},
			want:  map[string]string{"password": "p"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := binding("db", "1")
			b.Spec.BindingType = tt.bindingType
			got, err := Content(context.Background(), newClient(t), b, tt.offering, tt.creds)
			require.NoError(t, err)
			assert.Equal(t, bytesOf(tt.want), got)
		})
	}
}

// TestContentNestedCredentials pins the one form of a credential that is
// not a string: its JSON text under its top-level key.
func TestContentNestedCredentials(t *testing.T) {
	tests := []struct {
		name  string
		creds map[string]any
		want  map[string]string
	}{
		{name: "a string as it is", creds: map[string]any{"password": "p@ss word"},
			want: map[string]string{"password": "p@ss word"}},
		{name: "a uri as the broker sent it", creds: map[string]any{"uri": "postgres://u:p%40ss@db.example:5432/orders?sslmode=require"},
			want: map[string]string{"uri": "postgres://u:p%40ss@db.example:5432/orders?sslmode=require"}},
		{name: "a number", creds: map[string]any{"port": float64(5432)},
			want: map[string]string{"port": "5432"}},
		{name: "a boolean", creds: map[string]any{"tls": true},
			want: map[string]string{"tls": "true"}},
		{name: "null", creds: map[string]any{"ca": nil},
			want: map[string]string{"ca": "null"}},
		{name: "a nested object as one JSON string", creds: map[string]any{"connection": map[string]any{"host": "db", "port": float64(5432)}},
			want: map[string]string{"connection": `{"host":"db","port":5432}`}},
		{name: "an array as one JSON string", creds: map[string]any{"hosts": []any{"a", "b"}},
			want: map[string]string{"hosts": `["a","b"]`}},
		{name: "an empty object", creds: map[string]any{"extra": map[string]any{}},
			want: map[string]string{"extra": `{}`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Content(context.Background(), newClient(t), binding("db", "1"), Offering{}, tt.creds)
			require.NoError(t, err)
			assert.Equal(t, bytesOf(tt.want), got)
		})
	}
}

func bytesOf(m map[string]string) map[string][]byte {
	out := make(map[string][]byte, len(m))
	for k, v := range m {
		out[k] = []byte(v)
	}
	return out
}
