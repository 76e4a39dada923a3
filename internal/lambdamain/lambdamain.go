// Package lambdamain is the few lines every function's main shares: read
// the configuration, build the App, log a clear line and exit non-zero if
// either fails (Lambda then reports an init error).
package lambdamain

import (
	"context"
	"log/slog"
	"os"

	"github.com/criticizer/criticizer/internal/app"
	"github.com/criticizer/criticizer/internal/config"
	"github.com/criticizer/criticizer/internal/obs"
)

// Init builds the App from the environment or exits.
func Init(ctx context.Context, function string) (*app.App, *slog.Logger) {
	cfg, err := config.FromEnv(os.Getenv)
	log := obs.NewLogger(os.Stdout, cfg.LogLevel).With("function", function)
	if err != nil {
		log.Error("invalid configuration", "error", err)
		os.Exit(1)
	}
	a, err := app.New(ctx, cfg, log)
	if err != nil {
		log.Error("init failed", "error", err)
		os.Exit(1)
	}
	return a, log
}

// Must exits on an init error.
func Must[T any](v T, err error) func(log *slog.Logger) T {
	return func(log *slog.Logger) T {
		if err != nil {
			log.Error("init failed", "error", err)
			os.Exit(1)
		}
		return v
	}
}
