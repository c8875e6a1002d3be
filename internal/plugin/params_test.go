package plugin

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lockstep-dev/lockstep/api/v1alpha1"
)

func TestParametersBuild(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "params.yaml")
	require.NoError(t, os.WriteFile(file, []byte("region: eu\nlimits: {cpu: 2}\n"), 0o600))
	notObject := filepath.Join(dir, "list.yaml")
	require.NoError(t, os.WriteFile(notObject, []byte("- a\n"), 0o600))
	tests := []struct {
		name     string
		p        parameters
		want     string // spec.parameters as JSON; "" for none
		wantFrom []v1alpha1.ParametersFromSource
		wantErr  string
	}{
		{name: "none"},
		{name: "values are JSON when they are", p: parameters{pairs: []string{"size=3", "ha=true", "region=eu", "zip=01234", `name="42"`, `tags=["a"]`}},
			want: `{"ha":true,"name":"42","region":"eu","size":3,"tags":["a"],"zip":"01234"}`},
		{name: "a value may hold =", p: parameters{pairs: []string{"query=a=b"}}, want: `{"query":"a=b"}`},
		{name: "a file and flags", p: parameters{files: []string{file}, pairs: []string{"size=2"}}, want: `{"limits":{"cpu":2},"region":"eu","size":2}`},
		{name: "set twice", p: parameters{files: []string{file}, pairs: []string{"region=us"}},
			wantErr: `parameter "region" is set twice: by --param-file ` + file + ` and by -p region=us`},
		{name: "not key=value", p: parameters{pairs: []string{"size"}}, wantErr: "-p size: a parameter is key=value"},
		{name: "a file that is not an object", p: parameters{files: []string{notObject}}, wantErr: "not a JSON or YAML object"},
		{name: "a missing file", p: parameters{files: []string{filepath.Join(dir, "nope")}}, wantErr: "reading --param-file"},
		{name: "from Secrets", p: parameters{fromSecret: []string{"db-admin", "other:license"}}, wantFrom: []v1alpha1.ParametersFromSource{
			{SecretKeyRef: v1alpha1.SecretKeyReference{Name: "db-admin", Key: "parameters"}},
			{SecretKeyRef: v1alpha1.SecretKeyReference{Name: "other", Key: "license"}},
		}},
		{name: "a Secret without name", p: parameters{fromSecret: []string{":key"}}, wantErr: "name a Secret"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			params, from, err := tt.p.build()
			if tt.wantErr != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tt.wantErr)
				return
			}
			require.NoError(t, err)
			if tt.want == "" {
				assert.Nil(t, params)
			} else {
				require.NotNil(t, params)
				assert.JSONEq(t, tt.want, string(params.Raw))
			}
			assert.Equal(t, tt.wantFrom, from)
		})
	}
}
