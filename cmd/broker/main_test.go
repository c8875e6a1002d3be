package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/lockstep-dev/lockstep/test/framework"
)

// TestMain doubles as the broker binary: the restart test runs this test
// binary with LOCKSTEP_BROKER_TEST_AS_MAIN=1 to get a real process it can
// kill.
func TestMain(m *testing.M) {
	if os.Getenv("LOCKSTEP_BROKER_TEST_AS_MAIN") == "1" {
		main()
		os.Exit(0)
	}
	goleak.VerifyTestMain(m)
}

func TestHelp(t *testing.T) {
	var out bytes.Buffer
	require.NoError(t, run(context.Background(), []string{"--help"}, &out, io.Discard))
	for _, v := range []string{"LOCKSTEP_BROKER_LISTEN", "LOCKSTEP_BROKER_STORE", "LOCKSTEP_BROKER_REGISTRIES", "LOCKSTEP_BROKER_SYNC_WINDOW", "LOCKSTEP_BROKER_ETCD_ENDPOINTS"} {
		assert.Contains(t, out.String(), v)
	}
}

func TestConfigErrors(t *testing.T) {
	tests := []struct {
		name string
		args []string
		env  map[string]string
		want string
	}{
		{"an argument", []string{"serve"}, nil, `unknown argument "serve"`},
		{"a bad duration", nil, map[string]string{"LOCKSTEP_BROKER_SYNC_PERIOD": "forever"}, "SYNC_PERIOD"},
		{"half a TLS pair", nil, map[string]string{"LOCKSTEP_BROKER_TLS_CERT_FILE": "/c.pem"}, "set both"},
		{"a bad log level", nil, map[string]string{"LOCKSTEP_BROKER_LOG_LEVEL": "loud"}, "LOG_LEVEL"},
		{"warn, which the other binaries do not take", nil, map[string]string{"LOCKSTEP_BROKER_LOG_LEVEL": "warn"}, "use debug, info or error"},
		{"a bad log format", nil, map[string]string{"LOCKSTEP_BROKER_LOG_FORMAT": "xml"}, "LOG_FORMAT"},
		{"a bad registry", nil, map[string]string{"LOCKSTEP_BROKER_REGISTRIES": "x"}, "want name=kind:location"},
		{"a bad store", nil, map[string]string{"LOCKSTEP_BROKER_STORE": "mongo"}, `unknown store "mongo"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for k, v := range tt.env {
				t.Setenv(k, v)
			}
			err := run(context.Background(), tt.args, io.Discard, io.Discard)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tt.want)
		})
	}
}

// address waits for the "broker listening" log line and returns its address.
func address(t *testing.T, logs *framework.LogBuffer) string {
	t.Helper()
	var addr string
	require.Eventually(t, func() bool {
		sc := bufio.NewScanner(strings.NewReader(logs.String()))
		for sc.Scan() {
			var line map[string]any
			if json.Unmarshal(sc.Bytes(), &line) == nil && line["msg"] == "broker listening" {
				addr, _ = line["address"].(string)
				// The format of lockstep's other binaries (zap's JSON).
				assert.Equal(t, "info", line["level"], "the log format: %s", sc.Text())
				assert.Contains(t, line, "ts", "the log format: %s", sc.Text())
				return true
			}
		}
		return false
	}, 30*time.Second, 10*time.Millisecond, "the broker never listened; logs:\n%s", logs.String())
	return "http://" + addr
}

func call(t *testing.T, method, url, body string) (int, map[string]any) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("X-Broker-API-Version", "2.17")
	req.SetBasicAuth("u", "p")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer func() { _ = resp.Body.Close() }()
	var out map[string]any
	_ = json.NewDecoder(resp.Body).Decode(&out)
	return resp.StatusCode, out
}

const slowManifest = `{"name":"slow","id":"svc-slow","description":"slow","asynchronous":true,
  "plans":[{"id":"plan-slow","name":"default","description":"default"}]}`

// brokerEnv sets up a registry with a slow bundle whose provision records
// its pid, starts a child that sleeps, records the child's pid (in
// pidFile + ".child") and waits for it.
func brokerEnv(t *testing.T) (env map[string]string, pidFile string) {
	t.Helper()
	dir := t.TempDir()
	pidFile = filepath.Join(dir, "action.pid")
	bundleDir := filepath.Join(dir, "registry", "slow")
	require.NoError(t, os.MkdirAll(filepath.Join(bundleDir, "actions"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(bundleDir, "bundle.json"), []byte(slowManifest), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(bundleDir, "actions", "provision"),
		[]byte("#!/bin/sh\nsleep 60 &\necho $! > "+pidFile+".child\necho $$ > "+pidFile+"\nwait\n"), 0o755))
	return map[string]string{
		"LOCKSTEP_BROKER_LISTEN":             "127.0.0.1:0",
		"LOCKSTEP_BROKER_USERNAME":           "u",
		"LOCKSTEP_BROKER_PASSWORD":           "p",
		"LOCKSTEP_BROKER_BBOLT_PATH":         filepath.Join(dir, "broker.db"),
		"LOCKSTEP_BROKER_REGISTRIES":         "test=local:" + filepath.Join(dir, "registry"),
		"LOCKSTEP_BROKER_WORK_DIR":           filepath.Join(dir, "work"),
		"LOCKSTEP_BROKER_SYNC_WINDOW":        "0s",
		"LOCKSTEP_BROKER_SHUTDOWN_GRACE":     "0s",
		"LOCKSTEP_BROKER_HEARTBEAT_INTERVAL": "1h",
	}, pidFile
}

func TestServesAndShutsDown(t *testing.T) {
	env, _ := brokerEnv(t)
	for k, v := range env {
		t.Setenv(k, v)
	}
	ctx, cancel := context.WithCancel(context.Background())
	logs := &framework.LogBuffer{}
	done := make(chan error, 1)
	go func() { done <- run(ctx, nil, io.Discard, logs) }()
	url := address(t, logs)
	require.Eventually(t, func() bool {
		code, body := call(t, "GET", url+"/v2/catalog", "")
		services, _ := body["services"].([]any)
		return code == http.StatusOK && len(services) == 1
	}, 30*time.Second, 10*time.Millisecond)
	cancel()
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(30 * time.Second):
		t.Fatal("the broker did not stop")
	}
	assert.Contains(t, logs.String(), "shutting down")
}

// process is a broker running as a separate process.
type process struct {
	cmd  *exec.Cmd
	logs *framework.LogBuffer
	url  string
	done chan struct{}
}

func startProcess(t *testing.T, env map[string]string) *process {
	t.Helper()
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), "LOCKSTEP_BROKER_TEST_AS_MAIN=1")
	for k, v := range env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	p := &process{cmd: cmd, logs: &framework.LogBuffer{}, done: make(chan struct{})}
	cmd.Stdout, cmd.Stderr = io.Discard, p.logs
	require.NoError(t, cmd.Start())
	go func() { _ = cmd.Wait(); close(p.done) }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-p.done:
		case <-time.After(20 * time.Second):
			_ = cmd.Process.Kill()
			<-p.done
		}
	})
	p.url = address(t, p.logs)
	return p
}

func (p *process) kill(t *testing.T) {
	t.Helper()
	require.NoError(t, p.cmd.Process.Signal(syscall.SIGKILL))
	select {
	case <-p.done:
	case <-time.After(20 * time.Second):
		t.Fatal("the killed broker did not exit")
	}
}

// gone reports whether pid has exited (a zombie counts as exited).
func gone(pid int) bool {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return true
	}
	fields := strings.Fields(string(raw[bytes.LastIndexByte(raw, ')')+1:]))
	return len(fields) > 0 && fields[0] == "Z"
}

// TestKilledDuringAnAsyncJob kills the broker process (SIGKILL) while an
// action runs, restarts it on the same store, and checks that the job is
// reported as failed, not "in progress" forever, that the action did not
// outlive the broker (the kernel kills it), and that what the action
// started is ended by the restarted broker.
func TestKilledDuringAnAsyncJob(t *testing.T) {
	env, pidFile := brokerEnv(t)
	first := startProcess(t, env)
	require.Eventually(t, func() bool {
		code, body := call(t, "GET", first.url+"/v2/catalog", "")
		services, _ := body["services"].([]any)
		return code == http.StatusOK && len(services) == 1
	}, 30*time.Second, 10*time.Millisecond)

	code, body := call(t, "PUT", first.url+"/v2/service_instances/i1?accepts_incomplete=true", `{"service_id":"svc-slow","plan_id":"plan-slow","organization_guid":"org","space_guid":"space"}`)
	require.Equal(t, http.StatusAccepted, code, "%v", body)
	op, _ := body["operation"].(string)
	var pid int
	require.Eventually(t, func() bool {
		raw, err := os.ReadFile(pidFile)
		if err != nil {
			return false
		}
		pid, err = strconv.Atoi(strings.TrimSpace(string(raw)))
		return err == nil
	}, 30*time.Second, 10*time.Millisecond, "the action never started")
	code, body = call(t, "GET", first.url+"/v2/service_instances/i1/last_operation?operation="+op, "")
	require.Equal(t, http.StatusOK, code)
	require.Equal(t, "in progress", body["state"])

	raw, err := os.ReadFile(pidFile + ".child")
	require.NoError(t, err)
	child, err := strconv.Atoi(strings.TrimSpace(string(raw)))
	require.NoError(t, err)
	t.Cleanup(func() { _ = syscall.Kill(child, syscall.SIGKILL) })

	first.kill(t)
	require.Eventually(t, func() bool { return gone(pid) }, 20*time.Second, 10*time.Millisecond,
		"the action (pid %d) outlived the killed broker", pid)

	second := startProcess(t, env)
	require.Eventually(t, func() bool { return gone(child) }, 20*time.Second, 10*time.Millisecond,
		"the action's child (pid %d) outlived the restart of the broker", child)
	code, body = call(t, "GET", second.url+"/v2/service_instances/i1/last_operation?operation="+op, "")
	require.Equal(t, http.StatusOK, code, "%v", body)
	assert.Equal(t, "failed", body["state"])
	assert.Contains(t, body["description"], "stopped before it finished, so its outcome is unknown")

	// The instance can be cleaned up.
	code, body = call(t, "DELETE", second.url+"/v2/service_instances/i1?accepts_incomplete=true&service_id=svc-slow&plan_id=plan-slow", "")
	assert.Equal(t, http.StatusAccepted, code, "%v", body)
}
