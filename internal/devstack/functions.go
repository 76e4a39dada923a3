package devstack

import (
	"context"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/criticizer/criticizer/internal/app"
	"github.com/criticizer/criticizer/internal/config"
	"github.com/criticizer/criticizer/internal/job"
	"github.com/criticizer/criticizer/internal/pipeline"
	"github.com/criticizer/criticizer/internal/stage"
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
}

// Functions are the Lambda handlers running in this process: the API
// behind an http.Handler, and one or more pollers per stage queue.
type Functions struct {
	App     *app.App
	API     http.Handler
	Runners map[job.Stage]*stage.Runner
	cancel  context.CancelFunc
	wg      sync.WaitGroup
}

// StartFunctions builds the App from cfg and starts the stage pollers.
func StartFunctions(ctx context.Context, cfg config.Config, res Resources, log *slog.Logger, o FunctionOptions) (*Functions, error) {
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
		for range o.Pollers {
			p := &Poller{SQS: a.Clients.SQS, QueueURL: res.Queues.Queue[s], QueueARN: res.QueueARNs[s], Handler: r.Handle,
				BatchSize: 10, Timeout: o.Timeout, Log: log.With("poller", string(s))}
			f.wg.Add(1)
			go func() { defer f.wg.Done(); p.Run(pctx) }()
		}
	}
	return f, nil
}

// Stop stops the pollers and waits for in-flight invocations.
func (f *Functions) Stop() {
	f.cancel()
	f.wg.Wait()
}
