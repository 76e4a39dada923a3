// Package chaos is a randomized, seeded fault campaign on the local stack
// (`make chaos`, and a short fixed-seed run in `make test`). It posts N
// review webhooks (1–5 recipients each, some delivered twice, some
// concurrently) while a seeded injector fails AWS calls at every SDK
// boundary — 5xx errors, throttles, timeouts, latency and crashes
// (runtime.Goexit, which kills the invocation) — and the function workers
// are stopped and started again between steps. AWS's own semantics are
// played where they are harsher than a test's (the platform kinds): calls
// that hang until the poller kills the invocation at its function
// timeout, feedback messages that arrive half a minute after newer ones,
// feedback messages dead-lettered and redriven by a message move task
// with new ids, and SES's plain-text validation notice. Then the faults
// stop, the stack drains (the sweeper runs on short timings; the feedback
// DLQ is redriven until empty), and the campaign checks
// what users and operators would see: every (changelist, recipient,
// version) emailed exactly once, or the job dead-lettered with a complete
// envelope; no job lost or stuck; no secret or raw address in any dead
// letter or log line.
//
// The seed fixes the jobs, the fault decisions' random stream and the
// jitter; goroutine scheduling still varies, so two runs with one seed
// inject a similar mix, not the same calls.
package chaos

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/aws/smithy-go/logging"

	"github.com/criticizer/criticizer/internal/awsclient"
	"github.com/criticizer/criticizer/internal/config"
	"github.com/criticizer/criticizer/internal/deploy"
	"github.com/criticizer/criticizer/internal/devstack"
	"github.com/criticizer/criticizer/internal/fault"
	"github.com/criticizer/criticizer/internal/job"
	"github.com/criticizer/criticizer/internal/obs"
	"github.com/criticizer/criticizer/internal/retry"
	"github.com/criticizer/criticizer/internal/stage"
	"github.com/criticizer/criticizer/internal/store/dynamo"
	"github.com/criticizer/criticizer/internal/wire"
)

// Config is one campaign.
type Config struct {
	Jobs        int     // reviews posted (default 200)
	Seed        uint64  // fixes jobs, fault choices and jitter
	Rate        float64 // probability that an AWS call is failed (default 0.03)
	Concurrency int     // webhook senders posting at once (default 8)
	DupRate     float64 // share of webhooks delivered twice (default 0.3)
	// PoisonRate is the share of reviews whose diff is malformed: they must
	// end dead-lettered (default 0.05; negative: none).
	PoisonRate float64
	Pollers    int // pollers per stage queue (default 2)
	// RestartEvery stops the function workers and starts new ones while
	// faults are on (default 5s).
	RestartEvery time.Duration
	// Linger keeps faults on after the last webhook is answered (default 10s).
	Linger time.Duration
	// Drain bounds the wait, once faults stop, for every job to reach a
	// terminal state and the queues to empty (default 5m).
	Drain time.Duration
	// Log receives the functions' JSON log lines (after the leak scan); nil
	// discards them.
	Log io.Writer
	// Progress, if set, receives one line per phase.
	Progress io.Writer
	// ReplyRate is the share of critiques a reviewer replies "wrong 1"
	// to while faults are on (default 0.2; negative: none); 30% of the
	// replies are delivered twice.
	ReplyRate float64
}

func (c *Config) defaults() {
	if c.Jobs <= 0 {
		c.Jobs = 200
	}
	if c.Rate == 0 {
		c.Rate = 0.03
	}
	if c.Concurrency <= 0 {
		c.Concurrency = 8
	}
	if c.DupRate == 0 {
		c.DupRate = 0.3
	}
	if c.PoisonRate == 0 {
		c.PoisonRate = 0.05
	}
	if c.Pollers <= 0 {
		c.Pollers = 2
	}
	if c.RestartEvery == 0 {
		c.RestartEvery = 5 * time.Second
	}
	if c.Linger == 0 {
		c.Linger = 10 * time.Second
	}
	if c.Drain == 0 {
		c.Drain = 5 * time.Minute
	}
	if c.Log == nil {
		c.Log = io.Discard
	}
	if c.Progress == nil {
		c.Progress = io.Discard
	}
	if c.ReplyRate == 0 {
		c.ReplyRate = 0.2
	}
}

