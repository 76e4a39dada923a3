package e2e

import (
	"context"
	"encoding/json"
	"github.com/criticizer/criticizer/internal/awsclient"
	"github.com/criticizer/criticizer/internal/wire"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/criticizer/criticizer/internal/api"
	"github.com/criticizer/criticizer/internal/deadletter"
	"github.com/criticizer/criticizer/internal/devstack"
	"github.com/criticizer/criticizer/internal/fault"
	"github.com/criticizer/criticizer/internal/job"
	"github.com/criticizer/criticizer/internal/testenv"
)

// flakyDiffServer serves a diff after failing the first n requests with
// status; n < 0 fails forever until healed.
type flakyDiffServer struct {
	*httptest.Server
	failures atomic.Int64
	status   int
	healed   atomic.Bool
	calls    atomic.Int64
}

func newFlakyDiffServer(t *testing.T, n int, status int, diff string) *flakyDiffServer {
	f := &flakyDiffServer{status: status}
	f.failures.Store(int64(n))
	f.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.calls.Add(1)
		if !f.healed.Load() && (f.failures.Load() < 0 || f.failures.Add(-1) >= 0) {
			http.Error(w, "upstream says no to "+r.URL.RawQuery, f.status)
			return
		}
		_, _ = w.Write([]byte(diff))
	}))
	t.Cleanup(f.Close)
	return f
}

// Secrets and PII planted in requests; none may appear in a dead letter.
const (
	plantedToken = "ghp_" + "R3allyS3cretT0kenValue0123456789abcd"
	plantedEmail = "secret.reviewer@example.com"
)

func diffURLBody(t *testing.T, cl, diffURL string, recipients ...string) []byte {
	var m map[string]any
	_ = json.Unmarshal(sample(t, cl, 1, recipients...), &m)
	delete(m, "diff")
	m["diff_url"] = diffURL
	b, _ := json.Marshal(m)
	return b
}

// dlqBodies reads (without consuming) every message in a DLQ.
func dlqBodies(t *testing.T, s *stack, st job.Stage) []string {
	t.Helper()
	var bodies []string
	url := s.res.Queues.DLQ[st]
	for range 3 {
		out, err := s.env.Clients.SQS.ReceiveMessage(context.Background(), &sqs.ReceiveMessageInput{
			QueueUrl: aws.String(url), MaxNumberOfMessages: 10, VisibilityTimeout: 2})
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range out.Messages {
			bodies = append(bodies, aws.ToString(m.Body))
		}
		if len(out.Messages) == 0 {
			break
		}
	}
	time.Sleep(2100 * time.Millisecond) // let them become visible again
	return bodies
}

func (s *stack) waitJob(id job.ID, d time.Duration, want job.Status) api.JobView {
	s.t.Helper()
	var v api.JobView
	eventually(s.t, d, "job "+string(id)+" "+string(want), func() bool {
		v = api.JobView{}
		s.getJSON(s.jobLink(id), &v)
		return v.Status == want
	})
	return v
}

func accept(t *testing.T, s *stack, key string, body []byte) job.ID {
	t.Helper()
	resp, b := s.post(key, body)
	if resp.StatusCode != http.StatusAccepted {
		t.Fatalf("post: %d %s", resp.StatusCode, b)
	}
	var acc api.Accepted
	_ = json.Unmarshal(b, &acc)
	return acc.JobID
}

// R-STAGE-2, R-STAGE-3: a retryable failure is retried with backoff within the
// stage's budget of 5 attempts ("inclusive of first attempt"); four failures
// then a success is no dead letter and exactly one email. The faults are
// SES throttling, injected at the HTTP client below the SDK (SES's client
// does not retry, so each throttle reaches the stage).
func TestNotify_ThrottledFourTimesThenSucceeds_NoDeadLetter(t *testing.T) {
	t.Parallel()
	inj := fault.New(fault.Rule{Service: "SESv2", Operation: "SendEmail", Kind: fault.Throttle, Times: 4})
	s := startStack(t, devstack.FunctionOptions{Wire: wire.Options{AWS: []awsclient.Option{inj.Option()}}})
	cl := testenv.Prefix(t)
	id := accept(t, s, "k-"+cl, sample(t, cl, 1, "solo@example.com"))

	v := s.waitJob(id, 60*time.Second, job.StatusSucceeded)
	if got := inj.Fired("SESv2", "SendEmail"); got != 4 {
		t.Fatalf("injected %d throttles, want 4", got)
	}
	if v.Attempts[job.StageNotify] != 5 || v.Attempts[job.StageFetch] != 1 || v.Attempts[job.StageLLM] != 1 {
		t.Errorf("attempts %v: want notify 5 and the other stages untouched (budgets are per stage)", v.Attempts)
	}
	if n := len(emailsFor(t, s.env.SES, cl)); n != 1 {
		t.Fatalf("%d emails, want exactly 1", n)
	}
	for _, st := range job.Stages() {
		if b := dlqBodies(t, s, st); len(b) != 0 {
			t.Fatalf("%s DLQ holds %d messages, want none", st, len(b))
		}
	}
}

