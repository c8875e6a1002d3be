package credentials

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/go-logr/logr/funcr"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/lockstep-dev/lockstep/api/v1alpha1"
)

func ptr(s string) *string { return &s }

func rename(from, to string) v1alpha1.SecretTransform {
	return v1alpha1.SecretTransform{RenameKey: &v1alpha1.RenameKeyTransform{From: from, To: to}}
}

func addValue(key, value string) v1alpha1.SecretTransform {
	return v1alpha1.SecretTransform{AddKey: &v1alpha1.AddKeyTransform{Key: key, Value: ptr(value)}}
}

func addTemplate(key, tmpl string) v1alpha1.SecretTransform {
	return v1alpha1.SecretTransform{AddKey: &v1alpha1.AddKeyTransform{Key: key, Template: ptr(tmpl)}}
}

func addJSONPath(key, expr string) v1alpha1.SecretTransform {
	return v1alpha1.SecretTransform{AddKey: &v1alpha1.AddKeyTransform{Key: key, JSONPath: ptr(expr)}}
}

func addFrom(secret string) v1alpha1.SecretTransform {
	return v1alpha1.SecretTransform{AddKeysFrom: &v1alpha1.AddKeysFromTransform{SecretRef: v1alpha1.LocalSecretReference{Name: secret}}}
}

func remove(key string) v1alpha1.SecretTransform {
	return v1alpha1.SecretTransform{RemoveKey: &v1alpha1.RemoveKeyTransform{Key: key}}
}

// brokerCreds holds the values no error may show.
var brokerCreds = map[string]any{
	"username": "app-user",
	"password": "hunter2-secret",
	"host":     "db.internal",
	"port":     float64(5432),
	"connection": map[string]any{
		"primary":  map[string]any{"host": "primary.internal", "port": float64(5433)},
		"replicas": []any{"replica-a.internal", "replica-b.internal"},
	},
}

