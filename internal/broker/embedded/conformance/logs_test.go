package conformance

import (
	"log/slog"

	"github.com/lockstep-dev/lockstep/test/framework"
)

func newLogger(b *framework.LogBuffer) *slog.Logger {
	return slog.New(slog.NewJSONHandler(b, &slog.HandlerOptions{Level: slog.LevelDebug}))
}