// R-STAGE-3: "If a stage exhausts budget, processing transitions to
// dead-letter with stage-specific metadata." R-STAGE-4: the envelope carries
// error_class, last_stack, sanitized_context, stage, first/last failure, and
// "MUST exclude secrets, access tokens, API keys ... and raw PII". R-STAGE-5: the
// operator's replay resumes at the failed stage and completes.
func TestFetch_FailsFiveTimes_OneEnvelope_ReplayCompletes(t *testing.T) {
	t.Parallel()
	s := startStack(t, devstack.FunctionOptions{})
	diffSrv := newFlakyDiffServer(t, 5, http.StatusServiceUnavailable, sampleDiff(t))
	cl := testenv.Prefix(t)
	recipients := []string{plantedEmail, "two@example.org"}
	id := accept(t, s, "k-"+cl, diffURLBody(t, cl, diffSrv.URL+"/diff?access_token="+plantedToken, recipients...))

	v := s.waitJob(id, 60*time.Second, job.StatusDeadLettered)
	if v.DeadLetter == nil || v.DeadLetter.Stage != job.StageFetch || v.DeadLetter.ErrorClass != "UPSTREAM_5XX" || v.DeadLetter.EnvelopeID == "" {
		t.Fatalf("job dead_letter = %+v, want fetch/UPSTREAM_5XX with an envelope id", v.DeadLetter)
	}
	bodies := dlqBodies(t, s, job.StageFetch)
	if len(bodies) != 1 {
		t.Fatalf("fetch DLQ holds %d messages, want exactly 1", len(bodies))
	}
	env, ok, err := deadletter.Decode([]byte(bodies[0]))
	if err != nil || !ok {
		t.Fatalf("DLQ message is not an envelope: %v %s", err, bodies[0])
	}
	if env.ErrorClass != "UPSTREAM_5XX" || env.Stage != "fetch" || env.Attempts != 5 || !env.Retryable ||
		env.LastStack == "" || env.FirstFailureAt.IsZero() || env.LastFailureAt.Before(env.FirstFailureAt) ||
		env.JobID != string(id) || env.Original.Body == "" || env.SanitizedContext["upstream_status"] != "503" ||
		env.SchemaVersion != deadletter.SchemaVersion || env.ID != v.DeadLetter.EnvelopeID {
		t.Fatalf("envelope lacks required fields: %+v", env)
	}
	for _, secret := range []string{plantedToken, plantedEmail, "two@example.org"} {
		if strings.Contains(bodies[0], secret) {
			t.Fatalf("the envelope contains %q", secret)
		}
		if strings.Contains(s.logText(), secret) {
			t.Fatalf("a log line contains %q", secret)
		}
	}
	if n := len(dlqBodies(t, s, job.StageLLM)) + len(dlqBodies(t, s, job.StageNotify)); n != 0 {
		t.Fatalf("other stages' DLQs hold %d messages", n)
	}

	// Triage and replay with the operator CLI.
	out, err := s.cli("dlq", "list")
	if err != nil || !strings.Contains(out, "UPSTREAM_5XX") || !strings.Contains(out, env.ID) {
		t.Fatalf("dlq list: %v\n%s", err, out)
	}
	if out, err := s.cli("dlq", "replay", env.ID); err == nil || !strings.Contains(out, "--note") {
		t.Fatalf("replay without a note must be refused: %v\n%s", err, out)
	}
	out, err = s.cli("dlq", "replay", env.ID, "--note", "INC-42: upstream recovered")
	if err != nil || !strings.Contains(out, "at stage fetch") {
		t.Fatalf("dlq replay: %v\n%s", err, out)
	}
	s.waitJob(id, 30*time.Second, job.StatusSucceeded)
	got := perRecipient(emailsFor(t, s.env.SES, cl))
	if got[plantedEmail] != 1 || got["two@example.org"] != 1 {
		t.Fatalf("after replay: emails %v, want one each", got)
	}
	if b := dlqBodies(t, s, job.StageFetch); len(b) != 0 {
		t.Fatalf("the replayed item is still in the DLQ")
	}
	rec, err := s.fns.Jobs.DeadLetter(context.Background(), env.ID)
	if err != nil || rec.State != "replayed" || !strings.Contains(string(rec.Envelope), "INC-42") {
		t.Fatalf("audit record %+v %v: want the note recorded", rec, err)
	}
}