// Stack is the running emulators (devstack exec's environment).
type Stack struct {
	Endpoints config.Endpoints
	SESURL    string
}

// Campaign timings: the production values scaled down so a run takes
// minutes, keeping their order: lease < margin-passed < held ≪ evidence
// window; the evidence margin above the event bridge's publishing delay
// (the publish bound R-EVIDENCE-2 assumes); stuck-after above the longest
// backoff of a 5-attempt budget (16 s). The sweeper keeps production's
// ratio, scaled like the invocation timeout (10×): every minute, stuck
// after 10 minutes → every 6 s, stuck after 60 s. It re-enqueues every
// stuck job on every sweep, so a stuck-after shorter than the queues'
// latency on a loaded machine floods the stage queues with copies, which
// slows them further: at 20 s, a 500-job campaign on two shared cores
// spent minutes re-enqueueing thousands of notify messages. The stage
// functions' timeout is twice the feedback function's (deployed: 60 s or
// more against 10 s): a stage starts a message only while half of what is
// left suffices (internal/deadline), and at 3 s a loaded machine's notify
// started about one message per invocation and re-sent the rest.
const (
	invocationTimeout  = 3 * time.Second // the feedback function's
	stageTimeout       = 6 * time.Second // fetch, llm, notify
	visibilityTimeout  = 15              // seconds; a crashed stage invocation's batch returns after this
	feedbackVisibility = 3               // seconds; the feedback queue's
	deliveryLease      = 3 * time.Second
	evidenceMargin     = 5 * time.Second
	sweepStuckAfter    = 60 * time.Second
	sweepEvery         = 6 * time.Second
	evidenceWindow     = 10 * time.Minute
	// forceWait bounds how long faults stay on past the linger for every
	// platform kind to fire once.
	forceWait = 2 * time.Minute
)

