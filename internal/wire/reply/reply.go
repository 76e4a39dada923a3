// Package reply builds the reply function: SES's notifications of
// replies (receipt rule → S3 and SNS → the reply queue) read, checked and
// acted on, each answered by a confirmation notify sends.
package reply

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/criticizer/criticizer/internal/blob"
	"github.com/criticizer/criticizer/internal/config"
	"github.com/criticizer/criticizer/internal/deadline"
	"github.com/criticizer/criticizer/internal/inbound"
	"github.com/criticizer/criticizer/internal/mail"
	"github.com/criticizer/criticizer/internal/secrets"
	"github.com/criticizer/criticizer/internal/store/dynamo"
	"github.com/criticizer/criticizer/internal/voting"
	"github.com/criticizer/criticizer/internal/wire"
)

// New builds the reply function's SQS handler.
func New(ctx context.Context, cfg config.Config, log *slog.Logger, o wire.Options) (*inbound.Handler, error) {
	b, err := wire.NewBase(ctx, cfg, log, o)
	if err != nil {
		return nil, err
	}
	if cfg, err = secrets.Apply(ctx, b.AWS, cfg); err != nil {
		return nil, err
	}
	if cfg.UnsubscribeKey == "" {
		// The reply keys are derived from it, as notify mints them.
		return nil, errors.New("the reply function needs " + config.EnvUnsubscribeKey)
	}
	keys, err := inbound.NewKeys(cfg.UnsubscribeKey, cfg.UnsubscribeKeyPrevious)
	if err != nil {
		return nil, err
	}
	if cfg.InboundDomain == "" {
		log.WarnContext(ctx, "no inbound domain: every reply is dropped (unknown_key)", "variable", config.EnvInboundDomain)
	}
	r, err := mail.NewRenderer()
	if err != nil {
		return nil, err
	}
	votes := dynamo.NewVotes(b.DynamoDB, cfg.JobsTable, b.Now)
	votes.Retention = cfg.Retention
	dismissals := dynamo.NewDismissals(b.DynamoDB, cfg.JobsTable, b.Now)
	dismissals.Retention = cfg.Retention
	replies := dynamo.NewReplies(b.DynamoDB, cfg.JobsTable, b.Now)
	replies.Retention = cfg.Retention
	return &inbound.Handler{Keys: keys, InboundDomain: cfg.InboundDomain, Bucket: cfg.PayloadBucket,
		Objects: objects{blob.New(blob.NewS3(b.AWS, cfg.Endpoints.S3), cfg.PayloadBucket)}, Rows: b.Deliveries,
		// The one operation a vote link and a reply share (R-VOTE-3).
		Recorder: &voting.Recorder{Votes: votes, Marks: dismissals, Rows: b.Deliveries, Jobs: b.Jobs,
			Learnings: dynamo.NewLearnings(b.DynamoDB, cfg.JobsTable, b.Now), Directory: dynamo.NewDirectory(b.DynamoDB, cfg.JobsTable, b.Now)},
		Mutes: replies, Windows: replies, Claims: replies, Unsubscribes: b.Recipients, Queue: b.Queue, Renderer: r,
		ListID: cfg.ListID, PerHour: cfg.Reply.PerHour, Log: log, Now: b.Now,
		Budget: deadline.Budget{Need: RecordNeed, Reserve: RecordReserve, Now: b.Now}}, nil
}

// objects reads the raw replies from the payload bucket, with blob's
// errors as the reply handler names them.
type objects struct{ s *blob.Store }

func (o objects) Get(ctx context.Context, ref string, limit int64) ([]byte, error) {
	b, err := o.s.Get(ctx, ref, limit)
	switch {
	case errors.Is(err, blob.ErrTooLarge):
		return nil, fmt.Errorf("%w: %w", inbound.ErrTooLarge, err)
	case errors.Is(err, blob.ErrNotFound):
		return nil, fmt.Errorf("%w: %w", inbound.ErrNoObject, err)
	}
	return b, err
}

// RecordNeed is the time one reply may take (an S3 read of at most
// 256 KiB, a few DynamoDB reads and writes, an enqueue, each bounded by
// the SDK's timeouts); RecordReserve what is kept back for the answer.
const (
	RecordNeed    = 5 * time.Second
	RecordReserve = 2 * time.Second
)
