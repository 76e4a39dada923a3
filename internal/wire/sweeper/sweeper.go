// Package sweeper builds the scheduled sweeper.
package sweeper

import (
	"context"
	"log/slog"

	"github.com/aws/aws-lambda-go/events"

	"github.com/criticizer/criticizer/internal/config"
	"github.com/criticizer/criticizer/internal/drain"
	"github.com/criticizer/criticizer/internal/posting"
	"github.com/criticizer/criticizer/internal/store/dynamo"
	"github.com/criticizer/criticizer/internal/sweep"
	"github.com/criticizer/criticizer/internal/wire"
)

// New builds the sweeper.
func New(ctx context.Context, cfg config.Config, log *slog.Logger, o wire.Options) (*sweep.Sweeper, error) {
	b, err := wire.NewBase(ctx, cfg, log, o)
	if err != nil {
		return nil, err
	}
	s := &sweep.Sweeper{Jobs: b.Jobs, Deliveries: b.Deliveries, Evidence: b.Evidence, ConfigurationSet: cfg.ConfigurationSet,
		Queue: b.Queue, Log: log, Now: b.Now,
		StuckAfter: cfg.Sweep.StuckAfter, EvidenceWindow: cfg.Sweep.EvidenceWindow, Margin: cfg.EvidenceMargin,
		// Daily digests that are due go to notify (R-DIGEST-3).
		Digests: b.Deliveries, DigestClock: o.DigestNow,
		// Post rows left unsent go back to notify (R-CHANNEL-5).
		Posts: &posting.Posting{Posts: dynamo.NewPosts(b.DynamoDB, cfg.DeliveriesTable, b.Now), Queue: b.Queue, Log: log}}
	if cfg.FeedbackQueueURL != "" {
		s.Drain = &drain.Checker{Counter: b.Queue, Queue: cfg.FeedbackQueueURL, DLQ: cfg.FeedbackDLQURL,
			Lag: cfg.EvidenceCounterLag, Every: cfg.Sweep.Every, Evidence: b.Evidence, Set: cfg.ConfigurationSet, Now: b.Now}
	} else {
		// Without the drain check the evidence path never catches up: a
		// send whose answer was lost waits for its event or an operator.
		log.WarnContext(ctx, "the feedback queue is not configured; no send whose answer was lost will be resent", "variable", config.EnvFeedbackQueueURL)
	}
	return s, nil
}

// Handler is the sweeper's Lambda handler for its EventBridge schedule.
func Handler(s *sweep.Sweeper) func(context.Context, events.EventBridgeEvent) (sweep.Report, error) {
	return func(ctx context.Context, _ events.EventBridgeEvent) (sweep.Report, error) { return s.Run(ctx) }
}
