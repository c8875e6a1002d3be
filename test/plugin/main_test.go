package plugin

import (
	"bytes"
	"context"
	"flag"
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
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/lockstep-dev/lockstep/api/v1alpha1"
	"github.com/lockstep-dev/lockstep/internal/plugin"
	"github.com/lockstep-dev/lockstep/test/framework"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/ with what the commands print")

// env is what every test of the package shares.
var env struct {
	cp         *framework.ControlPlane
	admin      client.Client
	kubeconfig string // user "dev", a cluster administrator
}

func TestMain(m *testing.M) {
	flag.Parse()
	os.Exit(runMain(m))
}

func runMain(m *testing.M) int {
	fail := func(err error) int { fmt.Fprintln(os.Stderr, "test/plugin:", err); return 1 }
	cp, err := framework.Start(framework.Options{Name: "plugin", ControllerManager: true})
	if err != nil {
		return fail(err)
	}
	defer func() { _ = cp.Stop() }()
	env.cp = cp
	// The embedded broker serves the sample bundles, as `make run` does.
	cfg := framework.Config()
	if err := cp.ServeSamples(&cfg); err != nil {
		return fail(err)
	}
	lockstep, err := cp.RunLockstep(context.Background(), cfg, nil)
	if err != nil {
		return fail(err)
	}
	defer func() { _ = lockstep.Stop() }()
	if env.admin, err = cp.Client(); err != nil {
		return fail(err)
	}
	if env.kubeconfig, _, err = cp.Kubeconfig("dev", "system:masters"); err != nil {
		return fail(err)
	}
	if err := waitForCatalog("embedded"); err != nil {
		return fail(fmt.Errorf("%w\nlockstep's log:\n%s", err, lockstep.Logs))
	}
	code := m.Run()
	if code != 0 {
		logFile := filepath.Join(os.TempDir(), "lockstep-plugin-webhook.log")
		if err := os.WriteFile(logFile, []byte(lockstep.Logs.String()), 0o600); err == nil {
			fmt.Fprintln(os.Stderr, "test/plugin: lockstep's log is in", logFile)
		}
	}
	return code
}

// waitForCatalog waits until the marketplace holds every plan of broker.
// The embedded broker may answer lockstep's first catalog request before
// it has read its registries, and lockstep fetches a catalog again only
// every spec.relistInterval: the broker is relisted every second until
// the marketplace is complete, then at its usual interval again.
func waitForCatalog(broker string) error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	relist := func(interval string) error {
		sb := &v1alpha1.ServiceBroker{ObjectMeta: metav1.ObjectMeta{Name: broker}}
		patch := fmt.Sprintf(`{"spec":{"relistInterval":%s}}`, interval)
		return env.admin.Patch(ctx, sb, client.RawPatch(types.MergePatchType, []byte(patch)))
	}
	relisting := false
	for {
		var out bytes.Buffer
		code := plugin.Run([]string{"--kubeconfig", env.kubeconfig, "marketplace", "--broker", broker},
			genericiooptions.IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &out})
		if code == 0 && strings.Count(out.String(), " "+broker+" ") == 6 {
			if relisting {
				return relist("null")
			}
			return nil
		}
		if !relisting && relist(`"1s"`) == nil {
			relisting = true
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("the marketplace never listed broker %s's plans: %s", broker, out.String())
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// result is what a command printed and how it exited.
type result struct {
	stdout, stderr string
	code           int
}

// text is the result as the golden files hold it.
func (r result) text() string {
	var b strings.Builder
	b.WriteString(r.stdout)
	if r.stderr != "" {
		b.WriteString("--- stderr\n" + r.stderr)
	}
	fmt.Fprintf(&b, "--- exit %d\n", r.code)
	return b.String()
}

// lockstep runs kubectl lockstep with args, in namespace ns when set, as
// user dev.
func lockstep(t *testing.T, ns string, args ...string) result {
	t.Helper()
	full := []string{"--kubeconfig", env.kubeconfig}
	if ns != "" {
		full = append(full, "-n", ns)
	}
	var stdout, stderr bytes.Buffer
	code := plugin.Run(append(full, args...), genericiooptions.IOStreams{In: strings.NewReader(""), Out: &stdout, ErrOut: &stderr})
	return result{stdout.String(), stderr.String(), code}
}

// placeholders replace what differs from run to run.
var placeholders = []struct {
	re   *regexp.Regexp
	with string
}{
	{regexp.MustCompile(`\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ`), "<time>"},
	{regexp.MustCompile(`[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}`), "<uuid>"},
	{regexp.MustCompile(`(-(?:provision|update|deprovision|bind|unbind|adopt|detach))-[0-9a-f]{8}\b`), "$1-<hash>"},
	{regexp.MustCompile(`127\.0\.0\.1:\d+`), "127.0.0.1:<port>"},
}

// normalize replaces times, ids, operation hashes and ports.
func normalize(s string) string {
	for _, p := range placeholders {
		s = p.re.ReplaceAllString(s, p.with)
	}
	return s
}

// golden compares what a command printed with testdata/NAME.golden, or
// writes it there with -update.
func golden(t *testing.T, name string, r result) {
	t.Helper()
	path := filepath.Join("testdata", name+".golden")
	got := normalize(r.text())
	if *update {
		require.NoError(t, os.WriteFile(path, []byte(got), 0o644))
		return
	}
	want, err := os.ReadFile(path)
	require.NoError(t, err, "run go test ./test/plugin -update to write %s", path)
	assert.Equal(t, string(want), got, "kubectl lockstep %s: %s differs (go test ./test/plugin -run %s -update rewrites it)", name, path, t.Name())
}

// namespace creates a namespace for one test. When the test ends,
// everything in it is detached (so that a broker that refuses cannot hold
// it) and it is deleted.
func namespace(t *testing.T, name string) string {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
	require.NoError(t, env.admin.Create(context.Background(), ns))
	t.Cleanup(func() {
		lockstep(t, name, "detach", "--all")
		_ = env.admin.Delete(context.Background(), ns)
	})
	return name
}

// gone waits until obj no longer exists.
func gone(t *testing.T, obj client.Object) {
	t.Helper()
	require.Eventually(t, func() bool {
		err := env.admin.Get(context.Background(), client.ObjectKeyFromObject(obj), obj)
		return apierrors.IsNotFound(err)
	}, 90*time.Second, 200*time.Millisecond, "%T %s is still there", obj, obj.GetName())
}

// buildPlugin builds kubectl-lockstep into a directory that also holds
// the kubectl the tests use, and returns it: a PATH on which kubectl finds
// the plugin.
func buildPlugin(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	cmd := exec.Command("go", "build", "-o", filepath.Join(dir, "kubectl-lockstep"), "./cmd/kubectl-lockstep")
	cmd.Dir = env.cp.Root
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "go build ./cmd/kubectl-lockstep: %s", out)
	require.NoError(t, os.Symlink(env.cp.Kubectl, filepath.Join(dir, "kubectl")))
	return dir
}
