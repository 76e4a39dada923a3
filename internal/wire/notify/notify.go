// Package notify builds the notify stage: the outbox that mails each
// reviewer the critique through SES, exactly once.
package notify

import (
	"context"
	"log/slog"
	"time"

	"github.com/criticizer/criticizer/internal/config"
	"github.com/criticizer/criticizer/internal/critic"
	"github.com/criticizer/criticizer/internal/inbound"
	"github.com/criticizer/criticizer/internal/job"
	"github.com/criticizer/criticizer/internal/mail"
	notifier "github.com/criticizer/criticizer/internal/notify"
	"github.com/criticizer/criticizer/internal/pipeline"
	"github.com/criticizer/criticizer/internal/ratelimit"
	"github.com/criticizer/criticizer/internal/secrets"
	"github.com/criticizer/criticizer/internal/sesmail"
	"github.com/criticizer/criticizer/internal/stage"
	"github.com/criticizer/criticizer/internal/store/dynamo"
	"github.com/criticizer/criticizer/internal/wire"
)

// New builds the notify stage's SQS handler. sender, if not nil, replaces
// SES (tests, the benchmark).
func New(ctx context.Context, cfg config.Config, log *slog.Logger, o wire.Options, sender notifier.Sender) (*stage.Runner, error) {
	n, b, err := Stage(ctx, cfg, log, o, sender)
	if err != nil {
		return nil, err
	}
	// The channels other than email: their tasks share the queue, never
	// the email run (R-CHANNEL-4).
	hosts, err := CodeHost(b.Config, b.Now, log)
	if err != nil {
		return nil, err
	}
	p, err := Posting(b.Config, b, log, hosts...)
	if err != nil {
		return nil, err
	}
	// A repository's code_host_status: off is read by the fetch stage's
	// write, which a Started announcement may beat.
	p.StartedAfterFetch = len(hosts) > 0
	// Notify knows its channels: it announces (a Finished post, a dead
	// letter's) only when it has one, and then fetch and llm should too.
	n.Posts, b.Posts = len(p.Channels) > 0, len(p.Channels) > 0
	if n.Posts && !cfg.Channels {
		log.Warn("channels other than email without CRITICIZER_CHANNELS: their Started posts are never sent; deploy with OutboundWebhooks or CodeHostStatus on",
			"channels", len(p.Channels))
	}
	o.Runner = append([]stage.Option{stage.WithMessageTime(MessageTime)}, o.Runner...)
	return b.Runner(job.StageNotify, route(p, n.Handle), o)
}

// MessageTime is how long a notify message needs before it may start
// (R-STAGE-9): one send (sesmail.DefaultSendTimeout) and its mark (the
// notifier's 10 s mark timeout). A message with more rows than that
// covers is cut row by row by the notifier's own send window, and the
// rest deferred.
const MessageTime = sesmail.DefaultSendTimeout + 10*time.Second

