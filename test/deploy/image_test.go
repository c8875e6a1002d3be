package deploy

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestBaseImagesArePinnedByDigest: every image the Dockerfile builds from
// is named by its digest (the tag beside it says what it is), so that a
// rebuild takes the same images until the digests are changed.
func TestBaseImagesArePinnedByDigest(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("..", "..", "Dockerfile"))
	require.NoError(t, err)
	from := regexp.MustCompile(`(?m)^FROM\s+(?:--platform=\S+\s+)?(\S+)`)
	images := from.FindAllStringSubmatch(string(raw), -1)
	require.NotEmpty(t, images)
	stages := map[string]bool{}
	for _, m := range regexp.MustCompile(`(?mi)^FROM\s.*\sAS\s+(\S+)\s*$`).FindAllStringSubmatch(string(raw), -1) {
		stages[strings.ToLower(m[1])] = true
	}
	digest := regexp.MustCompile(`^[^@\s]+:[^@\s]+@sha256:[0-9a-f]{64}$`)
	for _, m := range images {
		if stages[strings.ToLower(m[1])] {
			continue // an earlier stage of the same build
		}
		assert.Regexp(t, digest, m[1], "FROM %s: name the image by its tag and digest (image:tag@sha256:...)", m[1])
	}
}