// Run runs one campaign and checks its invariants. The error is for a
// campaign that could not run; a failed invariant is in the report.
func Run(ctx context.Context, st Stack, c Config) (*Report, error) {
	c.defaults()
	start := time.Now()
	progress := func(format string, a ...any) {
		fmt.Fprintf(c.Progress, "chaos: %6.1fs  %s\n", time.Since(start).Seconds(), fmt.Sprintf(format, a...))
	}
	rng := rand.New(rand.NewPCG(c.Seed, 0x5eed))
	sum := sha256.Sum256([]byte(strconv.FormatUint(c.Seed, 10) + "/" + strconv.FormatInt(start.UnixNano(), 10)))
	run := "x" + hex.EncodeToString(sum[:4])
	planted := plantedSecrets(c.Seed)

	clean, err := devstack.NewClients(ctx, st.Endpoints)
	if err != nil {
		return nil, err
	}
	res, err := devstack.Provision(ctx, clean, "chaos-"+run)
	if err != nil {
		return nil, fmt.Errorf("provision: %w", err)
	}
	for q, vis := range map[string]int{res.Queues.Queue[job.StageFetch]: visibilityTimeout, res.Queues.Queue[job.StageLLM]: visibilityTimeout,
		res.Queues.Queue[job.StageNotify]: visibilityTimeout, res.FeedbackQueue: feedbackVisibility, res.ReplyQueue: visibilityTimeout} {
		if _, err := clean.SQS.SetQueueAttributes(ctx, &sqs.SetQueueAttributesInput{QueueUrl: aws.String(q),
			Attributes: map[string]string{"VisibilityTimeout": strconv.Itoa(vis)}}); err != nil {
			return nil, fmt.Errorf("queue visibility: %w", err)
		}
	}
	// The feedback queue dead-letters after feedbackMaxReceives receives
	// (10 deployed), scaled like its visibility timeout.
	fdlq, err := clean.SQS.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: aws.String(res.FeedbackDLQ),
		AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameQueueArn}})
	if err != nil {
		return nil, fmt.Errorf("feedback DLQ: %w", err)
	}
	feedbackDLQARN := fdlq.Attributes[string(sqstypes.QueueAttributeNameQueueArn)]
	redrive, _ := json.Marshal(map[string]string{"deadLetterTargetArn": feedbackDLQARN, "maxReceiveCount": strconv.Itoa(feedbackMaxReceives)})
	if _, err := clean.SQS.SetQueueAttributes(ctx, &sqs.SetQueueAttributesInput{QueueUrl: aws.String(res.FeedbackQueue),
		Attributes: map[string]string{"RedrivePolicy": string(redrive)}}); err != nil {
		return nil, fmt.Errorf("feedback redrive policy: %w", err)
	}
	cfg, err := config.FromEnv(func(string) string { return "" })
	if err != nil {
		return nil, err
	}
	cfg.Endpoints, cfg.SESStoreURL = st.Endpoints, st.SESURL
	cfg.WebhookSecret = planted.webhook
	cfg.GitHub.Token, cfg.GitLab.Token, cfg.LLM.OpenAI.APIKey = planted.github, planted.gitlab, planted.openai
	cfg.Notify.DeliveryLease, cfg.EvidenceMargin = deliveryLease, evidenceMargin
	// fauxqs's counters are exact at once (internal/drain).
	cfg.EvidenceCounterLag = time.Second
	cfg.Sweep.StuckAfter, cfg.Sweep.EvidenceWindow = sweepStuckAfter, evidenceWindow
	// Each review is one version: no burst to collapse, and the campaign
	// measures exactly once, not the wait (R-QUIET-3).
	cfg.LLM.CollapseWindow = 0
	// Reviewers reply to the critiques (replies.go): every email has its
	// reply address.
	cfg.InboundDomain = replyDomain
	// Evidence probes go to an address of this run, so the bridge knows
	// them for its own (ownMail).
	cfg.ProbeAddress = "probe." + run + "@example.com"
	// The code host's versions part (hostversions.go): pull requests on
	// a GitHub stand-in, their reviewers in the directory.
	gh := devstack.NewGitHubStandIn("chaos/"+run, sha(run, "base"))
	defer gh.Close()
	pulls := generateHostPulls(run, gh.Base, max(3, c.Jobs/20))
	cfg.GitHub.WebhookSecret, cfg.GitHub.APIURL = planted.githubWebhook, gh.URL()
	dir, _ := json.Marshal(map[string]map[string]string{"github": hostDirectory(pulls)})
	cfg.ReviewerDirectory = string(dir)
	// A stacked Gerrit change whose parent proposes settings skipping
	// its author (gerritstack.go).
	gst := newGerritStack(run)
	defer gst.g.Close()
	cfg.Gerrit = config.Gerrit{WebhookToken: gst.token, APIURL: gst.g.URL(), Username: "criticizer", Password: "http-password"}
	// The status on the change (codehost.go): a commit status on each
	// head (a token's GitHub), a review message on the Gerrit change,
	// some of their answers lost after the work.
	cfg.Notify.CodeHost = config.CodeHost{Status: true}
	loseCodeHost(gh, gst.g, len(pulls))
	// Every review's posts go to a webhook destination that loses
	// answers (hooks.go).
	hd, err := newHookDest(c.Seed, c.Rate)
	if err != nil {
		return nil, err
	}
	defer hd.Close()
	cfg.OutboundWebhooks, cfg.AllowPrivateWebhooks = hd.setting(), true
	res.Apply(&cfg)

	specs := generate(rng, run, c.Jobs, c.DupRate, c.PoisonRate, planted.token)
	// The versions part (versions.go), from its own source so that a
	// seed's other draws stay what they were.
	versions := generateVersions(rand.New(rand.NewPCG(c.Seed, 0x7e45)), run, max(3, c.Jobs/10), planted.token)
	dclk := &digestClock{}
	dailyReaders, err := chooseDaily(ctx, dynamo.NewPreferences(clean.DynamoDB, res.JobsTable, time.Now), specs)
	if err != nil {
		return nil, err
	}
	needles := newLeakScanner(specs, planted.all())
	for _, r := range gst.Recipients {
		needles.addrs[strings.ToLower(r)] = true
	}
	for _, p := range pulls {
		// The pull requests' readers are mailed from the directory: no
		// log line or dead letter may hold their addresses either.
		for _, r := range p.Recipients {
			needles.addrs[strings.ToLower(r)] = true
		}
	}
	logw := &scanWriter{scan: needles, next: c.Log}
	log := obs.NewLogger(logw, "info")

	inj := newInjector(rng.Uint64(), c.Rate)
	fi := fault.New()
	fi.Choose(inj.choose)
	evf := newEvidenceFaults(rng.Uint64(), c.Rate, jobOfDelivery(specs))
	jitterSeed := rng.Uint64()
	pf := newPlatformFaults(rng.Uint64(), c.Rate, jobOfDelivery(specs), inj.answerWasLost)
	// One jitter source per runner: a *rand.Rand is not safe for
	// concurrent use, and the options below serve every stage's runner
	// of a worker start. Runners are built one after another, so each
	// gets the same seed in every campaign with this Seed.
	var runners atomic.Uint64
	jitter := stage.Option(func(r *stage.Runner) { stage.WithRand(retry.NewRand(jitterSeed + runners.Add(1)))(r) })
	opts := func() devstack.FunctionOptions {
		return devstack.FunctionOptions{
			Pollers: c.Pollers, Timeout: invocationTimeout, SweepEvery: sweepEvery,
			Timeouts: map[string]time.Duration{string(job.StageFetch): stageTimeout, string(job.StageLLM): stageTimeout,
				string(job.StageNotify): stageTimeout},
			// SES's event publishing is not a worker: one bridge (below)
			// runs for the whole campaign.
			NoEventBridge: true,
			// The SDK's own debug lines (S3 checksum notes) go nowhere.
			Wire: wire.Options{
				// The daily digests' own clock (digest.go).
				DigestNow: dclk.now,
				AWS:       []awsclient.Option{fi.Option(), func(c *aws.Config) { c.Logger = logging.Nop{} }},
				Runner:    []stage.Option{jitter},
				Wrap: func(_ job.Stage, fn stage.Func) stage.Func {
					return func(ctx context.Context, m job.Message, attempt int) error {
						return fn(withScope(ctx, &scope{crashable: true, jobs: []job.ID{m.JobID}, fn: string(m.Stage)}), m, attempt)
					}
				},
			},
			// Calls made inside an invocation may crash it; they are
			// attributed to the jobs of the batch, then of the message.
			Crash: func(s job.Stage, h devstack.SQSHandler) devstack.SQSHandler {
				return func(ctx context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
					bodies := make([]string, len(ev.Records))
					for i, r := range ev.Records {
						bodies[i] = r.Body
					}
					return h(withScope(ctx, &scope{crashable: true, jobs: batchJobs(bodies), fn: string(s)}), ev)
				}
			},
			// The feedback function fails records (some until they are
			// dead-lettered), and its invocations may crash or be killed
			// like any other.
			Feedback: func(h devstack.SQSHandler) devstack.SQSHandler {
				h = pf.feedback(evf.feedback(h))
				return func(ctx context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
					return h(withScope(ctx, &scope{crashable: true, fn: "feedback"}), ev)
				}
			},
			// The reply function's calls are faulted like any other's,
			// and its invocations crash and are killed.
			Reply: func(h devstack.SQSHandler) devstack.SQSHandler {
				return func(ctx context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
					return h(withScope(ctx, &scope{crashable: true, fn: "reply"}), ev)
				}
			},
			// Feedback messages held in flight, to arrive late; kills
			// counted per function.
			Hold:   pf.hold,
			OnKill: pf.onKill,
		}
	}
	// The SES event bridge plays SES itself (configuration set → SNS), so
	// it is neither restarted nor faulted; the feedback function it feeds
	// is, like every worker.
	bctx, stopBridge := context.WithCancel(ctx)
	defer stopBridge()
	bridge := &devstack.SESEventBridge{Store: &devstack.SESEmulator{BaseURL: st.SESURL}, SNS: clean.SNS,
		TopicARN: res.EventsTopicARN, Log: log.With("bridge", "ses-events"), Deliver: newVersionVerdicts(versions, evf.deliver).deliver, Accept: ownMail(run)}
	go bridge.Run(bctx)
	go evf.run(bctx)
	pf.notice = bridge.PublishValidationNotice
	pctx, stopPlatform := context.WithCancel(ctx)
	defer stopPlatform()
	platformDone := make(chan struct{})
	go func() {
		defer close(platformDone)
		pf.run(pctx, clean.SQS, res.FeedbackDLQ, feedbackDLQARN, log)
	}()
	w := &workers{ctx: ctx, cfg: cfg, res: res, log: log, opts: opts}
	if err := w.start(); err != nil {
		return nil, err
	}
	defer w.stop()
	// SES's receiving, like its event publishing, is not a worker: one
	// SMTP listener for the campaign, on fault-free clients.
	inbound := &devstack.Inbound{Domain: replyDomain, S3: clean.S3, Bucket: res.PayloadBucket, Prefix: deploy.InboundPrefix,
		SNS: clean.SNS, TopicARN: res.InboundTopicARN, Log: log.With("smtp", "inbound")}
	if err := inbound.Start("127.0.0.1:0"); err != nil {
		return nil, err
	}
	defer inbound.Close()
	rp := newReplier(inbound, st.SESURL, run, rng.Uint64(), c.ReplyRate, log)
	rctx, cancelReplies := context.WithCancel(ctx)
	repliesDone := make(chan struct{})
	// Reviewers reply from the first email until the stack has drained:
	// stopReplies ends their last pass.
	stopReplies := func() { cancelReplies(); <-repliesDone }
	go func() {
		defer close(repliesDone)
		if c.ReplyRate > 0 {
			rp.loop(rctx)
		}
	}()
	defer stopReplies()
	srv := httptest.NewServer(intakeCrashes(http.HandlerFunc(w.serveHTTP)))
	defer srv.Close()

	rep := &Report{Seed: c.Seed, Jobs: c.Jobs, Rate: c.Rate, Concurrency: c.Concurrency, Run: run, DailyReaders: dailyReaders}
	snd := &sender{url: srv.URL, secret: []byte(planted.webhook), client: &http.Client{Timeout: 20 * time.Second},
		stats: &rep.intake, maxAttempts: 40}

	// Fault phase: webhooks posted, workers restarted, then a linger.
	inj.on.Store(true)
	evf.on.Store(true)
	pf.on.Store(true)
	progress("run %s: %d jobs, seed %d, rate %.3f, concurrency %d; faults on", run, c.Jobs, c.Seed, c.Rate, c.Concurrency)
	stopRestarts := w.restartEvery(c.RestartEvery)
	// The daily readers' hour comes once a tenth of their versions are
	// gathered into digests, faults on: the sweeper, through the faulty
	// clients, hands their digests to notify while the pipeline is busy
	// (digest.go).
	dg := &digestWatch{clean: clean, res: res, ses: st.SESURL, run: run, specs: specs}
	stopSweeps := w.digestsDueMidway(ctx, dclk, func() bool { return dg.gathered(ctx) }, func() {
		progress("digest clock a day on: %d daily readers' digests due under faults", dailyReaders)
	})
	accepted, errs := snd.postAll(ctx, specs, c.Concurrency, rng)
	progress("%d webhooks answered (%d deliveries, %d retries)", len(accepted), rep.intake.Posts.Load(), rep.intake.Retries.Load())
	// The versions part's jobs are drained with the others, and checked
	// apart (verifyVersions).
	drainSet := maps.Clone(accepted)
	var both sync.WaitGroup
	hostSet := map[job.ID]bool{}
	both.Go(func() { pushHosts(ctx, snd, gh, []byte(planted.githubWebhook), pulls, hostSet) })
	gerritSet := map[job.ID]bool{}
	both.Go(func() { gst.post(ctx, snd, gerritSet) })
	postVersions(ctx, snd, versions, drainSet)
	both.Wait()
	maps.Copy(drainSet, gerritSet)
	maps.Copy(drainSet, hostSet)
	progress("%d changes of two versions pushed in order, late or at once; %d pull requests pushed late, at once or forced", len(versions), len(pulls))
	for _, e := range errs {
		rep.IntakeErrors = append(rep.IntakeErrors, needles.redact(e.Error()))
	}
	select {
	case <-ctx.Done():
	case <-time.After(c.Linger):
	}
	// Faults stay on until every platform kind has fired, every
	// function was killed at its timeout (each at its first chance; a
	// short campaign can end its linger first) and a digest was sent.
	for until := time.Now().Add(forceWait); !(inj.stalled() && pf.forced() && dg.sent(ctx, dailyReaders)) && time.Now().Before(until) && ctx.Err() == nil; {
		time.Sleep(250 * time.Millisecond)
	}
	rep.Restarts = stopRestarts()
	stopSweeps()
	rep.faultsOff = time.Now()
	inj.on.Store(false)
	evf.on.Store(false)
	pf.on.Store(false)
	progress("faults off after %d worker restarts; draining (sweeper every %s, stuck after %s)", rep.Restarts, sweepEvery, sweepStuckAfter)

	// Drain: wait for every accepted job to be terminal, every stage and
	// feedback message processed (the feedback DLQ redriven until empty)
	// and every held-back event delivered.
	chk := &checker{clean: clean, res: res, ses: st.SESURL}
	deadline := time.Now().Add(c.Drain)
	digestsDue := false
	for {
		open, busy, err := chk.quiet(ctx, drainSet)
		fb, rb, dg := 0, 0, 0
		if err == nil && open == 0 && busy == 0 {
			fb, err = chk.feedbackBusy(ctx)
		}
		if err == nil {
			// A reply dead-lettered under the faults is redriven, as an
			// operator would (docs/operations.md, "Replies").
			if moved, _ := devstack.MoveMessages(ctx, clean.SQS, res.ReplyDLQ, res.ReplyQueue, 0, 100); moved > 0 {
				rep.RepliesRedriven += int(moved)
			}
			rb, err = replyBusy(ctx, clean, res)
		}
		if err == nil && open == 0 && busy == 0 && fb == 0 && rb == 0 && evf.drained() {
			if rctx.Err() == nil {
				// Every email is out: the reviewers' last replies go, then
				// the stack drains once more.
				rp.once(ctx)
				stopReplies()
				continue
			}
			if !digestsDue {
				// Every job is done: the digests of the versions that came
				// after the first jump come due too.
				digestsDue = true
				dclk.jump(48 * time.Hour)
				progress("drained; digest clock two days on: the remaining digests due")
				continue
			}
			if dg, err = chk.digestsBusy(ctx, specs, accepted); err == nil && dg == 0 {
				break
			}
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			progress("drain deadline: %d jobs not terminal, %d stage messages, %d feedback messages and %d replies queued, %d digests unsettled", open, busy, fb, rb, dg)
			rep.StagesBusy = busy
			rep.DrainTimedOut = fmt.Sprintf("%d jobs not terminal, %d stage messages, %d feedback messages and %d replies queued, %d digests unsettled after %s",
				open, busy, fb, rb, dg, c.Drain)
			break
		}
		time.Sleep(time.Second)
	}
	// Late duplicates (a resend after a lease, a redelivered batch) would
	// land now.
	time.Sleep(2 * time.Second)
	w.stop()
	stopPlatform()
	<-platformDone
	progress("drained; checking the SES store, DynamoDB and the DLQs")

	if err := chk.verify(ctx, rep, specs, accepted, inj, evf, pf, needles, rp); err != nil {
		return nil, err
	}
	if err := hd.verify(ctx, dynamo.NewPosts(clean.DynamoDB, res.DeliveriesTable, nil), chk.jobs().Get, drainSet, &rep.hooks); err != nil {
		return nil, err
	}
	emails, err := (&devstack.SESEmulator{BaseURL: st.SESURL}).Emails(ctx)
	if err != nil {
		return nil, fmt.Errorf("read the SES store: %w", err)
	}
	ended, err := endedVersions(ctx, chk.jobs().Get, versions, append(hostJobs(pulls), gst.jobID))
	if err != nil {
		return nil, err
	}
	rep.HostSkipped = skippedJobs(ctx, chk.jobs().Get, hostJobs(pulls))
	verifyCodeHost(ctx, chk.jobs().Get, gh, pulls, gst, rep)
	verifyVersions(versions, host{repo: gh.Repo, pulls: pulls, gerrit: gst}, emails, ended, rep)
	rep.LogLines, rep.LogLeaks, rep.DLQLeaks, rep.addrCount = logw.lines.Load(), needles.logHits(), needles.dlqHits(), len(needles.addrs)
	rep.Duration = time.Since(start)
	return rep, nil
}

