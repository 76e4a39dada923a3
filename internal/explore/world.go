package explore

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/criticizer/criticizer/internal/api"
	"github.com/criticizer/criticizer/internal/critic"
	"github.com/criticizer/criticizer/internal/delivery"
	"github.com/criticizer/criticizer/internal/drain"
	"github.com/criticizer/criticizer/internal/job"
	"github.com/criticizer/criticizer/internal/mail"
	"github.com/criticizer/criticizer/internal/notify"
	"github.com/criticizer/criticizer/internal/pipeline"
	"github.com/criticizer/criticizer/internal/sesevent"
	"github.com/criticizer/criticizer/internal/stage"
	"github.com/criticizer/criticizer/internal/store"
	"github.com/criticizer/criticizer/internal/store/memstore"
	"github.com/criticizer/criticizer/internal/sweep"
)

// epoch is where every run's clock starts: a century ahead of the wall
// clock, so that an invocation's deadline (Scenario.Deadlines), a context
// deadline at a virtual time, never fires a real timer while the explorer
// holds the process parked. Only the virtual clock ends an invocation.
func epoch() time.Time { return time.Date(2126, 1, 5, 9, 0, 0, 0, time.UTC) }

// world is one run: the real notify, feedback and sweeper handlers on the
// in-memory store, with the clock, the queues and SES under the
// explorer's control.
type world struct {
	sc    Scenario
	sched *sched
	now   time.Time

	jobsMem  *memstore.Jobs
	outbox   *memstore.Deliveries
	evidence *memstore.Evidence
	rcpts    *memstore.Preferences

	notifyQ, feedback *queue
	// fetchQ and llmQ carry jobs from intake to notify (intake
	// scenarios only: the others start every job at notify).
	fetchQ, llmQ *queue
	mails        []*sesMail
	// named counts names given outside any process.
	named int

	notify *notify.Notify
	// quiet and digests are the notifier's quiet gate and digests' store,
	// if the scenario has them: a variant may change either before the
	// notifier's gates are listed (wireGates).
	quiet   *notify.QuietGate
	digests store.Digests
	runner  *stage.Runner
	// The intake front: the API handler (routing to the real intake),
	// and the fetch and llm stages between it and notify.
	api                  *api.Handler
	intake               *api.Intake
	fetch, llm           *stage.Runner
	blobs                map[string][]byte
	requests             []*request
	created              map[job.ID]int
	keys                 []string // the idempotency keys recorded, in order (a prefix of each hash)
	unconditionalCreates bool
	fb                   *sesevent.Handler
	sweeper              *sweep.Sweeper

	// evidenceView, if set, replaces what notify and the sweeper read of
	// the evidence path (a variant's rule).
	evidenceView func(store.EvidenceState) store.EvidenceState
	// budgets spent on this path
	faults, ticks, sweeps, redrives int
	// rowIDs are every row the scenario's jobs can have; digestIDs every
	// digest row its daily readers can have (digest.go).
	rowIDs    []string
	digestIDs []string
	// fateOf is what SES makes of each row's mail whose job names a Fate
	// (JobSpec.Fate).
	fateOf map[string]Fate
	jobIDs []job.ID
	// succeeded is each job's verdict as the last safety check saw it.
	succeeded map[job.ID]bool
	// dropped are stage messages deleted with their work neither done
	// nor handed on (props.go).
	dropped []string
	// late are messages started past their batch's last start (aws.go).
	late []string
	// restless: the healing run stopped at its limit, the world not quiet.
	restless bool
	// steps counts the actions applied; refused are the deliveries whose
	// send SES refused for good: inputs of the owed oracle (owed.go).
	steps   int
	refused map[string]bool
}

