package devstack

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/criticizer/criticizer/internal/api"
	"github.com/criticizer/criticizer/internal/awsclient"
	"github.com/criticizer/criticizer/internal/blob"
	"github.com/criticizer/criticizer/internal/config"
	"github.com/criticizer/criticizer/internal/critic"
	"github.com/criticizer/criticizer/internal/deploy"
	"github.com/criticizer/criticizer/internal/job"
	"github.com/criticizer/criticizer/internal/pipeline"
	"github.com/criticizer/criticizer/internal/stage"
	"github.com/criticizer/criticizer/internal/sweep"
	"github.com/criticizer/criticizer/internal/wire"
	"github.com/criticizer/criticizer/internal/wire/feedback"
	"github.com/criticizer/criticizer/internal/wire/fetch"
	"github.com/criticizer/criticizer/internal/wire/intake"
	"github.com/criticizer/criticizer/internal/wire/llm"
	"github.com/criticizer/criticizer/internal/wire/notify"
	"github.com/criticizer/criticizer/internal/wire/reply"
	"github.com/criticizer/criticizer/internal/wire/sweeper"
)

// FunctionOptions tune the local functions.
type FunctionOptions struct {
	// Pollers per stage queue: Lambda's concurrency for that function.
	Pollers int
	// Sender replaces SES for the notifier (fault injection); nil uses SES.
	Sender pipeline.Sender
	// Critic replaces the configured critic of the llm stage.
	Critic critic.Critic
	// Wire options: SDK middleware, clock, a wrapper of each stage's work,
	// runner options (the jitter seed).
	Wire wire.Options
	// Timeout of one invocation: the function timeout, at which the poller
	// kills it (Poller). Default 30 s.
	Timeout time.Duration
	// Timeouts, if set, overrides Timeout per function ("fetch", "llm",
	// "notify", "feedback"): deployed, each function has its own.
	Timeouts map[string]time.Duration
	// SweepEvery runs the sweeper on this interval (the EventBridge
	// schedule); zero leaves it to the caller.
	SweepEvery time.Duration
	// NoEventBridge turns off the SES event bridge (no provider evidence).
	NoEventBridge bool
	// Crash, if set, wraps each stage's SQS handler (crash injection).
	Crash func(job.Stage, SQSHandler) SQSHandler
	// Feedback, if set, wraps the feedback function's handler (faults on
	// the evidence path).
	Feedback func(SQSHandler) SQSHandler
	// Hold, if set, is every poller's Hold (Poller.Hold), told which
	// function's queue the message is on ("fetch", "llm", "notify",
	// "feedback"): a positive answer keeps the message in flight that long
	// and out of this invocation, so it arrives after newer ones.
	Hold func(function string, m events.SQSMessage) time.Duration
	// OnKill, if set, is told about every invocation the pollers kill at
	// its timeout.
	OnKill func(function string, ev events.SQSEvent)
	// SMTP, if set, is the address the local SES receiving (Inbound)
	// listens on for replies ("127.0.0.1:0": any port); Verdicts, if set,
	// is its verdict switch (Inbound.Verdicts). Replies need the inbound
	// domain (cfg.InboundDomain).
	SMTP     string
	Verdicts func(*Verdicts)
	// Reply, if set, wraps the reply function's handler (faults).
	Reply func(SQSHandler) SQSHandler
	// FunctionAWS, if set, adds SDK options to one function's clients
	// (its name: "intake", "fetch"…), those of its event source's poller
	// included, as Lambda polls with the function's role: a recorder of
	// the calls each function makes (fault.Recorder).
	FunctionAWS func(function string) []awsclient.Option
	// Template, if set, is the template whose environments the functions
	// get (FunctionConfigs); nil: the deployment's (DeployedTemplate).
	Template *Template
}

