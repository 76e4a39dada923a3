package explore

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/criticizer/criticizer/internal/api"
	"github.com/criticizer/criticizer/internal/blob"
	"github.com/criticizer/criticizer/internal/critic"
	"github.com/criticizer/criticizer/internal/job"
	"github.com/criticizer/criticizer/internal/pipeline"
	"github.com/criticizer/criticizer/internal/retry"
	"github.com/criticizer/criticizer/internal/stage"
	"github.com/criticizer/criticizer/internal/store"
	"github.com/criticizer/criticizer/internal/webhook"
)

// webhookSecret signs the explored webhooks (the generic source's).
const webhookSecret = "explore-webhook-secret-0123456789"

// diffText is every explored review's inline diff.
const diffText = "diff --git a/x.go b/x.go\n--- a/x.go\n+++ b/x.go\n@@ -1 +1 @@\n-a\n+b\n"

// request is one webhook delivery a caller makes: a signed body under an
// Idempotency-Key, sent again (the same bytes, the same key) until it is
// answered with something other than a 5xx — R-INTAKE-5's contract. An
// invocation killed before it answers is, to the caller, a 5xx from API
// Gateway.
type request struct {
	label string // "k1.2": the key, and which delivery of it
	key   string
	body  []byte
	// proc is the intake invocation serving the current attempt.
	proc     *proc
	attempts int
	// answers are every answer the caller got, in order; answered once
	// one is not a 5xx.
	answers  []answer
	answered bool
	// sentAt and answeredAt are the world's step counts when its first
	// attempt was sent and when an answer other than a 5xx came: when
	// its head arrived, for the owed oracle (owed.go).
	sentAt, answeredAt int
}

// answer is one HTTP answer intake gave.
type answer struct {
	status   int
	body     string
	replayed bool
}

func (a answer) String() string {
	r := ""
	if a.replayed {
		r = " replayed"
	}
	return fmt.Sprintf("%d%s %s", a.status, r, a.body)
}

// maxAttempts bounds a caller's retries of one request (each retry
// follows a fault, so the fault budget bounds them first).
const maxAttempts = 3

// wireIntake builds the intake front: the real API handler routing
// POST /webhooks/generic to the real intake, and the real fetch and llm
// stages (through the real SQS batch runner, the offline critic, the
// inline diff in an in-memory S3) between it and notify.
func (w *world) wireIntake(gj jobs, log *slog.Logger) {
	q := stageQueue{w}
	bl := blobs{w}
	clock := func() time.Time { return w.now }
	w.intake = &api.Intake{Jobs: intakeJobs{gj}, Blobs: bl, Queue: q, Log: log, Now: clock,
		Status: api.NewStatusLinks("explore-status-key")}
	w.api = &api.Handler{Sources: map[string]api.Parser{"generic": webhook.Generic{Secret: []byte(webhookSecret)}},
		Intake: w.intake, Log: log}
	base := pipeline.Base{Jobs: gj, Blobs: bl, Queue: q, Log: log, Now: clock}
	fetch := &pipeline.Fetch{Base: base}
	llm := &pipeline.LLM{Base: base, Critic: critic.NewOffline()}
	// The stage runners record failures on the job, as deployed (notify's
	// runner here records none: its scenarios predate the intake front).
	w.fetch = stage.New(job.StageFetch, "fetch", fetch.Handle, q, failures{gj}, log)
	w.llm = stage.New(job.StageLLM, "llm", llm.Handle, q, failures{gj}, log)
	for _, r := range []*stage.Runner{w.fetch, w.llm} {
		r.Policy.Initial = 0
		r.Now = clock
	}
}

// addRequests adds the webhook deliveries that create js's job: one per
// entry of js.Posts, each the same signed body under its key.
func (w *world) addRequests(js JobSpec) {
	body, _ := json.Marshal(map[string]any{"changelist_id": js.Changelist, "review_version": js.Version,
		"title": "Change " + js.Changelist, "url": "https://review.example/" + js.Changelist, "author": "ana",
		"recipients": js.Recipients, "diff": diffText})
	seen := map[string]int{}
	for _, key := range js.Posts {
		seen[key]++
		w.requests = append(w.requests, &request{label: fmt.Sprintf("%s.%d", key, seen[key]), key: key, body: body})
	}
}

// postable lists the requests a caller may send now: never answered, no
// attempt in flight, attempts left.
func (w *world) postable() []*request {
	var out []*request
	for _, r := range w.requests {
		if !r.answered && (r.proc == nil || !w.live(r.proc)) && r.attempts < maxAttempts {
			out = append(out, r)
		}
	}
	return out
}

func (w *world) live(p *proc) bool {
	for _, q := range w.sched.procs {
		if q == p {
			return true
		}
	}
	return false
}

func (w *world) request(label string) *request {
	for _, r := range w.requests {
		if r.label == label {
			return r
		}
	}
	return nil
}

