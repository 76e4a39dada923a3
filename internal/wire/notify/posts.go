package notify

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/criticizer/criticizer/internal/api"
	"github.com/criticizer/criticizer/internal/channel"
	"github.com/criticizer/criticizer/internal/config"
	"github.com/criticizer/criticizer/internal/job"
	"github.com/criticizer/criticizer/internal/outhook"
	"github.com/criticizer/criticizer/internal/posting"
	"github.com/criticizer/criticizer/internal/safehttp"
	"github.com/criticizer/criticizer/internal/stage"
	"github.com/criticizer/criticizer/internal/store/dynamo"
	"github.com/criticizer/criticizer/internal/wire"
)

// Posting builds the channels other than email and the protocol that
// carries them (internal/posting, R-CHANNEL-*): one signed webhook
// channel per CRITICIZER_OUTBOUND_WEBHOOKS destination, then extra (the
// code hosts' channels). cfg has its secrets applied. The webhooks' client
// refuses private and loopback addresses unless
// CRITICIZER_ALLOW_PRIVATE_WEBHOOK_URLS (the local stack), as the diff
// URLs' does.
func Posting(cfg config.Config, b *wire.Base, log *slog.Logger, extra ...channel.Channel) (*posting.Posting, error) {
	dests, err := outhook.Parse(cfg.OutboundWebhooks)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", config.EnvOutboundWebhooks, err)
	}
	policy := safehttp.Policy{AllowPrivate: cfg.AllowPrivateWebhooks}
	if cfg.AllowPrivateWebhooks {
		policy.Ports = []int{0}
	}
	client := safehttp.NewClient(policy, outhook.SendTimeout)
	var chans []channel.Channel
	for _, d := range dests {
		h, err := outhook.New(d, client, b.Now)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", config.EnvOutboundWebhooks, err)
		}
		chans = append(chans, h)
	}
	chans = append(chans, extra...)
	if len(chans) > posting.MaxChannels {
		return nil, fmt.Errorf("%d channels other than email, at most %d", len(chans), posting.MaxChannels)
	}
	posts := dynamo.NewPosts(b.DynamoDB, cfg.DeliveriesTable, b.Now)
	posts.Retention = cfg.Retention
	p := &posting.Posting{Posts: posts, Jobs: b.Jobs, Queue: b.Queue, Channels: chans, Log: log, Now: b.Now}
	if cfg.PublicURL != "" && cfg.UnsubscribeKey != "" {
		links := api.NewStatusLinks(cfg.UnsubscribeKey)
		p.JobLink = func(id job.ID) string { return cfg.PublicURL + links.Link(id) }
	}
	return p, nil
}

// route sends the post tasks to posting, everything else to the notify
// stage's own work: a post is never part of the email run (R-CHANNEL-4).
func route(p *posting.Posting, n stage.Func) stage.Func {
	return func(ctx context.Context, m job.Message, attempt int) error {
		if m.Task == job.TaskPost {
			return p.Handle(ctx, m, attempt)
		}
		return n(ctx, m, attempt)
	}
}