// Functions are the Lambda handlers running in this process, each built by
// its function's own constructor (internal/wire), as in Lambda: the API
// behind an http.Handler, and pollers for every queue. The stores and
// queue are there for tests to look at and act on.
type Functions struct {
	API http.Handler
	// Hooks is the local webhook receiver the API serves at LocalHookPath.
	Hooks *HookReceiver
	// Intake is the handler behind API, for callers that speak API
	// Gateway events directly (the benchmark).
	Intake  *api.Handler
	Runners map[job.Stage]*stage.Runner
	// Bridge is the SES event bridge, nil when it is off.
	Bridge *SESEventBridge
	// Inbound is the local SES receiving (replies over SMTP), nil when
	// it is off.
	Inbound *Inbound
	*wire.Base
	Blobs   *blob.Store
	Sweeper *sweep.Sweeper
	cancel  context.CancelFunc
	wg      sync.WaitGroup
}

// LocalUnsubscribeKey signs unsubscribe tokens on the local stack only.
const LocalUnsubscribeKey = "local-unsubscribe-signing-key-not-for-production"

// StartFunctions builds each function with the configuration its
// deployed environment gives it on these resources (FunctionConfigs, cfg
// the local stack's settings) and starts the pollers. The stores and
// queue of Functions.Base are built from cfg, for the caller to look at.
func StartFunctions(ctx context.Context, cfg config.Config, res Resources, log *slog.Logger, o FunctionOptions) (*Functions, error) {
	// Unsubscribe links need a signing key and a base URL; the local stack
	// has fixed ones unless the caller chose.
	if cfg.UnsubscribeKey == "" {
		cfg.UnsubscribeKey = LocalUnsubscribeKey
	}
	if cfg.PublicURL == "" {
		cfg.PublicURL = LocalPublicURL
	}
	if o.Pollers < 1 {
		o.Pollers = 1
	}
	if o.Timeout == 0 {
		o.Timeout = 30 * time.Second
	}
	// Every function's AWS requests stop taking effect once its invocation
	// is killed at its timeout, as in Lambda (KillSwitch); installed last,
	// so it wraps any fault injector too.
	o.Wire.AWS = append(slices.Clone(o.Wire.AWS), KillSwitch())
	if o.Sender != nil {
		o.Sender = killableSender{o.Sender}
	}
	tpl := o.Template
	if tpl == nil {
		var err error
		if tpl, err = DeployedTemplate(); err != nil {
			return nil, err
		}
	}
	fc, err := FunctionConfigs(tpl, res, cfg)
	if err != nil {
		return nil, err
	}
	base, err := wire.NewBase(ctx, cfg, log, o.Wire)
	if err != nil {
		return nil, err
	}
	// Each function's options: the common ones, and its own.
	wo := func(fn string) wire.Options {
		w := o.Wire
		if o.FunctionAWS != nil {
			w.AWS = append(slices.Clone(w.AWS), o.FunctionAWS(fn)...)
		}
		return w
	}
	// pollerSQS is the SQS client of a function's event source mapping.
	pollerSQS := func(fn string) (*sqs.Client, error) {
		b, err := wire.NewBase(ctx, fc[fn], log, wo(fn))
		if err != nil {
			return nil, err
		}
		return b.SQS, nil
	}
	apiH, err := intake.New(ctx, fc[deploy.FnIntake], log, wo(deploy.FnIntake))
	if err != nil {
		return nil, fmt.Errorf("intake: %w", err)
	}
	sw, err := sweeper.New(ctx, fc[deploy.FnSweeper], log, wo(deploy.FnSweeper))
	if err != nil {
		return nil, fmt.Errorf("sweeper: %w", err)
	}
	// The API, and beside it the local webhook receiver (its own path,
	// not a route of the deployment's API): what `make run` posts to.
	hooks, err := NewHookReceiver(LocalHookSecret)
	if err != nil {
		return nil, err
	}
	mux := http.NewServeMux()
	mux.Handle(LocalHookPath, hooks)
	mux.Handle("/", HTTPAPI(apiH.Handle))
	f := &Functions{API: mux, Hooks: hooks, Intake: apiH, Runners: map[job.Stage]*stage.Runner{}, Base: base, Sweeper: sw,
		Blobs: blob.New(blob.NewS3(base.AWS, cfg.Endpoints.S3), cfg.PayloadBucket)}
	pctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	f.cancel = cancel
	for _, s := range job.Stages() {
		var r *stage.Runner
		switch s {
		case job.StageFetch:
			r, err = fetch.New(ctx, fc[deploy.FnFetch], log, wo(deploy.FnFetch))
		case job.StageLLM:
			r, err = llm.New(ctx, fc[deploy.FnLLM], log, wo(deploy.FnLLM), o.Critic)
		case job.StageNotify:
			r, err = notify.New(ctx, fc[deploy.FnNotify], log, wo(deploy.FnNotify), o.Sender)
		}
		if err != nil {
			cancel()
			return nil, fmt.Errorf("%s: %w", s, err)
		}
		client, err := pollerSQS(string(s))
		if err != nil {
			cancel()
			return nil, err
		}
		f.Runners[s] = r
		var h SQSHandler = r.Handle
		if o.Crash != nil {
			h = o.Crash(s, h)
		}
		for range o.Pollers {
			p := o.poller(string(s), client, res.Queues.Queue[s], res.QueueARNs[s], h, log)
			f.start(func() { p.Run(pctx) })
		}
	}
	if res.FeedbackQueue != "" {
		fb, err := feedback.New(ctx, fc[deploy.FnFeedback], log, wo(deploy.FnFeedback))
		if err != nil {
			cancel()
			return nil, fmt.Errorf("feedback: %w", err)
		}
		client, err := pollerSQS(deploy.FnFeedback)
		if err != nil {
			cancel()
			return nil, err
		}
		var h SQSHandler = fb.Handle
		if o.Feedback != nil {
			h = o.Feedback(h)
		}
		p := o.poller("feedback", client, res.FeedbackQueue, res.FeedbackQueueARN, h, log)
		f.start(func() { p.Run(pctx) })
		if !o.NoEventBridge && cfg.SESStoreURL != "" {
			clients, err := NewClients(ctx, cfg.Endpoints)
			if err != nil {
				cancel()
				return nil, err
			}
			f.Bridge = &SESEventBridge{Store: &SESEmulator{BaseURL: cfg.SESStoreURL}, SNS: clients.SNS, TopicARN: res.EventsTopicARN,
				ConfigurationSet: cfg.ConfigurationSet, Log: log.With("bridge", "ses-events")}
			f.start(func() { f.Bridge.Run(pctx) })
		}
	}
	if res.ReplyQueue != "" {
		rp, err := reply.New(ctx, fc[deploy.FnReply], log, wo(deploy.FnReply))
		if err != nil {
			cancel()
			return nil, fmt.Errorf("reply: %w", err)
		}
		client, err := pollerSQS(deploy.FnReply)
		if err != nil {
			cancel()
			return nil, err
		}
		var h SQSHandler = rp.Handle
		if o.Reply != nil {
			h = o.Reply(h)
		}
		p := o.poller("reply", client, res.ReplyQueue, res.ReplyQueueARN, h, log)
		f.start(func() { p.Run(pctx) })
		if o.SMTP != "" && cfg.InboundDomain != "" {
			clients, err := NewClients(ctx, cfg.Endpoints)
			if err != nil {
				cancel()
				return nil, err
			}
			f.Inbound = &Inbound{Domain: cfg.InboundDomain, S3: clients.S3, Bucket: cfg.PayloadBucket, Prefix: deploy.InboundPrefix,
				SNS: clients.SNS, TopicARN: res.InboundTopicARN, Verdicts: o.Verdicts, Log: log.With("smtp", "inbound")}
			if err := f.Inbound.Start(o.SMTP); err != nil {
				cancel()
				return nil, err
			}
		}
	}
	if o.SweepEvery > 0 {
		f.start(func() {
			for pctx.Err() == nil {
				sleep(pctx, o.SweepEvery)
				if rep, err := sw.Run(pctx); err != nil && pctx.Err() == nil {
					log.WarnContext(pctx, "sweep failed", "error", err)
				} else if rep != (sweep.Report{}) {
					log.InfoContext(pctx, "sweep", "jobs_requeued", rep.JobsRequeued, "stuck_sending", rep.StuckSending, "ordering_violations", rep.OrderingViolations,
						"held_deliveries", rep.HeldDeliveries, "evidence_lag_seconds", rep.EvidenceLagSeconds)
				}
			}
		})
	}
	return f, nil
}

