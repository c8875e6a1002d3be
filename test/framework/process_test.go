package framework

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseStatus(t *testing.T) {
	status := "Name:\tx\nVmPeak:\t  2000 kB\nVmHWM:\t    1500 kB\nVmRSS:\t    1024 kB\nThreads:\t4\n"
	m, err := parseStatus([]byte(status))
	require.NoError(t, err)
	assert.Equal(t, Memory{RSS: 1024 * 1024, Peak: 1500 * 1024}, m)

	_, err = parseStatus([]byte("Name:\tx\n"))
	assert.ErrorContains(t, err, "no VmRSS")
	_, err = parseStatus([]byte("VmRSS:\t12 MB\nVmHWM:\t1 kB\n"))
	assert.ErrorContains(t, err, "unexpected VmRSS")
}

func TestParseStat(t *testing.T) {
	stat := "1234 (web hook (x)) S 1 1234 1234 0 -1 4194560 100 0 0 0 250 75 0 0 20 0 8 0 1000 2000000 3000 18446744073709551615\n"
	cpu, err := parseStat([]byte(stat), 100)
	require.NoError(t, err)
	assert.Equal(t, 3250*time.Millisecond, cpu)
	_, err = parseStat([]byte("garbage"), 100)
	assert.Error(t, err)
	_, err = parseStat([]byte("1 (x) S 1 2"), 100)
	assert.Error(t, err)
}

func TestProcessLifecycle(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("reads /proc")
	}
	sleep, err := exec.LookPath("sleep")
	if err != nil {
		t.Skip("no sleep command")
	}
	dir := t.TempDir()
	p, err := StartProcess("sleeper", sleep, []string{"60"}, []string{"BENCH=1"}, filepath.Join(dir, "log"))
	require.NoError(t, err)
	done, _ := p.Exited()
	assert.False(t, done)
	m, err := p.Memory()
	require.NoError(t, err)
	assert.Positive(t, m.RSS)
	_, err = p.CPU()
	require.NoError(t, err)
	require.NoError(t, p.Stop(10*time.Second), "sleep ends on SIGTERM")
	done, err = p.Exited()
	assert.True(t, done)
	assert.Error(t, err, "killed by a signal")
	require.NoError(t, p.Stop(time.Second), "stopping twice is fine")
}

func TestProcessLogTail(t *testing.T) {
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Skip("no sh")
	}
	log := filepath.Join(t.TempDir(), "log")
	p, err := StartProcess("printer", sh, []string{"-c", "echo one; echo two; echo three >&2"}, nil, log)
	require.NoError(t, err)
	require.Eventually(t, func() bool { done, _ := p.Exited(); return done }, 10*time.Second, 10*time.Millisecond)
	assert.Equal(t, "two\nthree", p.LogTail(2))
	raw, err := os.ReadFile(log)
	require.NoError(t, err)
	assert.Equal(t, "one\ntwo\nthree\n", string(raw))
}

func TestCleanEnviron(t *testing.T) {
	t.Setenv("LOCKSTEP_WEBHOOK_PORT", "1")
	t.Setenv("KUBECONFIG", "/somewhere")
	env := CleanEnviron([]string{"LOCKSTEP_CERT_DIR=/certs"})
	assert.NotContains(t, env, "LOCKSTEP_WEBHOOK_PORT=1")
	assert.NotContains(t, env, "KUBECONFIG=/somewhere")
	assert.Contains(t, env, "LOCKSTEP_CERT_DIR=/certs")
}
