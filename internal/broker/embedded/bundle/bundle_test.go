package bundle_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lockstep-dev/lockstep/internal/broker/embedded/bundle"
)

const validManifest = `{
  "name": "db", "id": "svc-db", "description": "A database", "bindable": true,
  "plans": [{
    "id": "plan-small", "name": "small", "description": "Small", "updateable": true,
    "schemas": {
      "create": {"type": "object", "properties": {"size": {"type": "integer", "minimum": 1}, "region": {"type": "string"}}, "required": ["size"]},
      "update": {"type": "object", "properties": {"size": {"type": "integer", "minimum": 1}}},
      "bind":   {"type": "object", "properties": {"role": {"enum": ["ro", "rw"]}}}
    }
  }, {"id": "plan-big", "name": "big", "description": "Big", "bindable": false, "asynchronous": true}]
}`

// writeBundle writes a bundle directory: files maps paths to content; paths
// under actions/ are made executable.
func writeBundle(t *testing.T, manifest string, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, bundle.ManifestFile), []byte(manifest), 0o644))
	for name, content := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		mode := os.FileMode(0o644)
		if strings.HasPrefix(name, "actions/") {
			mode = 0o755
		}
		require.NoError(t, os.WriteFile(p, []byte(content), mode))
	}
	return dir
}

func TestParseManifestErrors(t *testing.T) {
	tests := []struct {
		name     string
		manifest string
		want     []string
	}{
		{"not json", `{`, []string{"decode manifest"}},
		{"unknown field", `{"name":"a","id":"a","description":"a","bindabel":true,"plans":[{"id":"p","name":"p","description":"p"}]}`, []string{`unknown field "bindabel"`}},
		{"missing fields, no plans", `{}`, []string{"name is required", "id is required", "description is required", "at least one plan"}},
		{"bad name", `{"name":"a b","id":"a","description":"a","plans":[{"id":"p","name":"p","description":"p"}]}`, []string{"must use only letters"}},
		{"duplicate plans", `{"name":"a","id":"a","description":"a","plans":[{"id":"p","name":"p","description":"p"},{"id":"p","name":"p","description":"p"}]}`, []string{`id "p" is used by two plans`, `name "p" is used by two plans`}},
		{"unknown action", `{"name":"a","id":"a","description":"a","actions":{"explode":"x"},"plans":[{"id":"p","name":"p","description":"p"}]}`, []string{`unknown action "explode"`}},
		{"bad timeout", `{"name":"a","id":"a","description":"a","timeout":"soon","plans":[{"id":"p","name":"p","description":"p"}]}`, []string{"invalid duration"}},
		{"limits out of range", `{"name":"a","id":"a","description":"a","limits":{"memory":"0","cpu":"-1s","processes":-1},"plans":[{"id":"p","name":"p","description":"p"}]}`,
			[]string{"limits.memory 0 must be more than 0", "limits.cpu -1s must not be negative", "limits.processes must not be negative"}},
		{"a misspelt limit", `{"name":"a","id":"a","description":"a","limits":{"memroy":"1Gi"},"plans":[{"id":"p","name":"p","description":"p"}]}`, []string{`unknown field "memroy"`}},
		{"a memory that is no quantity", `{"name":"a","id":"a","description":"a","limits":{"memory":"lots"},"plans":[{"id":"p","name":"p","description":"p"}]}`, []string{"quantities must match"}},
		{"schema not an object", `{"name":"a","id":"a","description":"a","plans":[{"id":"p","name":"p","description":"p","schemas":{"create":[1]}}]}`, []string{"must be a JSON object"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := bundle.ParseManifest([]byte(tt.manifest))
			require.Error(t, err)
			for _, w := range tt.want {
				assert.Contains(t, err.Error(), w)
			}
		})
	}
}

