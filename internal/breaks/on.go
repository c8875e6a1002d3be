//go:build lockstep_breaks

package breaks

import (
	"os"
	"slices"
	"strings"
	"sync"
)

// active is what EnvVar names, read once.
var active = sync.OnceValue(func() []Break {
	var on []Break
	for _, name := range strings.Split(os.Getenv(EnvVar), ",") {
		if b := Break(strings.TrimSpace(name)); slices.Contains(All, b) {
			on = append(on, b)
		}
	}
	return on
})

// Active reports whether b is on: EnvVar names it.
func Active(b Break) bool { return slices.Contains(active(), b) }