// R-STAGE-1: non-retryable failures "fail immediately to dead-letter
// queue"; R-STAGE-5: "If replay fails again with the same non-retryable
// error_class, item MUST be re-queued to dead-letter and escalated".
func TestFetch_NotFound_DeadLetteredOnFirstAttempt_ReplayEscalates(t *testing.T) {
	t.Parallel()
	s := startStack(t, devstack.FunctionOptions{})
	diffSrv := newFlakyDiffServer(t, -1, http.StatusNotFound, sampleDiff(t))
	cl := testenv.Prefix(t)
	id := accept(t, s, "k-"+cl, diffURLBody(t, cl, diffSrv.URL+"/diff"))

	v := s.waitJob(id, 30*time.Second, job.StatusDeadLettered)
	if v.DeadLetter.ErrorClass != "NOT_FOUND" || v.Attempts[job.StageFetch] != 1 || diffSrv.calls.Load() != 1 {
		t.Fatalf("want NOT_FOUND on attempt 1 with one upstream call; job %+v, calls %d", v, diffSrv.calls.Load())
	}
	first := dlqBodies(t, s, job.StageFetch)
	if len(first) != 1 {
		t.Fatalf("fetch DLQ holds %d, want 1", len(first))
	}
	env1, _, _ := deadletter.Decode([]byte(first[0]))

	// Replay without fixing anything: same class, non-retryable: escalated.
	if out, err := s.cli("dlq", "replay", env1.ID, "--note", "retry to confirm"); err != nil {
		t.Fatalf("replay: %v\n%s", err, out)
	}
	var env2 deadletter.Envelope
	eventually(t, 30*time.Second, "re-dead-lettered and escalated", func() bool {
		b := dlqBodies(t, s, job.StageFetch)
		if len(b) != 1 {
			return false
		}
		env2, _, _ = deadletter.Decode([]byte(b[0]))
		return env2.Escalated
	})
	if env2.ID != env1.ID || env2.Replays != 1 || len(env2.Notes) < 2 {
		t.Fatalf("escalated envelope %+v: want the same id, replays 1, the replay and escalation notes", env2)
	}
	if !strings.Contains(s.logText(), `"Escalations":1`) {
		t.Error("no Escalations metric was emitted")
	}
	out, err := s.cli("dlq", "list", "--stage", "fetch")
	if err != nil || !strings.Contains(out, "NOT_FOUND") {
		t.Fatalf("dlq list: %v\n%s", err, out)
	}

	// Fix the data, replay from the start: one email per recipient.
	diffSrv.healed.Store(true)
	if out, err := s.cli("dlq", "replay", env1.ID, "--from-start", "--note", "diff republished"); err != nil {
		t.Fatalf("replay: %v\n%s", err, out)
	}
	s.waitJob(id, 30*time.Second, job.StatusSucceeded)
	got := perRecipient(emailsFor(t, s.env.SES, cl))
	if len(got) != 2 || got["reviewer1@example.com"] != 1 || got["reviewer2@example.com"] != 1 {
		t.Fatalf("emails %v, want one per recipient", got)
	}
}

func sampleDiff(t *testing.T) string {
	var m map[string]any
	_ = json.Unmarshal(sample(t, "x", 1), &m)
	return m["diff"].(string)
}

// A message the queue's redrive policy moved to the DLQ (a crash loop: no
// envelope) is triaged and replayed like any other (issue: "messages it
// moves (without an envelope) are handled too"): what an invocation
// killed on its last receive leaves.
// Rules: R-INTAKE-5, R-STAGE-10.
func TestRedrivenRawMessage_ListedAndReplayed(t *testing.T) {
	t.Parallel()
	// Every attempt the SDK makes (it retries SendMessage) is throttled.
	inj := fault.New(fault.Rule{Service: "SQS", Operation: "SendMessage", Kind: fault.Throttle, Times: sdkAttempts})
	s := startStack(t, devstack.FunctionOptions{Wire: wire.Options{AWS: []awsclient.Option{inj.Option()}}})
	cl := testenv.Prefix(t)
	// Intake persists the job, then cannot enqueue it: 503, retry with the key.
	resp, b := s.post("k-"+cl, sample(t, cl, 1, "raw@example.com"))
	if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") == "" {
		t.Fatalf("intake with SQS down: %d %s, want 503 with Retry-After", resp.StatusCode, b)
	}
	id := job.NewID("generic", cl, 1)
	// The message that crash-looped, as the redrive policy moves it: raw.
	raw, _ := json.Marshal(job.Message{JobID: id, Stage: job.StageFetch})
	if _, err := s.env.Clients.SQS.SendMessage(context.Background(), &sqs.SendMessageInput{
		QueueUrl: aws.String(s.res.Queues.DLQ[job.StageFetch]), MessageBody: aws.String(string(raw))}); err != nil {
		t.Fatal(err)
	}
	out, err := s.cli("dlq", "list")
	if err != nil || !strings.Contains(out, "UNKNOWN") || !strings.Contains(out, "raw-") {
		t.Fatalf("dlq list: %v\n%s", err, out)
	}
	rawID := out[strings.Index(out, "raw-"):]
	rawID = strings.Fields(rawID)[0]
	if out, err := s.cli("dlq", "replay", rawID, "--note", "worker fixed"); err != nil {
		t.Fatalf("replay: %v\n%s", err, out)
	}
	s.waitJob(id, 30*time.Second, job.StatusSucceeded)
	if n := len(emailsFor(t, s.env.SES, cl)); n != 1 {
		t.Fatalf("%d emails, want 1", n)
	}
}
