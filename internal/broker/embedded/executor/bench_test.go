package executor_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/lockstep-dev/lockstep/internal/broker/embedded/bundle"
	"github.com/lockstep-dev/lockstep/internal/broker/embedded/executor"
)

// BenchmarkRun measures one action that does nothing, against the floor
// of starting its program directly: "runner" starts it through the runner
// that sets its limits, "own user" adds a user of its own and the sweep
// at its end.
func BenchmarkRun(b *testing.B) {
	const script = "#!/bin/sh\nexit 0\n"
	bun, err := bundle.Assemble(bundle.Manifest{Name: "t", ID: "svc", Description: "d", Plans: []bundle.Plan{{ID: "p", Name: "p", Description: "p"}}},
		map[string]bundle.File{"actions/provision": {Executable: true, Data: []byte(script)}})
	if err != nil {
		b.Fatal(err)
	}
	inv := invocation(bun, bundle.Provision, `{}`, nil)
	b.Run("floor", func(b *testing.B) {
		path := filepath.Join(b.TempDir(), "provision")
		if err := os.WriteFile(path, []byte(script), 0o755); err != nil {
			b.Fatal(err)
		}
		for b.Loop() {
			if err := exec.Command(path).Run(); err != nil {
				b.Fatal(err)
			}
		}
	})
	run := func(b *testing.B, p *executor.Process) {
		for b.Loop() {
			if _, err := p.Run(context.Background(), inv); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.Run("runner", func(b *testing.B) {
		run(b, &executor.Process{WorkDir: b.TempDir(), Max: executor.DefaultMax})
	})
	b.Run("own user", func(b *testing.B) {
		p := &executor.Process{WorkDir: filepath.Join(reachableDir(b), "work"), Users: actionUsers(b, 1), Max: executor.DefaultMax}
		if err := p.Prepare(); err != nil {
			b.Fatal(err)
		}
		run(b, p)
	})
}