func TestTransforms(t *testing.T) {
	extra := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "extra"},
		Data: map[string][]byte{"ca.crt": []byte("ca-secret-bytes"), "password": []byte("from-extra")}}
	tests := []struct {
		name       string
		transforms []v1alpha1.SecretTransform
		// want are the keys changed from what the broker sent (the
		// others are as it sent them); gone the keys removed.
		want    map[string]string
		gone    []string
		wantErr string
	}{
		{name: "no transforms"},
		{name: "rename a key", transforms: []v1alpha1.SecretTransform{rename("username", "user")},
			want: map[string]string{"user": "app-user"}, gone: []string{"username"}},
		{name: "rename onto a key replaces it", transforms: []v1alpha1.SecretTransform{rename("host", "username")},
			want: map[string]string{"username": "db.internal"}, gone: []string{"host"}},
		{name: "rename a key the Secret does not hold", transforms: []v1alpha1.SecretTransform{rename("user", "login")},
			wantErr: `spec.secretTransforms[0].renameKey.from: Invalid value: "user": the Secret holds no such key at this point (it holds: connection, host, password, port, provider, type, username)`},
		{name: "rename a key an earlier transform removed", transforms: []v1alpha1.SecretTransform{remove("host"), rename("host", "hostname")},
			wantErr: `spec.secretTransforms[1].renameKey.from: Invalid value: "host"`},
		{name: "add a key with a value", transforms: []v1alpha1.SecretTransform{addValue("sslmode", "require")},
			want: map[string]string{"sslmode": "require"}},
		{name: "add a key over one the broker sent", transforms: []v1alpha1.SecretTransform{addValue("type", "postgresql")},
			want: map[string]string{"type": "postgresql"}},
		{name: "add a key with a template", transforms: []v1alpha1.SecretTransform{addTemplate("uri", "postgres://{{.username}}:{{.password}}@{{.host}}:{{.port}}/orders")},
			want: map[string]string{"uri": "postgres://app-user:hunter2-secret@db.internal:5432/orders"}},
		{name: "a template sees the keys as earlier transforms left them",
			transforms: []v1alpha1.SecretTransform{rename("username", "user"), addTemplate("login", "{{.user}}@{{.host}}")},
			want:       map[string]string{"user": "app-user", "login": "app-user@db.internal"}, gone: []string{"username"}},
		{name: "a template that names a missing key", transforms: []v1alpha1.SecretTransform{addTemplate("uri", "{{if .tls}}x{{end}}{{.username}}")},
			wantErr: `spec.secretTransforms[0].addKey.template: Invalid value: "{{if .tls}}x{{end}}{{.username}}": it names key "tls": the Secret holds no such key`},
		{name: "a template that fails otherwise does not quote the engine", transforms: []v1alpha1.SecretTransform{addTemplate("n", "{{index .password 40}}")},
			wantErr: `spec.secretTransforms[0].addKey.template: Invalid value: "{{index .password 40}}": it cannot be applied to the Secret's keys`},
		{name: "extract a nested value with a JSON path", transforms: []v1alpha1.SecretTransform{addJSONPath("primary-host", "{.connection.primary.host}")},
			want: map[string]string{"primary-host": "primary.internal"}},
		{name: "extract a number as JSON", transforms: []v1alpha1.SecretTransform{addJSONPath("primary-port", "{.connection.primary.port}")},
			want: map[string]string{"primary-port": "5433"}},
		{name: "extract an array element", transforms: []v1alpha1.SecretTransform{addJSONPath("replica", "{.connection.replicas[1]}")},
			want: map[string]string{"replica": "replica-b.internal"}},
		{name: "extract an object as JSON", transforms: []v1alpha1.SecretTransform{addJSONPath("primary", "{.connection.primary}")},
			want: map[string]string{"primary": `{"host":"primary.internal","port":5433}`}},
		{name: "a JSON path that finds nothing", transforms: []v1alpha1.SecretTransform{addJSONPath("x", "{.connection.standby.host}")},
			wantErr: `spec.secretTransforms[0].addKey.jsonPath: Invalid value: "{.connection.standby.host}": it finds 0 values in the broker's credentials (top-level keys: connection, host, password, port, username); it must find exactly one`},
		{name: "a JSON path that finds several values", transforms: []v1alpha1.SecretTransform{addJSONPath("x", "{.connection.replicas[*]}")},
			wantErr: "it finds 2 values"},
		{name: "copy the keys of another Secret", transforms: []v1alpha1.SecretTransform{addFrom("extra")},
			want: map[string]string{"ca.crt": "ca-secret-bytes", "password": "from-extra"}},
		{name: "copy from a Secret that does not exist", transforms: []v1alpha1.SecretTransform{addFrom("missing")},
			wantErr: `spec.secretTransforms[0].addKeysFrom.secretRef.name: Not found: "missing"`},
		{name: "remove a key", transforms: []v1alpha1.SecretTransform{remove("connection")},
			gone: []string{"connection"}},
		{name: "remove a key the Secret does not hold: no change", transforms: []v1alpha1.SecretTransform{remove("nothing")}},
		{name: "remove a well-known entry", transforms: []v1alpha1.SecretTransform{remove("provider")},
			gone: []string{"provider"}},
		{name: "a transform with two changes", transforms: []v1alpha1.SecretTransform{{RemoveKey: &v1alpha1.RemoveKeyTransform{Key: "a"}, RenameKey: &v1alpha1.RenameKeyTransform{From: "b", To: "c"}}},
			wantErr: `spec.secretTransforms[0]: Invalid value: "2 changes": set exactly one of renameKey, addKey, addKeysFrom and removeKey`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var logs bytes.Buffer
			ctx := log.IntoContext(context.Background(), funcr.New(func(prefix, args string) { logs.WriteString(prefix + args) }, funcr.Options{Verbosity: 10}))
			b := binding("db", "1")
			b.Spec.SecretTransforms = tt.transforms
			c := newClient(t, extra)
			got, err := Content(ctx, c, b, Offering{Provider: "acme", Service: "pg"}, brokerCreds)
			if tt.wantErr != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tt.wantErr)
				for _, secret := range []string{"app-user", "hunter2", "internal", "5432", "ca-secret", "from-extra"} {
					assert.NotContains(t, err.Error(), secret, "an error never shows a value")
				}
				return
			}
			require.NoError(t, err)
			want, err := Content(ctx, c, binding("db", "1"), Offering{Provider: "acme", Service: "pg"}, brokerCreds)
			require.NoError(t, err)
			for k, v := range tt.want {
				want[k] = []byte(v)
			}
			for _, k := range tt.gone {
				delete(want, k)
			}
			assert.Equal(t, want, got)
			assert.Empty(t, logs.String(), "transforms log nothing")

			// Write applies them too.
			require.NoError(t, Write(ctx, c, b, Offering{Provider: "acme", Service: "pg"}, brokerCreds))
			var s corev1.Secret
			require.NoError(t, c.Get(ctx, client.ObjectKey{Namespace: "team", Name: "db"}, &s))
			assert.Equal(t, want, s.Data)
		})
	}
}