func TestLoadDir(t *testing.T) {
	tests := []struct {
		name        string
		manifest    string
		files       map[string]string
		wantErr     string
		wantActions map[bundle.Action]string
	}{
		{
			name: "conventional actions and no-op fallback", manifest: validManifest,
			files: map[string]string{"actions/provision": "#!/bin/sh\n", "actions/bind": "#!/bin/sh\n", "lib/common.sh": "x=1\n"},
			wantActions: map[bundle.Action]string{
				bundle.Provision: "actions/provision", bundle.Bind: "actions/bind",
				bundle.Update: bundle.Noop, bundle.Deprovision: bundle.Noop, bundle.Unbind: bundle.Noop,
			},
		},
		{
			name:     "declared programs and built-ins",
			manifest: strings.Replace(validManifest, `"bindable": true,`, `"bindable": true, "actions": {"provision": "bin/make", "bind": "builtin:echo"},`, 1),
			files:    map[string]string{"actions/make": "#!/bin/sh\n", "bin/make": "#!/bin/sh\n"},
			wantErr:  `program "bin/make" is not executable`,
		},
		{
			name:     "unknown built-in",
			manifest: strings.Replace(validManifest, `"bindable": true,`, `"bindable": true, "actions": {"bind": "builtin:magic"},`, 1),
			wantErr:  `unknown built-in "builtin:magic"`,
		},
		{
			name:     "program outside the bundle",
			manifest: strings.Replace(validManifest, `"bindable": true,`, `"bindable": true, "actions": {"bind": "../../bin/sh"},`, 1),
			wantErr:  "must be a path inside the bundle",
		},
		{
			name:     "missing program",
			manifest: strings.Replace(validManifest, `"bindable": true,`, `"bindable": true, "actions": {"bind": "actions/nothere"},`, 1),
			wantErr:  `"actions/nothere" is not a file of the bundle`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := writeBundle(t, tt.manifest, tt.files)
			b, err := bundle.LoadDir(dir, 0)
			if tt.wantErr != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tt.wantErr)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.wantActions, b.Actions)
			assert.Len(t, b.Digest, 64)
			assert.True(t, b.Files["actions/provision"].Executable)
			assert.False(t, b.Files["lib/common.sh"].Executable)
		})
	}
}

func TestLoadDirLimitsAndLinks(t *testing.T) {
	dir := writeBundle(t, validManifest, map[string]string{"big": strings.Repeat("x", 2048)})
	_, err := bundle.LoadDir(dir, 1024)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "exceed 1024 bytes")

	require.NoError(t, os.Symlink("/etc/passwd", filepath.Join(dir, "link")))
	_, err = bundle.LoadDir(dir, 0)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "not a regular file")

	_, err = bundle.LoadDir(t.TempDir(), 0)
	require.Error(t, err)
	assert.Contains(t, err.Error(), bundle.ManifestFile)
}

func TestDigest(t *testing.T) {
	a, err := bundle.LoadDir(writeBundle(t, validManifest, map[string]string{"actions/provision": "echo a\n"}), 0)
	require.NoError(t, err)
	same, err := bundle.LoadDir(writeBundle(t, validManifest, map[string]string{"actions/provision": "echo a\n"}), 0)
	require.NoError(t, err)
	changed, err := bundle.LoadDir(writeBundle(t, validManifest, map[string]string{"actions/provision": "echo b\n"}), 0)
	require.NoError(t, err)
	assert.Equal(t, a.Digest, same.Digest)
	assert.NotEqual(t, a.Digest, changed.Digest)
}

func TestFromManifest(t *testing.T) {
	m := strings.Replace(validManifest, `"bindable": true,`, `"bindable": true, "actions": {"bind": "builtin:echo", "provision": "quick/provision"},`, 1)
	_, err := bundle.FromManifest([]byte(m), "", 0)
	require.Error(t, err, "a program path needs an actions directory")
	assert.Contains(t, err.Error(), `"quick/provision" is not a file of the bundle`)

	dir := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "quick"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "quick", "provision"), []byte("#!/bin/sh\n"), 0o755))
	b, err := bundle.FromManifest([]byte(m), dir, 0)
	require.NoError(t, err)
	assert.Equal(t, "quick/provision", b.Actions[bundle.Provision])
	assert.Equal(t, bundle.Echo, b.Actions[bundle.Bind])
}

func newSpec(t *testing.T, manifest string) *bundle.Spec {
	t.Helper()
	b, err := bundle.LoadDir(writeBundle(t, manifest, nil), 0)
	require.NoError(t, err)
	s, err := bundle.NewSpec(b)
	require.NoError(t, err)
	return s
}

