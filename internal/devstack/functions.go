package devstack

import (
	"context"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/criticizer/criticizer/internal/app"
	"github.com/criticizer/criticizer/internal/config"
	"github.com/criticizer/criticizer/internal/feedback"
	"github.com/criticizer/criticizer/internal/job"
	"github.com/criticizer/criticizer/internal/pipeline"
	"github.com/criticizer/criticizer/internal/stage"
	"github.com/criticizer/criticizer/internal/sweeper"
)

// FunctionOptions tune the local functions.
type FunctionOptions struct {
	// Pollers per stage queue: Lambda's concurrency for that function.
	Pollers int
	// Sender replaces SES for the notifier (fault injection); nil uses SES.
	Sender pipeline.Sender
	// Wrap wraps each stage's work (fault injection at stage boundaries).
	Wrap func(job.Stage, stage.Func) stage.Func
	// App options (SDK middleware, clock).
	App []app.Option
	// Runner options (jitter seed).
	Runner []stage.Option
	// Timeout of one invocation.
	Timeout time.Duration
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
}

// Functions are the Lambda handlers running in this process: the API
// behind an http.Handler, and one or more pollers per stage queue.
type Functions struct {
	App     *app.App
	API     http.Handler
	Runners map[job.Stage]*stage.Runner
	// Bridge is the SES event bridge, nil when it is off.
	Bridge *SESEventBridge
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// LocalUnsubscribeKey signs unsubscribe tokens on the local stack only.
const LocalUnsubscribeKey = "local-unsubscribe-signing-key-not-for-production"

// StartFunctions builds the App from cfg and starts the stage pollers.
func StartFunctions(ctx context.Context, cfg config.Config, res Resources, log *slog.Logger, o FunctionOptions) (*Functions, error) {
	// Unsubscribe links need a signing key and a base URL; the local stack
	// has fixed ones unless the caller chose.
	if cfg.UnsubscribeKey == "" {
		cfg.UnsubscribeKey = LocalUnsubscribeKey
	}
	if cfg.PublicURL == "" {
		cfg.PublicURL = "http://127.0.0.1:3000"
	}
	a, err := app.New(ctx, cfg, log, o.App...)
	if err != nil {
		return nil, err
	}
	api, err := a.API()
	if err != nil {
		return nil, err
	}
	if o.Pollers < 1 {
		o.Pollers = 1
	}
	if o.Timeout == 0 {
		o.Timeout = 30 * time.Second
	}
	f := &Functions{App: a, API: HTTPAPI(api.Handle), Runners: map[job.Stage]*stage.Runner{}}
	pctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	f.cancel = cancel
	for _, s := range job.Stages() {
		var fn stage.Func
		if s == job.StageNotify && o.Sender != nil {
			n, err := a.Notify(o.Sender)
			if err != nil {
				cancel()
				return nil, err
			}
			fn = n.Handle
		} else if fn, err = a.StageFunc(s); err != nil {
			cancel()
			return nil, err
		}
		if o.Wrap != nil {
			fn = o.Wrap(s, fn)
		}
		r := a.Runner(s, fn, o.Runner...)
		f.Runners[s] = r
		var h SQSHandler = r.Handle
		if o.Crash != nil {
			h = o.Crash(s, h)
		}
		for range o.Pollers {
			p := &Poller{SQS: a.Clients.SQS, QueueURL: res.Queues.Queue[s], QueueARN: res.QueueARNs[s], Handler: h,
				BatchSize: 10, Timeout: o.Timeout, Log: log.With("poller", string(s))}
			f.wg.Add(1)
			go func() { defer f.wg.Done(); p.Run(pctx) }()
		}
	}
	if res.FeedbackQueue != "" {
		var h SQSHandler = a.Feedback().Handle
		if o.Feedback != nil {
			h = o.Feedback(h)
		}
		p := &Poller{SQS: a.Clients.SQS, QueueURL: res.FeedbackQueue, QueueARN: res.FeedbackQueueARN, Handler: h,
			BatchSize: 10, Timeout: o.Timeout, Log: log.With("poller", "feedback")}
		f.start(func() { p.Run(pctx) })
		if !o.NoEventBridge && cfg.SESStoreURL != "" {
			f.Bridge = &SESEventBridge{Store: &feedback.SESEmulator{BaseURL: cfg.SESStoreURL}, SNS: a.Clients.SNS, TopicARN: res.EventsTopicARN,
				ConfigurationSet: cfg.ConfigurationSet, Log: log.With("bridge", "ses-events")}
			f.start(func() { f.Bridge.Run(pctx) })
		}
	}
	if o.SweepEvery > 0 {
		sw := a.Sweeper()
		f.start(func() {
			for pctx.Err() == nil {
				sleep(pctx, o.SweepEvery)
				if rep, err := sw.Run(pctx); err != nil && pctx.Err() == nil {
					log.WarnContext(pctx, "sweep failed", "error", err)
				} else if rep != (sweeper.Report{}) {
					log.InfoContext(pctx, "sweep", "jobs_requeued", rep.JobsRequeued, "stuck_sending", rep.StuckSending, "ordering_violations", rep.OrderingViolations,
						"held_deliveries", rep.HeldDeliveries, "evidence_lag_seconds", rep.EvidenceLagSeconds)
				}
			}
		})
	}
	return f, nil
}

func (f *Functions) start(fn func()) {
	f.wg.Add(1)
	go func() { defer f.wg.Done(); fn() }()
}

// Stop stops the pollers and waits for in-flight invocations.
func (f *Functions) Stop() {
	f.cancel()
	f.wg.Wait()
}