func TestCheckTransforms(t *testing.T) {
	tests := []struct {
		name       string
		transforms []v1alpha1.SecretTransform
		want       []string
	}{
		{name: "every kind of transform, valid", transforms: []v1alpha1.SecretTransform{
			rename("a", "b"), addValue("c", "v"), addTemplate("d", "{{.a}}"), addJSONPath("e", "{.x.y}"), addFrom("s"), remove("f")}},
		{name: "no change set", transforms: []v1alpha1.SecretTransform{{}},
			want: []string{`spec.secretTransforms[0]: Invalid value: "0 changes"`}},
		{name: "an invalid key to rename to", transforms: []v1alpha1.SecretTransform{rename("a", "b/c")},
			want: []string{`spec.secretTransforms[0].renameKey.to: Invalid value: "b/c": not a valid Secret key`}},
		{name: "an invalid key to add", transforms: []v1alpha1.SecretTransform{addValue("", "v")},
			want: []string{`spec.secretTransforms[0].addKey.key: Invalid value: "": not a valid Secret key`}},
		{name: "an addKey with no value", transforms: []v1alpha1.SecretTransform{{AddKey: &v1alpha1.AddKeyTransform{Key: "k"}}},
			want: []string{`spec.secretTransforms[0].addKey: Invalid value: "k": set exactly one of value, template and jsonPath`}},
		{name: "an addKey with two values", transforms: []v1alpha1.SecretTransform{{AddKey: &v1alpha1.AddKeyTransform{Key: "k", Value: ptr("v"), Template: ptr("t")}}},
			want: []string{"set exactly one of value, template and jsonPath"}},
		{name: "a template that does not parse", transforms: []v1alpha1.SecretTransform{addTemplate("k", "{{.a")},
			want: []string{`spec.secretTransforms[0].addKey.template: Invalid value: "{{.a": not a Go template`}},
		{name: "a JSON path that does not parse", transforms: []v1alpha1.SecretTransform{addJSONPath("k", "{.a[}")},
			want: []string{`spec.secretTransforms[0].addKey.jsonPath: Invalid value: "{.a[}": not a JSONPath`}},
		{name: "all errors at once", transforms: []v1alpha1.SecretTransform{rename("a", "b/c"), addTemplate("k", "{{")},
			want: []string{"secretTransforms[0].renameKey.to", "secretTransforms[1].addKey.template"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			errs := CheckTransforms(tt.transforms, field.NewPath("spec", "secretTransforms"))
			require.Len(t, errs, len(tt.want), "errors: %v", errs)
			for i, w := range tt.want {
				assert.True(t, strings.Contains(errs[i].Error(), w), "%q contains %q", errs[i].Error(), w)
			}
		})
	}
}