// poller plays the event source mapping of one function's queue.
func (o FunctionOptions) poller(fn string, client *sqs.Client, url, arn string, h SQSHandler, log *slog.Logger) *Poller {
	timeout := o.Timeout
	if t, ok := o.Timeouts[fn]; ok && t > 0 {
		timeout = t
	}
	p := &Poller{SQS: client, QueueURL: url, QueueARN: arn, Handler: h, BatchSize: 10, Timeout: timeout,
		Log: log.With("poller", fn)}
	if o.Hold != nil {
		p.Hold = func(m events.SQSMessage) time.Duration { return o.Hold(fn, m) }
	}
	if o.OnKill != nil {
		p.OnKill = func(ev events.SQSEvent) { o.OnKill(fn, ev) }
	}
	return p
}

func (f *Functions) start(fn func()) {
	f.wg.Add(1)
	go func() { defer f.wg.Done(); fn() }()
}

// Stop stops the pollers and the SMTP listener and waits for in-flight
// invocations.
func (f *Functions) Stop() {
	if f.Inbound != nil {
		_ = f.Inbound.Close()
	}
	f.cancel()
	f.wg.Wait()
}

// Handler returns a function's Lambda handler, built by its own
// constructor with the configuration its deployed environment gives it
// on res (FunctionConfigs, cfg the local stack's settings): the value its
// main passes to lambda.Start. `devstack invoke` and the events/ tests
// wrap it with lambda.NewHandler, so a sample event goes through the
// runtime's own decoding.
func Handler(ctx context.Context, name string, cfg config.Config, res Resources, log *slog.Logger, o wire.Options) (any, error) {
	tpl, err := DeployedTemplate()
	if err != nil {
		return nil, err
	}
	fc, err := FunctionConfigs(tpl, res, cfg)
	if err != nil {
		return nil, err
	}
	if c, ok := fc[name]; ok {
		cfg = c
	}
	switch name {
	case "intake":
		h, err := intake.New(ctx, cfg, log, o)
		if err != nil {
			return nil, err
		}
		return h.Handle, nil
	case "fetch", "llm", "notify":
		var r *stage.Runner
		var err error
		switch name {
		case "fetch":
			r, err = fetch.New(ctx, cfg, log, o)
		case "llm":
			r, err = llm.New(ctx, cfg, log, o, nil)
		default:
			r, err = notify.New(ctx, cfg, log, o, nil)
		}
		if err != nil {
			return nil, err
		}
		return r.Handle, nil
	case "feedback":
		h, err := feedback.New(ctx, cfg, log, o)
		if err != nil {
			return nil, err
		}
		return h.Handle, nil
	case "reply":
		h, err := reply.New(ctx, cfg, log, o)
		if err != nil {
			return nil, err
		}
		return h.Handle, nil
	case "sweeper":
		s, err := sweeper.New(ctx, cfg, log, o)
		if err != nil {
			return nil, err
		}
		return sweeper.Handler(s), nil
	}
	return nil, fmt.Errorf("unknown function %q (one of %v)", name, deploy.Describe().Names())
}
