package plugin

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// step is one command of the walkthrough and what it prints.
type step struct {
	command, want string
}

// consoleBlock is a ```console block of the walkthrough.
var consoleBlock = regexp.MustCompile("(?s)```console\n(.*?)```")

// walkthroughOf returns the Walkthrough section of a document and its
// steps, block by block.
func walkthroughOf(t *testing.T, doc string) (string, [][]step) {
	t.Helper()
	start := strings.Index(doc, "\n## Walkthrough\n")
	require.GreaterOrEqual(t, start, 0, "no Walkthrough section")
	section := doc[start+1:]
	if end := strings.Index(section, "\n## "); end >= 0 {
		section = section[:end+1]
	}
	var blocks [][]step
	for _, m := range consoleBlock.FindAllStringSubmatch(section, -1) {
		var steps []step
		for _, line := range strings.SplitAfter(m[1], "\n") {
			if cmd, ok := strings.CutPrefix(line, "$ "); ok {
				steps = append(steps, step{command: strings.TrimSuffix(cmd, "\n")})
			} else if len(steps) > 0 {
				steps[len(steps)-1].want += line
			}
		}
		blocks = append(blocks, steps)
	}
	require.NotEmpty(t, blocks)
	return section, blocks
}

// runSteps runs every command in one shell, in order (a variable set by
// one is there for the next), with kubectl-lockstep and kubectl on the
// PATH, as user dev; it returns what each printed, stdout and stderr
// together.
func runSteps(t *testing.T, bin string, steps []step) []string {
	t.Helper()
	var script strings.Builder
	for i, s := range steps {
		fmt.Fprintf(&script, "printf '@@@ %d\\n'\n{ %s ; } 2>&1\n", i, s.command)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "-c", script.String())
	cmd.Dir = t.TempDir()
	cmd.Env = append(os.Environ(), "PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"), "KUBECONFIG="+env.kubeconfig)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	require.NoError(t, cmd.Run(), "the walkthrough's shell: %s", out.String())
	parts := regexp.MustCompile(`(?m)^@@@ \d+\n`).Split(out.String(), -1)
	require.Len(t, parts, len(steps)+1, out.String())
	return parts[1:]
}

// tidy is output as compared: placeholders for what differs from run to
// run, no trailing blanks.
func tidy(s string) string {
	lines := strings.Split(normalize(s), "\n")
	for i, l := range lines {
		lines[i] = strings.TrimRight(l, " \t")
	}
	return strings.TrimRight(strings.Join(lines, "\n"), "\n")
}

// TestPluginWalkthrough runs the Walkthrough of docs/kubectl-plugin.md:
// the commands it shows, with the built kubectl-lockstep found by the real
// kubectl, against lockstep and its embedded broker; what each prints must
// be what the document shows. -update writes what they print into the
// document.
func TestPluginWalkthrough(t *testing.T) {
	path := filepath.Join(env.cp.Root, "docs", "kubectl-plugin.md")
	raw, err := os.ReadFile(path)
	require.NoError(t, err)
	doc := string(raw)
	section, blocks := walkthroughOf(t, doc)
	var steps []step
	for _, b := range blocks {
		steps = append(steps, b...)
	}
	got := runSteps(t, buildPlugin(t), steps)

	if *update {
		i := 0
		updated := consoleBlock.ReplaceAllStringFunc(section, func(string) string {
			var b strings.Builder
			b.WriteString("```console\n")
			for range blocks[0] {
				b.WriteString("$ " + steps[i].command + "\n" + got[i])
				i++
			}
			blocks = blocks[1:]
			return b.String() + "```"
		})
		require.NoError(t, os.WriteFile(path, []byte(strings.Replace(doc, section, updated, 1)), 0o644))
		return
	}
	for i, s := range steps {
		assert.Equal(t, tidy(s.want), tidy(got[i]), "$ %s\n(docs/kubectl-plugin.md; go test ./test/plugin -run TestPluginWalkthrough -update rewrites it)", s.command)
	}
}
