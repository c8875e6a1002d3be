package report

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"
)

// Machine describes where a run happened.
type Machine struct {
	CPU        string
	Cores      int
	GOMAXPROCS int
	MemoryMiB  int64
	Go         string
	OS         string
	Kernel     string
	// KubeAPIServer is the version of the control plane used.
	KubeAPIServer string
	// Commit is the repository's HEAD, with "+ uncommitted changes" when
	// the working tree differs from it.
	Commit string
}

// DetectMachine describes this machine; root is the repository and assets
// the directory with kube-apiserver (either may be empty).
func DetectMachine(ctx context.Context, root, assets string) Machine {
	m := Machine{
		CPU: "unknown", Cores: runtime.NumCPU(), GOMAXPROCS: runtime.GOMAXPROCS(0),
		Go: runtime.Version(), OS: runtime.GOOS + "/" + runtime.GOARCH,
	}
	if raw, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		m.CPU = cpuModel(raw)
	}
	if raw, err := os.ReadFile("/proc/meminfo"); err == nil {
		m.MemoryMiB = memTotalMiB(raw)
	}
	if raw, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		m.Kernel = strings.TrimSpace(string(raw))
	}
	if assets != "" {
		m.KubeAPIServer = output(ctx, "", filepath.Join(assets, "kube-apiserver"), "--version")
	}
	if root != "" {
		m.Commit = output(ctx, root, "git", "rev-parse", "--short", "HEAD")
		if m.Commit != "" && output(ctx, root, "git", "status", "--porcelain", "--untracked-files=no") != "" {
			m.Commit += " + uncommitted changes"
		}
	}
	return m
}

func (m Machine) rows(started, finished time.Time, command string) [][]string {
	rows := [][]string{
		{"CPU", m.CPU},
		{"cores", fmt.Sprintf("%d (GOMAXPROCS %d)", m.Cores, m.GOMAXPROCS)},
		{"memory", fmt.Sprintf("%d MiB", m.MemoryMiB)},
		{"Go", m.Go},
		{"OS", strings.TrimSpace(m.OS + " " + m.Kernel)},
	}
	if m.KubeAPIServer != "" {
		rows = append(rows, []string{"control plane", m.KubeAPIServer + " (envtest), etcd, on the same machine"})
	}
	if m.Commit != "" {
		rows = append(rows, []string{"commit", m.Commit})
	}
	rows = append(rows, []string{"date", started.UTC().Format("2006-01-02 15:04 UTC")})
	if !finished.IsZero() {
		rows = append(rows, []string{"duration", finished.Sub(started).Round(time.Second).String()})
	}
	if command != "" {
		rows = append(rows, []string{"command", "`" + command + "`"})
	}
	return rows
}

func cpuModel(cpuinfo []byte) string {
	sc := bufio.NewScanner(bytes.NewReader(cpuinfo))
	for sc.Scan() {
		if k, v, ok := strings.Cut(sc.Text(), ":"); ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return "unknown"
}

func memTotalMiB(meminfo []byte) int64 {
	sc := bufio.NewScanner(bytes.NewReader(meminfo))
	for sc.Scan() {
		if k, v, ok := strings.Cut(sc.Text(), ":"); ok && k == "MemTotal" {
			f := strings.Fields(v)
			if len(f) == 2 && f[1] == "kB" {
				kb, err := strconv.ParseInt(f[0], 10, 64)
				if err == nil {
					return kb / 1024
				}
			}
		}
	}
	return 0
}

// output runs a command and returns its trimmed output; empty on failure
// (a description of the machine never fails a run).
func output(ctx context.Context, dir, name string, args ...string) string {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = dir
	out, err := cmd.Output()
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(out))
}