// ownMail tells this run's mail from other stacks' in the shared SES
// emulator: every address the campaign mails (reviewers, daily readers,
// evidence probes) carries the run id. SES publishes events only for mail
// sent through the stack's configuration set; without this the bridge
// published the events of other packages' mail (`make test` runs them
// against the same emulator) onto the campaign's feedback queue, some
// after the workers had stopped, and the campaign reported them never
// processed.
func ownMail(run string) func(devstack.StoredEmail) bool {
	suffix := "." + strings.ToLower(run) + "@example.com"
	return func(e devstack.StoredEmail) bool {
		return slices.ContainsFunc(e.Destination.To, func(to string) bool { return strings.HasSuffix(strings.ToLower(to), suffix) })
	}
}

// workers are the function pollers (and the API handler of the same
// App); restart stops them — in-flight invocations finish — and starts
// new ones, as a deploy or a scaled-in Lambda fleet would.
type workers struct {
	ctx  context.Context
	cfg  config.Config
	res  devstack.Resources
	log  *slog.Logger
	opts func() devstack.FunctionOptions

	mu  sync.Mutex
	fns *devstack.Functions
	api atomic.Pointer[http.Handler]
}

func (w *workers) start() error {
	fns, err := devstack.StartFunctions(w.ctx, w.cfg, w.res, w.log, w.opts())
	if err != nil {
		return err
	}
	w.mu.Lock()
	w.fns = fns
	w.mu.Unlock()
	h := fns.API
	w.api.Store(&h)
	return nil
}

