// Package sweeper builds the scheduled sweeper.
package sweeper

import (
	"context"
	"log/slog"

	"github.com/aws/aws-lambda-go/events"

	"github.com/criticizer/criticizer/internal/config"
	"github.com/criticizer/criticizer/internal/sweeper"
	"github.com/criticizer/criticizer/internal/wire"
)

// New builds the sweeper.
func New(ctx context.Context, cfg config.Config, log *slog.Logger, o wire.Options) (*sweeper.Sweeper, error) {
	b, err := wire.NewBase(ctx, cfg, log, o)
	if err != nil {
		return nil, err
	}
	return &sweeper.Sweeper{Jobs: b.Jobs, Deliveries: b.Deliveries, Evidence: b.Evidence, ConfigurationSet: cfg.ConfigurationSet,
		Queue: b.Queue, Log: log, Now: b.Now,
		StuckAfter: cfg.SweepStuckAfter, EvidenceWindow: cfg.EvidenceWindow, Margin: cfg.EvidenceMargin}, nil
}

// Handler is the sweeper's Lambda handler for its EventBridge schedule.
func Handler(s *sweeper.Sweeper) func(context.Context, events.EventBridgeEvent) (sweeper.Report, error) {
	return func(ctx context.Context, _ events.EventBridgeEvent) (sweeper.Report, error) { return s.Run(ctx) }
}