// Stage builds the notify stage's work, and the base it runs on.
func Stage(ctx context.Context, cfg config.Config, log *slog.Logger, o wire.Options, sender notifier.Sender) (*notifier.Notify, *wire.Base, error) {
	b, err := wire.NewBase(ctx, cfg, log, o)
	if err != nil {
		return nil, nil, err
	}
	if cfg, err = secrets.Apply(ctx, b.AWS, cfg); err != nil {
		return nil, nil, err
	}
	b.Config = cfg // with its secrets: the webhook destinations (Posting)
	r, err := mail.NewRenderer()
	if err != nil {
		return nil, nil, err
	}
	signer, err := wire.Signer(cfg, log)
	if err != nil {
		return nil, nil, err
	}
	n := &notifier.Notify{Base: pipeline.Base{Jobs: b.Jobs, Queue: b.Queue, Log: log, Now: b.Now, Posts: cfg.Channels},
		Deliveries: b.Deliveries, Renderer: r, Sender: sender,
		Evidence: b.Evidence, ConfigurationSet: cfg.ConfigurationSet,
		Lease: cfg.Notify.DeliveryLease, Margin: cfg.EvidenceMargin, Policy: cfg.UncertainSend, SendTimeout: sesmail.DefaultSendTimeout,
		Recipients: b.Recipients, Signer: signer, PublicURL: cfg.PublicURL, MinSeverity: critic.Severity(cfg.Notify.MinSeverity)}
	if n.Gates, err = gates(cfg, b, o); err != nil {
		return nil, nil, err
	}
	if n.Votes, err = wire.VoteSigner(cfg); err != nil {
		return nil, nil, err
	}
	// Each email's footer links the recipient's preference page (R-PREF-2).
	if n.Prefs, err = wire.PrefsSigner(cfg); err != nil {
		return nil, nil, err
	}
	// With an inbound domain each email's Reply-To is its reply address
	// (R-REPLY-1), keyed with the unsubscribe key like the vote links.
	if cfg.InboundDomain != "" && cfg.UnsubscribeKey != "" {
		keys, err := inbound.NewKeys(cfg.UnsubscribeKey, cfg.UnsubscribeKeyPrevious)
		if err != nil {
			return nil, nil, err
		}
		n.Replies, n.InboundDomain = keys, cfg.InboundDomain
	}
	// Each recipient's email leaves out the findings they marked wrong
	// (R-VOTE-3): their marks are read once per run, before rendering.
	n.Dismissals = dynamo.NewDismissals(b.DynamoDB, cfg.JobsTable, b.Now)
	// Conversation roots are keyed with the unsubscribe signing key, a
	// secret the notifier already holds (mail.NewThreads says why).
	n.Threads, n.ListID = mail.NewThreads(cfg.UnsubscribeKey, cfg.MailDomain), cfg.ListID
	// The subject keeps the changelist's first title (R-THREAD-1).
	n.Titles = b.Jobs
	var account *sesmail.Account
	if sender == nil {
		client := sesmail.NewSES(b.AWS, cfg.Endpoints.SES)
		ses := sesmail.NewSender(client, cfg.MailFrom, cfg.ConfigurationSet)
		ses.ProbeAddress = cfg.ProbeAddress
		// The account's own quota (GetAccount, read at the first send and
		// every few minutes): its rate caps the configured one (R-RATE-2),
		// and a spent daily quota pauses sending (R-RATE-3).
		account = sesmail.NewAccount(client, log, cfg.Notify.SESQuotaRecheck)
		ses.Account = account
		n.Sender = ses
		if cfg.ProbeAddress != "" {
			n.Prober = ses
		}
	}
	if cfg.Notify.MaxSendRate > 0 || account != nil {
		// Every notifier counts its sends in the same per-second windows
		// (internal/ratelimit), whatever sender is in use.
		l := ratelimit.New(ratelimit.Dynamo{DB: b.DynamoDB, Table: cfg.JobsTable, Name: "ses"}, cfg.Notify.MaxSendRate)
		if account != nil {
			l.Account = account
		}
		n.Pacer = l
	}
	return n, b, nil
}

// gates are the notifier's gates, in the order they are asked: the
// allowed domains if the operator narrowed them (R-RECIPIENT-1), the
// recipients' standings (R-UNSUB-2), the mutes by reply (R-REPLY-7), the
// quiet rules (R-QUIET-1..3), the daily digests of readers on daily or
// mixed delivery, rows of the same outbox (R-DIGEST-*); and the reply
// gate of a reply's confirmation (R-REPLY-5).
func gates(cfg config.Config, b *wire.Base, o wire.Options) (notifier.Gates, error) {
	var list []notifier.Gate
	if cfg.AllowedRecipientDomains.On() {
		g, err := notifier.NewDomainGate(cfg.AllowedRecipientDomains)
		if err != nil {
			return notifier.Gates{}, err
		}
		list = append(list, g)
	}
	list = append(list, notifier.NewStandingGate())
	mute, err := notifier.NewMuteGate(dynamo.NewReplies(b.DynamoDB, cfg.JobsTable, b.Now))
	if err != nil {
		return notifier.Gates{}, err
	}
	quiet, err := notifier.NewQuietGate(notifier.QuietConfig{Versions: b.Jobs, MailSameDiff: cfg.Notify.MailSameDiff,
		MailUnchangedReruns: cfg.Notify.MailUnchangedReruns})
	if err != nil {
		return notifier.Gates{}, err
	}
	clock := o.DigestNow
	if clock == nil {
		clock = b.Now
	}
	digests, err := notifier.NewDigestGate(notifier.DigestConfig{Digests: b.Deliveries, Standings: b.Recipients, Clock: clock})
	if err != nil {
		return notifier.Gates{}, err
	}
	reply, err := notifier.NewReplyGate(b.Recipients)
	if err != nil {
		return notifier.Gates{}, err
	}
	return notifier.NewGates(append(list, mute, quiet, digests, reply)...)
}