// post sends r to the API as a new intake invocation (API Gateway's
// proxy integration, payload format 2.0) and records the answer.
func (w *world) post(r *request) {
	r.attempts++
	if r.attempts == 1 {
		r.sentAt = w.steps
	}
	req := events.APIGatewayV2HTTPRequest{RawPath: "/webhooks/generic", Body: string(r.body),
		Headers: map[string]string{"idempotency-key": r.key, "content-type": "application/json",
			strings.ToLower(webhook.SignatureHeader): webhook.Sign([]byte(webhookSecret), r.body)}}
	req.RequestContext.HTTP.Method = http.MethodPost
	r.proc = w.sched.start("intake", func(ctx context.Context) {
		resp, err := w.api.Handle(ctx, req)
		if err != nil {
			resp = events.APIGatewayV2HTTPResponse{StatusCode: http.StatusBadGateway}
		}
		a := answer{status: resp.StatusCode, body: resp.Body, replayed: resp.Headers["Idempotent-Replayed"] == "true"}
		r.answers = append(r.answers, a)
		r.answered = a.status < 500
		if r.answered {
			r.answeredAt = w.steps
		}
	})
}

// intakeSafety checks intake's rules after every step:
//
//   - one job per idempotency key and per review version (R-INTAKE-1,
//     R-INTAKE-3): the jobs table's transaction creates each job once,
//     however the deliveries race;
//   - a key's answers are one answer (R-INTAKE-1): once a request is
//     accepted (202), every answer to its key is that answer byte for
//     byte, a replay marked so;
//   - persisted before enqueued (R-INTAKE-5, R-STAGE-7): a stage message
//     on a queue names a job that exists and has reached that stage.
func (w *world) intakeSafety(o Options) *Violation {
	if o.checks("intake") {
		for id, n := range w.created {
			if n > 1 {
				return &Violation{Rule: "intake", Message: fmt.Sprintf("job %s created %d times", id, n)}
			}
		}
		first := map[string]answer{}
		for _, r := range w.requests {
			for _, a := range r.answers {
				if a.status == http.StatusAccepted {
					if _, ok := first[r.key]; !ok {
						first[r.key] = a
					}
				}
			}
		}
		for _, r := range w.requests {
			f, ok := first[r.key]
			if !ok {
				continue
			}
			for _, a := range r.answers {
				if a.status < 500 && (a.status != f.status || a.body != f.body) {
					return &Violation{Rule: "intake", Message: fmt.Sprintf("key %s answered %s after %s", r.key, a, f)}
				}
			}
		}
	}
	if o.checks("persisted") {
		ctx := context.Background()
		for _, q := range []*queue{w.fetchQ, w.llmQ, w.notifyQ} {
			for _, m := range q.msgs {
				if m.deleted || m.stageMessage() == nil {
					continue // a dead-letter envelope redriven: its job reached the stage before
				}
				jm := *m.stageMessage()
				if jm.Task == job.TaskDigest {
					continue // a digest's message names its row, not a job (digest.go)
				}
				j, err := w.jobsMem.Get(ctx, jm.JobID)
				if err != nil {
					return &Violation{Rule: "persisted", Message: fmt.Sprintf("%s on the %s queue names job %s, not persisted", m.id, q.name, jm.JobID)}
				}
				if j.Stage.Before(jm.Stage) {
					return &Violation{Rule: "persisted", Message: fmt.Sprintf("%s on the %s queue, job %s still at %s", m.id, q.name, jm.JobID, j.Stage)}
				}
			}
		}
	}
	return nil
}

// intakeLiveness checks, once the world is quiet, that a job intake
// accepted was not lost on its way to notify (R-INTAKE-5: persisted
// before enqueued, and a retry finishes the work): its webhook was
// answered 202, and nothing in an intake scenario may legitimately fail
// fetch or llm for good (the diff is inline and valid, the critic
// offline), so a job dead-lettered there lost work intake accepted.
func (w *world) intakeLiveness(j job.Job) *Violation {
	if len(w.requests) == 0 || j.Status != job.StatusDeadLettered || !j.Stage.Before(job.StageNotify) {
		return nil
	}
	class := ""
	if j.DeadLetter != nil {
		class = j.DeadLetter.ErrorClass
	}
	return &Violation{Rule: "lost", Message: fmt.Sprintf("job %s, accepted by intake, dead-lettered at %s (%s)", j.ID, j.Stage, class)}
}

// intakeState writes the intake front's part of the state: the requests
// (with the invocation serving each: which key a live invocation sends
// decides what it does next, and its history of calls does not say), the
// jobs created and the idempotency keys recorded, the blobs.
func (w *world) intakeState(b *strings.Builder) {
	for _, r := range w.requests {
		serving := "-"
		if r.proc != nil && w.live(r.proc) {
			serving = r.proc.label
		}
		fmt.Fprintf(b, "req %s att=%d answered=%t by=%s", r.label, r.attempts, r.answered, serving)
		for _, a := range r.answers {
			fmt.Fprintf(b, " %d/%t/%x", a.status, a.replayed, sha256.Sum256([]byte(a.body)))
		}
		b.WriteString("\n")
	}
	for _, id := range w.jobIDs {
		if n := w.created[id]; n > 0 {
			fmt.Fprintf(b, "created %s %d\n", id, n)
		}
	}
	fmt.Fprintf(b, "keys %v\n", w.keys)
	for _, k := range sortedKeys(w.blobs) {
		fmt.Fprintf(b, "blob %s\n", k)
	}
}