func newWorld(sc Scenario, v *Variant) *world {
	w := &world{sc: sc, sched: newSched(), now: epoch(), succeeded: map[job.ID]bool{}, blobs: map[string][]byte{}, created: map[job.ID]int{}}
	clock := func() time.Time { return w.now }
	w.jobsMem, w.outbox, w.evidence, w.rcpts = memstore.NewJobs(clock), memstore.NewDeliveries(clock), memstore.NewEvidence(clock), memstore.NewPreferencesAt(clock)
	cfg := sc.Config
	w.notifyQ = &queue{name: "notify", visibility: cfg.Visibility, maxReceives: cfg.MaxReceives, dlq: &queue{name: "notify-dlq"}}
	w.fetchQ = &queue{name: "fetch", visibility: cfg.Visibility, maxReceives: cfg.MaxReceives, dlq: &queue{name: "fetch-dlq"}}
	w.llmQ = &queue{name: "llm", visibility: cfg.Visibility, maxReceives: cfg.MaxReceives, dlq: &queue{name: "llm-dlq"}}
	w.feedback = &queue{name: "feedback", visibility: cfg.Visibility, maxReceives: cfg.MaxReceives, dlq: &queue{name: "feedback-dlq"}}
	log := slog.New(slog.DiscardHandler)

	gj, gout, gev, grc := jobs{w, w.jobsMem}, outbox{w, w.outbox}, evidencePath{w, w.evidence}, recipients{w, w.rcpts}
	sender := &ses{w}
	w.notify = &notify.Notify{
		Base:       pipeline.Base{Jobs: gj, Queue: stageQueue{w}, Log: log, Now: clock},
		Deliveries: gout, Renderer: renderer(), Sender: sender, Prober: sender,
		Evidence: gev, ConfigurationSet: sc.ConfigurationSet,
		Lease: cfg.Lease, Margin: cfg.Margin, Policy: sc.Evidence.UncertainSend, MarkTimeout: 5 * time.Second, SendTimeout: 5 * time.Second,
		Recipients: grc, Tokens: func(ctx context.Context) string { return "tok-" + w.name(ctx) },
	}
	if sc.Quiet {
		q, err := notify.NewQuietGate(notify.QuietConfig{Versions: quietStore{w, w.jobsMem}})
		if err != nil {
			panic(err)
		}
		w.quiet = q
	}
	w.runner = stage.New(job.StageNotify, "notify", w.notify.Handle, stageQueue{w}, nil, log)
	// Full jitter's shortest draw: a retry is visible again at once, or
	// after its Retry-After. Any other draw is a later tick.
	w.runner.Policy.Initial = 0
	w.runner.Now = clock
	w.fb = &sesevent.Handler{Deliveries: gout, Evidence: gev, Recipients: grc, Jobs: gj, Queue: stageQueue{w}, Log: log, Now: clock}
	w.fb.Bound = cfg.Margin
	w.wireEvidenceOptions()
	w.sweeper = &sweep.Sweeper{Jobs: gj, Deliveries: gout, Evidence: gev, ConfigurationSet: sc.ConfigurationSet, Queue: stageQueue{w},
		Log: log, Now: clock, StuckAfter: cfg.StuckAfter, EvidenceWindow: cfg.EvidenceWindow, Margin: cfg.Margin,
		Drain: &drain.Checker{Counter: counter{w}, Queue: w.feedback.name, DLQ: w.feedback.dlq.name, Evidence: gev,
			Set: sc.ConfigurationSet, Now: clock}}
	w.wireIntake(gj, log)
	if sc.Deadlines {
		w.wireDeployed()
	}
	w.wireDigests(gout)
	if v != nil && v.Apply != nil {
		v.Apply(w)
	}
	w.wireGates(grc, clock)

	crit, _ := json.Marshal(critic.Critique{Critic: "offline/v1", Summary: "One finding.", Findings: []critic.Finding{}})
	for _, js := range sc.Jobs {
		w.jobIDs = append(w.jobIDs, job.NewID("generic", js.Changelist, js.Version))
		for _, r := range js.Recipients {
			id := delivery.ID(job.ChangelistKey("generic", js.Changelist), r, js.Version)
			w.rowIDs = append(w.rowIDs, id)
			if js.Fate != "" {
				if w.fateOf == nil {
					w.fateOf = map[string]Fate{}
				}
				w.fateOf[id] = js.Fate
			}
		}
	}
	for i, js := range sc.Jobs {
		if len(js.Posts) > 0 {
			// The job is intake's to create: only its webhooks exist.
			w.addRequests(js)
			continue
		}
		j := job.Job{ID: job.NewID("generic", js.Changelist, js.Version), Source: "generic", ChangelistID: js.Changelist,
			ReviewVersion: js.Version, Title: "Change " + js.Changelist, URL: "https://review.example/" + js.Changelist, Author: "ana",
			Recipients: js.Recipients, Status: job.StatusInProgress, Stage: job.StageNotify, Attempts: job.Attempts{},
			Critique: crit, CreatedAt: epoch(), UpdatedAt: epoch()}
		if sc.Quiet {
			// As intake creates it: the changelist head moves to it.
			j.DiffSHA256 = "diff-" + js.Changelist
			if _, err := w.jobsMem.Create(context.Background(), store.CreateRequest{Job: j, IdempotencyKeySHA: string(j.ID)}); err != nil {
				panic(err)
			}
		}
		if js.OverBudget {
			w.overBudget(j)
			continue
		}
		if js.Digested {
			w.alreadyDigested(j)
			continue
		}
		w.jobsMem.Put(j)
		b, _ := json.Marshal(job.Message{JobID: j.ID, Stage: job.StageNotify})
		for k := range max(js.Messages, 1) {
			id := fmt.Sprintf("notify-%d", i+1)
			if k > 0 {
				id += fmt.Sprintf("-%d", k+1)
			}
			w.notifyQ.add(w, id, string(b), 0, time.Time{}, nil)
		}
	}
	if sc.Start != nil {
		sc.Start(w)
		// The explorer's budgets start now.
		w.faults, w.ticks, w.sweeps, w.redrives = 0, 0, 0, 0
	}
	return w
}

