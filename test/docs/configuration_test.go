package docs

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kelseyhightower/envconfig"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lockstep-dev/lockstep/internal/app"
)

// TestEverySettingIsDocumented checks that the configuration reference
// has a row for every setting the webhook binary reads.
func TestEverySettingIsDocumented(t *testing.T) {
	var names bytes.Buffer
	require.NoError(t, envconfig.Usagef(app.Prefix, &app.Config{}, &names, "{{range .}}{{.Key}}\n{{end}}"))
	raw, err := os.ReadFile(filepath.Join(root, "docs", "reference", "configuration.md"))
	require.NoError(t, err)
	keys := strings.Fields(names.String())
	require.NotEmpty(t, keys)
	for _, key := range keys {
		assert.Contains(t, string(raw), "| `"+key+"` |", "docs/reference/configuration.md has no row for %s", key)
	}
}