// intakeJobs is what intake does with the jobs table, behind gates.
type intakeJobs struct{ j jobs }

var _ api.JobCreator = intakeJobs{}

// Create is the jobs table's transaction (store.Jobs.Create): the job,
// its idempotency record and the changelist head, or none of them. It
// counts the jobs it creates, for the one-job-per-key rule.
func (ij intakeJobs) Create(ctx context.Context, req store.CreateRequest) (store.CreateResult, error) {
	w := ij.j.w
	return call(w, ctx, wr("jobs.Create", string(req.Job.ID)), func() (store.CreateResult, error) {
		res, err := ij.j.s.Create(ctx, req)
		if err == nil && w.unconditionalCreates && res.Outcome != store.Created {
			// A broken variant: the conditions skipped.
			ij.j.s.Put(req.Job)
			res = store.CreateResult{Outcome: store.Created, Job: req.Job, ResponseStatus: req.ResponseStatus, ResponseBody: req.ResponseBody}
		}
		if err == nil && res.Outcome == store.Created {
			w.created[req.Job.ID]++
			w.keys = append(w.keys, req.IdempotencyKeySHA[:12])
		}
		return res, err
	})
}
func (ij intakeJobs) PutSourceRef(ctx context.Context, id job.ID, ref store.SourceRef) error {
	_, err := call(ij.j.w, ctx, wr("jobs.PutSourceRef", string(id)), func() (struct{}, error) { return noval(ij.j.s.PutSourceRef(ctx, id, ref)) })
	return err
}
func (ij intakeJobs) Get(ctx context.Context, id job.ID) (job.Job, error) { return ij.j.Get(ctx, id) }
func (ij intakeJobs) LatestVersion(ctx context.Context, source, changelistID string) (int, job.ID, error) {
	v, id, err := call2(ij.j.w, ctx, rd("jobs.LatestVersion", job.ChangelistKey(source, changelistID)), func() (int, job.ID, error) {
		return ij.j.s.LatestVersion(ctx, source, changelistID)
	})
	return v, id, err
}

// blobs is S3 (blob.Store) in memory, behind gates: content-addressed,
// a missing object NOT_FOUND (permanent) as blob.Store answers.
type blobs struct{ w *world }

func (b blobs) Put(ctx context.Context, prefix string, data []byte) (string, string, error) {
	sum := sha256.Sum256(data)
	sha := hex.EncodeToString(sum[:])
	ref := prefix + "/" + sha
	_, err := call(b.w, ctx, wr("blob.Put", ref), func() (struct{}, error) {
		b.w.blobs[ref] = append([]byte(nil), data...)
		return struct{}{}, nil
	})
	if err != nil {
		return "", "", err
	}
	return ref, sha, nil
}

func (b blobs) Get(ctx context.Context, ref string, limit int64) ([]byte, error) {
	return call(b.w, ctx, rd("blob.Get", ref), func() ([]byte, error) {
		d, ok := b.w.blobs[ref]
		if !ok {
			return nil, retry.Permanent(retry.NotFound, fmt.Errorf("s3 get %s: %w", ref, blob.ErrNotFound))
		}
		if int64(len(d)) > limit {
			return nil, fmt.Errorf("s3 get %s: larger than %d bytes", ref, limit)
		}
		return d, nil
	})
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// failures is the jobs table's RecordFailure behind a gate, for the fetch
// and llm runners (store.Jobs.RecordFailure's writes on the in-memory
// jobs: the failure, its attempt, the status, never over a succeeded
// job; a retry keeps a job held for a person as it is).
type failures struct{ j jobs }

var _ stage.FailureRecorder = failures{}

func (f failures) RecordFailure(ctx context.Context, id job.ID, fl job.Failure, status job.Status) (time.Time, error) {
	w := f.j.w
	return call(w, ctx, wr("jobs.RecordFailure", string(id)), func() (time.Time, error) {
		j, err := f.j.s.Get(ctx, id)
		if err != nil {
			return time.Time{}, fmt.Errorf("record failure on job %s: %w", id, store.ErrConflict)
		}
		if j.Status == job.StatusSucceeded {
			return time.Time{}, fmt.Errorf("record failure on job %s: %w", id, store.ErrConflict)
		}
		if status != job.StatusRetryableFailed || j.Status != job.StatusNeedsIntervention {
			j.Status = status
		}
		if j.Attempts == nil {
			j.Attempts = job.Attempts{}
		}
		j.Attempts[fl.Stage] = fl.Attempt
		j.LastError, j.UpdatedAt = &fl, w.now
		if status == job.StatusDeadLettered {
			j.DeadLetter = &fl
		}
		f.j.s.Put(j)
		return fl.At, nil
	})
}
