package e2e

import (
	"bufio"
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/lockstep-dev/lockstep/test/framework"
)

// TestReadmeWalkthrough runs the README's walkthrough (section
// "## Five-minute walkthrough") as written: every `$ ` command of its console blocks,
// in order, in a shell at the repository root, with the real kubectl, as
// user "dev" (the user `make run`'s kubeconfig has), against lockstep with
// its embedded broker serving examples/bundles, as `make run` runs it. What
// each command prints must be what the README shows, up to names and times:
// the test namespace reads as "default", and ids, ages and ports are
// compared as placeholders. Read-only commands (kubectl get and wait) are
// repeated for a few seconds until they match, as a person would wait for
// status to catch up; commands that change something run once.
func TestReadmeWalkthrough(t *testing.T) {
	steps := docSection(t, "README.md", "## Five-minute walkthrough")
	require.GreaterOrEqual(t, len(steps), 10, "the README's walkthrough has its commands in ```console blocks, each line starting with \"$ \"")
	ns := namespace(t)
	root, err := filepath.Abs("../..")
	require.NoError(t, err)
	runSteps(t, steps, root, walkthroughKubeconfig(t, ns), ns, func(out string) string { return out })
}

// TestReadmeTypedKinds runs the README's section "## Typed kinds" and then
// the walkthrough of docs/guide/typed-kinds.md that goes on from it, as
// TestReadmeWalkthrough runs the README's walkthrough: the cluster admin
// activates the typed kind Quick of the embedded broker, and a person
// explains, creates, updates, binds and deletes with it; the admin then
// deactivates it.
func TestReadmeTypedKinds(t *testing.T) {
	steps := append(docSection(t, "README.md", "## Typed kinds"),
		docSection(t, "docs/guide/typed-kinds.md", "## Walkthrough")...)
	require.GreaterOrEqual(t, len(steps), 10)
	ns := namespace(t)
	root, err := filepath.Abs("../..")
	require.NoError(t, err)
	t.Cleanup(func() {
		// What a failed step left behind, so that the embedded broker has
		// no typed kind for the tests that follow.
		kubectl(t, "", "delete", "servicebindings", "--all", "-n", ns)
		kubectl(t, "", "delete", "quicks.services.lockstep.dev", "--all", "-n", ns)
		r := kubectl(t, "", "patch", "servicebroker", "embedded", "--type=merge", "-p", `{"spec":{"typedKinds":null}}`)
		assert.Equal(t, 0, r.ExitCode, r.Output())
	})
	runSteps(t, steps, root, walkthroughKubeconfig(t, ns), ns, func(out string) string { return out })
}

// runSteps runs the steps of a document's section in a shell at root and
// compares what each prints, after rewrite, with what the document shows.
func runSteps(t *testing.T, steps []step, root, kubeconfig, ns string, rewrite func(string) string) {
	t.Helper()
	run := func(command string) string { return rewrite(shell(t, root, kubeconfig, command)) }
	for i, s := range steps {
		want := normalize(s.output, ns)
		got := run(s.command)
		if readOnly(s.command) {
			// What it reads may not be there yet: read again until it is.
			_ = wait.PollUntilContextTimeout(context.Background(), 200*time.Millisecond, 30*time.Second, false, func(context.Context) (bool, error) {
				if normalize(got, ns) == want {
					return true, nil
				}
				got = run(s.command)
				return false, nil
			})
		}
		if !assert.Equal(t, want, normalize(got, ns), "step %d: $ %s\nthe document shows:\n%s\nprinted:\n%s", i+1, s.command, s.output, got) {
			t.FailNow() // later steps build on this one
		}
	}
}

// step is one command of a walkthrough and what its document shows it print.
type step struct {
	command, output string
}

// docSection reads the commands and outputs of the ```console blocks of a
// document of the repository (path from its root): of the whole document
// when heading is empty, otherwise of the section with this heading (such
// as "## Five-minute walkthrough"), which ends at the next heading of its
// level or above.
func docSection(t *testing.T, path, heading string) []step {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("..", "..", filepath.FromSlash(path)))
	require.NoError(t, err)
	level := strings.IndexFunc(heading, func(r rune) bool { return r != '#' })
	var (
		steps             []step
		inSection, inCode bool
		cur               *step
	)
	inSection = heading == ""
	sc := bufio.NewScanner(bytes.NewReader(raw))
	for sc.Scan() {
		line := sc.Text()
		switch {
		case !inCode && heading != "" && isHeading(line, level):
			inSection = strings.TrimSpace(line) == heading
		case !inSection:
		case !inCode && strings.HasPrefix(line, "```console"):
			inCode = true
		case inCode && strings.HasPrefix(line, "```"):
			inCode, cur = false, nil
		case inCode && strings.HasPrefix(line, "$ "):
			steps = append(steps, step{command: strings.TrimPrefix(line, "$ ")})
			cur = &steps[len(steps)-1]
		case inCode && cur != nil:
			cur.output += line + "\n"
		}
	}
	require.NoError(t, sc.Err())
	require.NotEmpty(t, steps, "%s has no %q section with ```console blocks", path, heading)
	return steps
}

