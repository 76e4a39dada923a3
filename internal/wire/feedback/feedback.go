// Package feedback builds the feedback function: SES events (through SNS
// and SQS) recorded on the delivery rows they name, and the newest event
// time of the evidence path.
package feedback

import (
	"context"
	"log/slog"
	"time"

	"github.com/criticizer/criticizer/internal/blob"
	"github.com/criticizer/criticizer/internal/config"
	"github.com/criticizer/criticizer/internal/deadline"
	"github.com/criticizer/criticizer/internal/sesevent"
	"github.com/criticizer/criticizer/internal/wire"
)

// New builds the feedback function's SQS handler.
func New(ctx context.Context, cfg config.Config, log *slog.Logger, o wire.Options) (*sesevent.Handler, error) {
	b, err := wire.NewBase(ctx, cfg, log, o)
	if err != nil {
		return nil, err
	}
	h := &sesevent.Handler{Deliveries: b.Deliveries, Evidence: b.Evidence, Recipients: b.Recipients, Jobs: b.Jobs,
		Queue: b.Queue, Log: log, Now: b.Now, Bound: cfg.EvidenceMargin,
		Budget: deadline.Budget{Need: RecordNeed, Reserve: RecordReserve, Now: b.Now}}
	if cfg.PayloadBucket != "" {
		// A record that can never be evidence is kept here and
		// acknowledged (R-EVIDENCE-10).
		h.Quarantine = blob.New(blob.NewS3(b.AWS, cfg.Endpoints.S3), cfg.PayloadBucket)
	} else {
		log.WarnContext(ctx, "no payload bucket: a record that is not an SES event goes to the feedback DLQ, where it keeps the evidence path from draining",
			"variable", config.EnvPayloadBucket)
	}
	return h, nil
}

// RecordNeed is the time one record may take (a few DynamoDB writes and an
// enqueue, each bounded by the SDK's own timeouts and retries);
// RecordReserve what is kept back for the batch's answer.
const (
	RecordNeed    = 5 * time.Second
	RecordReserve = 2 * time.Second
)
