// Package feedback builds the feedback function: SES events (through SNS
// and SQS) recorded on the delivery rows they name, and the evidence
// watermark.
package feedback

import (
	"context"
	"log/slog"

	"github.com/criticizer/criticizer/internal/config"
	"github.com/criticizer/criticizer/internal/feedback"
	"github.com/criticizer/criticizer/internal/wire"
)

// New builds the feedback function's SQS handler.
func New(ctx context.Context, cfg config.Config, log *slog.Logger, o wire.Options) (*feedback.Handler, error) {
	b, err := wire.NewBase(ctx, cfg, log, o)
	if err != nil {
		return nil, err
	}
	return &feedback.Handler{Deliveries: b.Deliveries, Evidence: b.Evidence, Recipients: b.Recipients, Jobs: b.Jobs,
		Queue: b.Queue, Log: log}, nil
}