// renderer renders the email: mail.Renderer holds no state.
func renderer() *mail.Renderer {
	r, _ := mail.NewRenderer()
	return r
}

// name names what ctx's process creates (see proc.name).
func (w *world) name(ctx context.Context) string {
	if p := procOf(ctx); p != nil {
		return p.name()
	}
	w.named++
	return fmt.Sprintf("w.%d", w.named)
}

// close unwinds the run's processes.
func (w *world) close() { w.sched.stop() }

// stageQueue is SQS as intake, the stage runners, notify, feedback and
// the sweeper use it: every call a gate.
type stageQueue struct{ w *world }

// queueOf returns the queue of a stage.
func (w *world) queueOf(s job.Stage) (*queue, error) {
	switch s {
	case job.StageFetch:
		return w.fetchQ, nil
	case job.StageLLM:
		return w.llmQ, nil
	case job.StageNotify:
		return w.notifyQ, nil
	}
	return nil, fmt.Errorf("explore: no %s queue in this world", s)
}

// byName returns the stage queue a runner's queue URL names.
func (w *world) byName(name string) *queue {
	for _, q := range w.queues() {
		if q.name == name {
			return q
		}
	}
	return w.notifyQ
}

// queues are the world's source queues: the three stages' and the
// feedback queue.
func (w *world) queues() []*queue { return []*queue{w.notifyQ, w.fetchQ, w.llmQ, w.feedback} }

// Enqueue implements pipeline.Enqueuer and api.Enqueuer (SendMessage to
// the stage's queue).
func (q stageQueue) Enqueue(ctx context.Context, m job.Message) error {
	to, err := q.w.queueOf(m.Stage)
	if err != nil {
		return err
	}
	b, err := json.Marshal(m)
	if err != nil {
		return err
	}
	_, err = call(q.w, ctx, wr("sqs.SendMessage", to.name), func() (struct{}, error) {
		to.add(q.w, to.name+"-"+q.w.name(ctx), string(b), 0, time.Time{}, nil)
		return struct{}{}, nil
	})
	return err
}

// Delay implements stage.Queue (ChangeMessageVisibility).
func (q stageQueue) Delay(ctx context.Context, url string, rh string, d time.Duration) error {
	id := rh
	if i := strings.LastIndex(rh, "/"); i > 0 {
		id = rh[:i]
	}
	on := q.w.byName(url)
	_, err := call(q.w, ctx, wr("sqs.ChangeMessageVisibility", on.name+"/"+id), func() (struct{}, error) {
		if m := on.handle(rh); m != nil {
			m.visibleAt = q.w.now.Add(d)
			return struct{}{}, nil
		}
		return struct{}{}, fmt.Errorf("ChangeMessageVisibility: receipt handle %s is not current", rh)
	})
	return err
}

