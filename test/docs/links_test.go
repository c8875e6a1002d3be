package docs

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// root is the repository root, seen from this package.
const root = "../.."

// documents returns every Markdown document of the repository (the
// README, the pages under docs/, and the READMEs and findings beside the
// code), as paths from the repository root.
func documents(t *testing.T) []string {
	t.Helper()
	var docs []string
	err := filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && path != root && (strings.HasPrefix(d.Name(), ".") || d.Name() == "bin" || d.Name() == "testdata") {
			return filepath.SkipDir
		}
		if !d.IsDir() && strings.HasSuffix(path, ".md") {
			rel, err := filepath.Rel(root, path)
			if err != nil {
				return err
			}
			docs = append(docs, filepath.ToSlash(rel))
		}
		return nil
	})
	require.NoError(t, err)
	require.Contains(t, docs, "README.md")
	require.Contains(t, docs, "docs/README.md")
	return docs
}

// link is a Markdown link or image: [text](target).
var link = regexp.MustCompile(`!?\[[^\]]*\]\(([^)\s]+)\)`)

func TestLinksStayInsideTheRepositoryAndResolve(t *testing.T) {
	for _, doc := range documents(t) {
		t.Run(doc, func(t *testing.T) {
			text := prose(t, doc)
			for _, m := range link.FindAllStringSubmatch(text, -1) {
				target := m[1]
				if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
					t.Errorf("%s links outside the repository: %s", doc, target)
					continue
				}
				file, anchor, _ := strings.Cut(target, "#")
				dest := doc
				if file != "" {
					dest = filepath.ToSlash(filepath.Join(filepath.Dir(doc), file))
					if strings.HasPrefix(dest, "../") {
						t.Errorf("%s links outside the repository: %s", doc, target)
						continue
					}
					if _, err := os.Stat(filepath.Join(root, dest)); err != nil {
						t.Errorf("%s links to %s, which does not exist", doc, target)
						continue
					}
				}
				if anchor != "" {
					if !strings.HasSuffix(dest, ".md") {
						t.Errorf("%s links to a heading of %s, which is not a Markdown page", doc, target)
						continue
					}
					if !headings(t, dest)[anchor] {
						t.Errorf("%s links to #%s in %s, which has no such heading", doc, anchor, dest)
					}
				}
			}
		})
	}
}

// machinePath is an absolute path of someone's machine in a sample
// output: a home directory or a checkout.
var machinePath = regexp.MustCompile(`(^|[\s"'=(:])(/root/|/home/[a-z]|/Users/|/work/)`)

func TestSampleOutputsShowNoPathOfTheMachine(t *testing.T) {
	for _, doc := range documents(t) {
		raw, err := os.ReadFile(filepath.Join(root, doc))
		require.NoError(t, err)
		for i, line := range strings.Split(string(raw), "\n") {
			if machinePath.MatchString(line) {
				t.Errorf("%s:%d shows a path of the machine it ran on: %s", doc, i+1, strings.TrimSpace(line))
			}
		}
	}
}

// prose returns a document without its fenced code blocks, where a
// bracket followed by a parenthesis is code, not a link.
func prose(t *testing.T, doc string) string {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(root, doc))
	require.NoError(t, err)
	var b strings.Builder
	fenced := false
	for _, line := range strings.Split(string(raw), "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			fenced = !fenced
			continue
		}
		if !fenced {
			b.WriteString(stripCodeSpans(line))
			b.WriteByte('\n')
		}
	}
	return b.String()
}

var codeSpan = regexp.MustCompile("`[^`]*`")

func stripCodeSpans(line string) string { return codeSpan.ReplaceAllString(line, "") }

// headings returns the anchors of a document's headings, as GitHub makes
// them: lower case, punctuation dropped, spaces turned into hyphens, and
// a repeated anchor numbered.
func headings(t *testing.T, doc string) map[string]bool {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(root, doc))
	require.NoError(t, err)
	anchors := map[string]bool{}
	seen := map[string]int{}
	fenced := false
	for _, line := range strings.Split(string(raw), "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			fenced = !fenced
		}
		if fenced || !strings.HasPrefix(line, "#") {
			continue
		}
		title := strings.TrimSpace(strings.TrimLeft(line, "#"))
		a := anchor(title)
		if n := seen[a]; n > 0 {
			anchors[a+"-"+strconv.Itoa(n)] = true
		} else {
			anchors[a] = true
		}
		seen[a]++
	}
	return anchors
}

func anchor(title string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(title) {
		switch {
		case r == ' ':
			b.WriteRune('-')
		case r == '-' || r == '_' || ('a' <= r && r <= 'z') || ('0' <= r && r <= '9') || r > 127:
			b.WriteRune(r)
		}
	}
	return b.String()
}

func TestAnchorsAreMadeAsGitHubMakesThem(t *testing.T) {
	tests := []struct{ title, want string }{
		{"Five-minute walkthrough", "five-minute-walkthrough"},
		{"How a request is decided (`internal/admission`)", "how-a-request-is-decided-internaladmission"},
		{"Running lockstep locally: `make run`", "running-lockstep-locally-make-run"},
		{"What can I provision? The marketplace", "what-can-i-provision-the-marketplace"},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, anchor(tt.title), tt.title)
	}
}