func (w *workers) stop() {
	w.mu.Lock()
	fns := w.fns
	w.fns = nil
	w.mu.Unlock()
	if fns != nil {
		fns.Stop()
	}
}

func (w *workers) serveHTTP(rw http.ResponseWriter, r *http.Request) {
	(*w.api.Load()).ServeHTTP(rw, r)
}

// restartEvery restarts the workers on an interval until the returned func
// is called; that func reports how many restarts were done.
func (w *workers) restartEvery(d time.Duration) func() int {
	done := make(chan struct{})
	var n atomic.Int64
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(d)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				w.stop()
				if err := w.start(); err != nil {
					w.log.Error("chaos: restart failed", "error", err)
					continue
				}
				n.Add(1)
			}
		}
	}()
	return func() int {
		close(done)
		wg.Wait()
		return int(n.Load())
	}
}

// intakeCrashes runs the intake function as API Gateway would: calls it
// makes may crash it (the crash fault), and a crashed invocation is
// answered 502 Bad Gateway; the sender retries it.
func intakeCrashes(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, "read body", http.StatusBadRequest)
			return
		}
		var ids []job.ID
		if r.Method == http.MethodPost {
			var p struct {
				ChangelistID  string `json:"changelist_id"`
				ReviewVersion int    `json:"review_version"`
			}
			if jsonUnmarshal(body, &p) == nil && p.ChangelistID != "" {
				ids = append(ids, job.NewID("generic", p.ChangelistID, p.ReviewVersion))
			}
		}
		r = r.WithContext(withScope(r.Context(), &scope{crashable: r.Method == http.MethodPost, jobs: ids}))
		r.Body = io.NopCloser(bytes.NewReader(body))
		rec := httptest.NewRecorder()
		done := make(chan struct{})
		finished := false
		go func() {
			defer close(done)
			next.ServeHTTP(rec, r)
			finished = true
		}()
		<-done
		if !finished {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusBadGateway)
			_, _ = w.Write([]byte(`{"message":"Internal Server Error"}`))
			return
		}
		for k, v := range rec.Header() {
			w.Header()[k] = v
		}
		w.WriteHeader(rec.Code)
		_, _ = w.Write(rec.Body.Bytes())
	})
}