func TestValidateParameters(t *testing.T) {
	s := newSpec(t, validManifest)
	tests := []struct {
		name   string
		plan   string
		kind   bundle.SchemaKind
		params string
		want   []string // violations; none means valid
	}{
		{"valid create", "plan-small", bundle.CreateSchema, `{"size": 2, "region": "eu"}`, nil},
		{"missing required", "plan-small", bundle.CreateSchema, `{}`, []string{"missing property 'size'"}},
		{"two violations at once", "plan-small", bundle.CreateSchema, `{"size": 0, "region": 3}`, []string{"/region", "/size"}},
		{"absent parameters are an empty object", "plan-small", bundle.UpdateSchema, ``, nil},
		{"not an object", "plan-small", bundle.UpdateSchema, `[1]`, []string{"must be a JSON object"}},
		{"bind enum", "plan-small", bundle.BindSchema, `{"role": "admin"}`, []string{"/role"}},
		{"plan without schema accepts anything", "plan-big", bundle.CreateSchema, `{"x": [1, 2]}`, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := s.ValidateParameters(tt.plan, tt.kind, json.RawMessage(tt.params))
			if tt.want == nil {
				require.NoError(t, err)
				return
			}
			var pe *bundle.ParametersError
			require.ErrorAs(t, err, &pe)
			assert.Equal(t, tt.kind, pe.Kind)
			for _, w := range tt.want {
				assert.Contains(t, err.Error(), w)
			}
		})
	}
	assert.Error(t, s.ValidateParameters("no-such-plan", bundle.CreateSchema, nil))
}

func TestSchemaRules(t *testing.T) {
	ext := `{"name":"a","id":"a","description":"a","plans":[{"id":"p","name":"p","description":"p","schemas":{"create":{"$ref":"http://example.com/s.json"}}}]}`
	b, err := bundle.LoadDir(writeBundle(t, ext, nil), 0)
	require.NoError(t, err)
	_, err = bundle.NewSpec(b)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "external schema reference")

	s := newSpec(t, validManifest)
	assert.Equal(t, []string{"region"}, s.CreateOnly("plan-small"), "in create, not in update")
	assert.Empty(t, s.CreateOnly("plan-big"), "no update schema, no create-only rule")
}

func TestSpecQueries(t *testing.T) {
	s := newSpec(t, validManifest)
	tests := []struct {
		plan      string
		bindable  bool
		async     bool
		knownPlan bool
	}{
		{"plan-small", true, false, true},
		{"plan-big", false, true, true},
		{"nope", true, false, false}, // a plan the bundle lost: the service decides
	}
	for _, tt := range tests {
		t.Run(tt.plan, func(t *testing.T) {
			_, ok := s.Plan(tt.plan)
			assert.Equal(t, tt.knownPlan, ok)
			assert.Equal(t, tt.bindable, s.Bindable(tt.plan))
			assert.Equal(t, tt.async, s.Asynchronous(tt.plan))
		})
	}
	assert.Equal(t, []string{"plan-big", "plan-small"}, s.PlanIDs())
	assert.Equal(t, bundle.Noop, s.Program(bundle.Unbind))
}

func TestCatalog(t *testing.T) {
	c := newSpec(t, validManifest).Catalog()
	raw, err := json.Marshal(c)
	require.NoError(t, err)
	var got map[string]any
	require.NoError(t, json.Unmarshal(raw, &got))
	assert.Equal(t, "svc-db", got["id"])
	assert.Equal(t, true, got["instances_retrievable"])
	assert.Equal(t, true, got["bindings_retrievable"])
	plans := got["plans"].([]any)
	require.Len(t, plans, 2)
	small := plans[0].(map[string]any)
	assert.Equal(t, true, small["plan_updateable"])
	create := small["schemas"].(map[string]any)["service_instance"].(map[string]any)["create"].(map[string]any)["parameters"].(map[string]any)
	assert.Equal(t, "http://json-schema.org/draft-04/schema#", create["$schema"], "a schema without $schema gets draft-04")
	bind := small["schemas"].(map[string]any)["service_binding"].(map[string]any)["create"].(map[string]any)
	assert.NotNil(t, bind["parameters"])
	big := plans[1].(map[string]any)
	assert.Nil(t, big["schemas"])
	assert.Equal(t, false, big["bindable"])
}

func TestParseManifestLimits(t *testing.T) {
	m, err := bundle.ParseManifest([]byte(`{"name":"a","id":"a","description":"a","limits":{"memory":"256Mi","cpu":"30s","processes":16},"plans":[{"id":"p","name":"p","description":"p"}]}`))
	require.NoError(t, err)
	require.NotNil(t, m.Limits)
	assert.Equal(t, int64(256<<20), m.Limits.MemoryBytes())
	assert.Equal(t, bundle.Duration(30*time.Second), m.Limits.CPU)
	assert.Equal(t, 16, m.Limits.Processes)

	m, err = bundle.ParseManifest([]byte(`{"name":"a","id":"a","description":"a","plans":[{"id":"p","name":"p","description":"p"}]}`))
	require.NoError(t, err)
	assert.Nil(t, m.Limits)
	assert.Zero(t, m.Limits.MemoryBytes(), "no limits: the broker's maximum")
}
