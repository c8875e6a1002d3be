package main

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/go-logr/logr"
	"github.com/kelseyhightower/envconfig"
	"go.uber.org/zap/zapcore"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/lockstep-dev/lockstep/internal/broker/embedded"
)

// prefix is the environment prefix of every setting.
const prefix = "LOCKSTEP_BROKER"

// config is everything the command reads from the environment.
type config struct {
	Listen      string `default:":8080" desc:"address to listen on"`
	TLSCertFile string `split_words:"true" desc:"serve HTTPS with this certificate (PEM) and TLS_KEY_FILE"`
	TLSKeyFile  string `split_words:"true" desc:"private key (PEM) of TLS_CERT_FILE"`
	LogLevel    string `split_words:"true" default:"info" desc:"debug, info or error"`
	LogFormat   string `split_words:"true" default:"json" desc:"json or console"`
	embedded.Settings
}

func loadConfig() (config, error) {
	var c config
	if err := envconfig.Process(prefix, &c); err != nil {
		return config{}, fmt.Errorf("read the configuration from the environment: %w (run broker --help for the variables)", err)
	}
	if (c.TLSCertFile == "") != (c.TLSKeyFile == "") {
		return config{}, fmt.Errorf("set both %s_TLS_CERT_FILE and %s_TLS_KEY_FILE, or neither", prefix, prefix)
	}
	return c, nil
}

// logger is the broker's logger, in the format of lockstep's other
// binaries (the webhook's LOCKSTEP_LOG_LEVEL and LOCKSTEP_LOG_FORMAT): zap,
// JSON or console, on stderr.
func (c config) logger(stderr io.Writer) (logr.Logger, error) {
	var level zapcore.Level
	switch c.LogLevel {
	case "debug":
		// slog's debug level is logr's V(4).
		level = zapcore.Level(-4)
	case "info":
		level = zapcore.InfoLevel
	case "error":
		level = zapcore.ErrorLevel
	default:
		return logr.Logger{}, fmt.Errorf("%s_LOG_LEVEL %q: use debug, info or error", prefix, c.LogLevel)
	}
	if c.LogFormat != "json" && c.LogFormat != "console" {
		return logr.Logger{}, fmt.Errorf("%s_LOG_FORMAT %q: use json or console", prefix, c.LogFormat)
	}
	return zap.New(zap.WriteTo(stderr), zap.UseDevMode(c.LogFormat == "console"), zap.Level(level)), nil
}

// usage writes the table of environment variables.
func usage(w io.Writer) error {
	var buf strings.Builder
	tw := tabwriter.NewWriter(&buf, 0, 4, 2, ' ', 0)
	if _, err := fmt.Fprint(tw, "VARIABLE\tDEFAULT\tMEANING\n"); err != nil {
		return err
	}
	if err := envconfig.Usagef(prefix, &config{}, tw, "{{range .}}{{usage_key .}}\t{{usage_default .}}\t{{usage_description .}}\n{{end}}"); err != nil {
		return err
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	_, err := fmt.Fprintf(w, "broker serves lockstep's embedded OSB broker. Configuration (environment):\n\n%s", buf.String())
	return err
}