// DeadLetter implements stage.Queue (SendMessage to the stage's DLQ).
func (q stageQueue) DeadLetter(ctx context.Context, s job.Stage, body []byte) error {
	from, err := q.w.queueOf(s)
	if err != nil {
		return err
	}
	dlq := from.dlq
	_, err = call(q.w, ctx, wr("sqs.SendMessage", dlq.name), func() (struct{}, error) {
		dlq.add(q.w, dlq.name+"-"+q.w.name(ctx), string(body), 0, time.Time{}, nil)
		return struct{}{}, nil
	})
	return err
}

// Requeue implements stage.Queue (SendMessage with DelaySeconds).
func (q stageQueue) Requeue(ctx context.Context, url string, body string, delay time.Duration) error {
	to := q.w.byName(url)
	_, err := call(q.w, ctx, wr("sqs.SendMessage", to.name), func() (struct{}, error) {
		to.add(q.w, to.name+"-"+q.w.name(ctx), body, delay, time.Time{}, nil)
		return struct{}{}, nil
	})
	return err
}

// invoke receives ms from q and runs the queue's function on them as a
// new process, one batch, as Lambda's event source mapping does; when the
// handler returns, the records it did not report as failures are deleted.
// A message past the queue's maxReceiveCount goes to the DLQ instead.
func (w *world) invoke(q *queue, ms ...*message) {
	var ev events.SQSEvent
	for _, m := range ms {
		if rec, ok := q.receive(w, m); ok {
			ev.Records = append(ev.Records, rec)
		}
	}
	if len(ev.Records) == 0 {
		return
	}
	var h func(context.Context, events.SQSEvent) (events.SQSEventResponse, error)
	switch q {
	case w.notifyQ:
		h = w.runner.Handle
	case w.fetchQ:
		h = w.fetch.Handle
	case w.llmQ:
		h = w.llm.Handle
	case w.feedback:
		h = w.fb.Handle
	}
	fn := q.name
	if q == w.feedback {
		fn = "feedback"
	}
	end, noStarts := w.deadlineOf(fn, len(ev.Records))
	p := w.sched.startBy(q.name, end, noStarts, func(ctx context.Context) {
		resp, err := h(ctx, ev)
		if err != nil {
			return // the whole batch fails: nothing is deleted
		}
		failed := map[string]bool{}
		for _, f := range resp.BatchItemFailures {
			failed[f.ItemIdentifier] = true
		}
		for _, rec := range ev.Records {
			if failed[rec.MessageId] {
				continue
			}
			_, _ = call(w, ctx, wr("sqs.DeleteMessage", q.name+"/"+rec.MessageId), func() (struct{}, error) {
				if m := q.handle(rec.ReceiptHandle); m != nil {
					w.checkDelete(ctx, q, m)
					m.deleted = true
					if m.event != nil {
						m.event.processed = true
					}
				}
				return struct{}{}, nil
			})
		}
	})
	p.jobs = w.jobsOf(ms)
}

// sweep runs the sweeper as a new process (the EventBridge schedule).
func (w *world) sweep() {
	w.sched.start("sweeper", func(ctx context.Context) { _, _ = w.sweeper.Run(ctx) })
}

// wireGates lists the notifier's gates as a deployment does: the
// recipients' standings and the reply gate (every world keeps
// preference records), the quiet rules and the digests if the scenario
// has them.
func (w *world) wireGates(rcpts recipients, clock func() time.Time) {
	list := []notify.Gate{notify.NewStandingGate()}
	if w.quiet != nil {
		list = append(list, w.quiet)
	}
	if w.digests != nil {
		d, err := notify.NewDigestGate(notify.DigestConfig{Digests: w.digests, Standings: rcpts, Clock: clock})
		if err != nil {
			panic(err)
		}
		list = append(list, d)
	}
	reply, err := notify.NewReplyGate(rcpts)
	if err != nil {
		panic(err)
	}
	w.notify.Gates = notify.MustGates(append(list, reply)...)
}
