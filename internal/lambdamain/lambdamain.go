// Package lambdamain is what every function's main shares: read the
// configuration, build the App, pick the function's handler, and exit with
// a clear log line if any of that fails (Lambda then reports an init error).
package lambdamain

import (
	"context"
	"os"

	"github.com/criticizer/criticizer/internal/app"
	"github.com/criticizer/criticizer/internal/config"
	"github.com/criticizer/criticizer/internal/obs"
)

// Handler builds the named function's handler from the environment, or
// exits.
func Handler(ctx context.Context, function string) any {
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
	h, err := a.Handler(function)
	if err != nil {
		log.Error("init failed", "error", err)
		os.Exit(1)
	}
	return h
}