// isHeading reports whether line is a Markdown heading of level or above
// (fewer #).
func isHeading(line string, level int) bool {
	n := strings.IndexFunc(line, func(r rune) bool { return r != '#' })
	return n > 0 && n <= level && strings.HasPrefix(line[n:], " ")
}

// walkthroughKubeconfig writes a kubeconfig for user "dev", a cluster
// admin like `make run`'s, whose context's namespace is ns.
func walkthroughKubeconfig(t *testing.T, ns string) string {
	t.Helper()
	user, err := cluster.Env.AddUser(envtest.User{Name: "dev", Groups: []string{"system:masters"}}, nil)
	require.NoError(t, err)
	path := filepath.Join(t.TempDir(), "kubeconfig")
	require.NoError(t, framework.WriteKubeconfig(user.Config(), "dev", ns, path))
	return path
}

// shell runs a command line as a person types it: bash, at the repository
// root, with kubectl on the PATH and KUBECONFIG set; it returns what the
// terminal shows (stdout and stderr).
func shell(t *testing.T, root, kubeconfig, command string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "-c", command)
	cmd.Dir = root
	cmd.Env = append(os.Environ(),
		"KUBECONFIG="+kubeconfig,
		"PATH="+filepath.Dir(cluster.kubectl)+string(os.PathListSeparator)+os.Getenv("PATH"))
	out, err := cmd.CombinedOutput()
	if _, exited := err.(*exec.ExitError); err != nil && !exited {
		t.Fatalf("running %q: %v", command, err)
	}
	t.Logf("$ %s\n%s", command, out)
	return string(out)
}

// readOnly reports whether a command only reads: kubectl get, wait,
// explain or api-resources.
func readOnly(command string) bool {
	for _, prefix := range []string{"kubectl get ", "kubectl wait ", "kubectl explain ", "kubectl api-resources"} {
		if strings.HasPrefix(command, prefix) {
			return true
		}
	}
	return false
}

var (
	uuidPattern = regexp.MustCompile(`[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}`)
	// The operation id suffix of a BrokerOperation's name.
	operationPattern = regexp.MustCompile(`-(provision|update|deprovision|bind|unbind)-[0-9a-f]{8}\b`)
	portPattern      = regexp.MustCompile(`127\.0\.0\.1:[0-9]+`)
	// An age as kubectl prints it: 5s, 3m, 2m30s, 4h, 10d...
	agePattern = regexp.MustCompile(`(^|\s)[0-9]+[smhd]([0-9]+[smh])?(\s|$)`)
	spaces     = regexp.MustCompile(`\s+`)
)

// normalize makes an output comparable across runs: the namespace reads as
// "default"; ids, operation suffixes, ports and ages become placeholders;
// all white space (table alignment, line wrapping) is one space.
func normalize(out, ns string) string {
	out = strings.ReplaceAll(out, ns, "default")
	out = uuidPattern.ReplaceAllString(out, "<uuid>")
	out = operationPattern.ReplaceAllString(out, "-$1-<id>")
	out = portPattern.ReplaceAllString(out, "127.0.0.1:<port>")
	out = spaces.ReplaceAllString(out, " ")
	// Twice: adjacent ages share the space between them.
	for range 2 {
		out = agePattern.ReplaceAllString(out, "$1<age>$3")
	}
	return strings.TrimSpace(out)
}

func TestNormalize(t *testing.T) {
	tests := []struct {
		name, readme, printed string
	}{
		{"table realigned, ages and suffixes differ",
			"NAME                     KIND             AGE\ndb-provision-a58b268f    ServiceInstance  6s\n",
			"NAME                  KIND             AGE\ndb-provision-0c1d2e3f ServiceInstance  2m10s\n"},
		{"namespace", `serviceinstance.lockstep.dev "db" deleted from default namespace`, `serviceinstance.lockstep.dev "db" deleted from e2e-1234abcd namespace`},
		{"ids and ports", "username=e0f14b6b-70db-4c2c-a04f-af96d5f3c4ff at http://127.0.0.1:45391",
			"username=11111111-2222-3333-4444-555555555555 at http://127.0.0.1:8099"},
		{"wrapped error", "Error from server (ServiceUnavailable): admission webhook\n  denied the request", "Error from server (ServiceUnavailable): admission webhook denied the request"},
		{"adjacent ages", "embedded True 43s 43s", "embedded True 1m2s 5s"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, normalize(tt.readme, "e2e-1234abcd"), normalize(tt.printed, "e2e-1234abcd"))
		})
	}
	// What must not be normalized away.
	for _, pair := range [][2]string{
		{"PHASE Committed", "PHASE Failed"},
		{"HTTP 201", "HTTP 500"},
		{`{"fail":"deprovision"}`, `{"fail":"update"}`},
		{"size 3s", "size 3"},
	} {
		assert.NotEqual(t, normalize(pair[0], "x"), normalize(pair[1], "x"), "%q vs %q", pair[0], pair[1])
	}
}
