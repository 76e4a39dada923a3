package notify_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/criticizer/criticizer/internal/notify"
	"github.com/criticizer/criticizer/internal/prefs"

	"github.com/criticizer/criticizer/internal/critic"
	"github.com/criticizer/criticizer/internal/critic/critictest"
	"github.com/criticizer/criticizer/internal/delivery"
	"github.com/criticizer/criticizer/internal/job"
	"github.com/criticizer/criticizer/internal/mail"
	"github.com/criticizer/criticizer/internal/pipeline"
	"github.com/criticizer/criticizer/internal/store/memstore"
	"github.com/criticizer/criticizer/internal/store/storetest"
)

// subjects records each send's recipient and subject.
type subjects struct {
	mu   sync.Mutex
	sent []string // "to: subject"
}

func (s *subjects) Send(_ context.Context, _ string, to string, m delivery.Message) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	// The subject is the same for every version (R-THREAD-1): the
	// version is the text body's first line's.
	v := m.Subject + " v" + versionInText.FindStringSubmatch(m.Text + "\nversion 0\n")[1]
	s.sent = append(s.sent, to+": "+v)
	return "ses-" + to + "-" + v, nil
}

// versionInText finds the version a rendered email's text names first.
var versionInText = regexp.MustCompile(`version ([0-9]+)\n`)

func (s *subjects) all() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.sent...)
}

// quietWorld is one changelist's jobs table, deliveries and notifier on the
// in-memory store, with the quiet rules on.
type quietWorld struct {
	t          *testing.T
	now        time.Time
	jobs       *memstore.Jobs
	deliveries *memstore.Deliveries
	snd        *subjects
	n          *notify.Notify
	cl         string
	gates      gateOpts
}

func newQuietWorld(t *testing.T, cl string) *quietWorld {
	w := &quietWorld{t: t, now: time.Now().UTC(), cl: cl, snd: &subjects{}}
	clock := func() time.Time { return w.now }
	w.jobs, w.deliveries = memstore.NewJobs(clock), memstore.NewDeliveries(clock)
	r, err := mail.NewRenderer()
	if err != nil {
		t.Fatal(err)
	}
	w.n = &notify.Notify{
		Base:       pipeline.Base{Jobs: w.jobs, Queue: nopQueue{}, Log: slog.New(slog.NewJSONHandler(io.Discard, nil)), Now: clock},
		Deliveries: w.deliveries, Renderer: r, Sender: w.snd, Evidence: memstore.NewEvidence(clock), ConfigurationSet: "set",
		Lease: time.Minute, Margin: 2 * time.Minute, MarkTimeout: 5 * time.Second, SendTimeout: 5 * time.Second,
	}
	w.gates = gateOpts{quiet: &notify.QuietConfig{Versions: w.jobs}}
	setGates(t, w.n, w.gates)
	return w
}

// accept creates version v (intake: the job and the changelist head) with
// diff content diffSHA for recipients, its critique c already stored.
func (w *quietWorld) accept(v int, diffSHA string, c critic.Critique, recipients ...string) job.Job {
	w.t.Helper()
	j := storetest.NewJob(w.cl, v)
	j.Recipients, j.DiffSHA256 = recipients, diffSHA
	storetest.Create(w.t, w.jobs, j, "key-"+w.cl+"-"+string(rune('0'+v)), "body")
	return w.atNotify(j, c)
}

// atNotify puts j at the notify stage with critique c (what llm leaves).
func (w *quietWorld) atNotify(j job.Job, c critic.Critique) job.Job {
	w.t.Helper()
	b, _ := json.Marshal(c)
	j.Stage, j.Status, j.Critique = job.StageNotify, job.StatusInProgress, b
	w.jobs.Put(j)
	return j
}

func (w *quietWorld) notify(j job.Job) {
	w.t.Helper()
	if err := w.n.Handle(context.Background(), job.Message{JobID: j.ID, Stage: job.StageNotify}, 1); err != nil {
		w.t.Fatalf("notify v%d: %v", j.ReviewVersion, err)
	}
	if got, _ := w.jobs.Get(context.Background(), j.ID); got.Status != job.StatusSucceeded {
		w.t.Errorf("v%d: job %s, want succeeded (quiet rows are settled)", j.ReviewVersion, got.Status)
	}
}

// waits runs notify for j and checks that it left the job at notify,
// in progress, its rows waiting for a newer version (R-QUIET-3).
func (w *quietWorld) waits(j job.Job) {
	w.t.Helper()
	if err := w.n.Handle(context.Background(), job.Message{JobID: j.ID, Stage: job.StageNotify}, 1); err != nil {
		w.t.Fatalf("notify v%d: %v", j.ReviewVersion, err)
	}
	if got, _ := w.jobs.Get(context.Background(), j.ID); got.Status != job.StatusInProgress || got.Stage != job.StageNotify {
		w.t.Errorf("v%d: job %s at %s, want in_progress at notify (waiting for a newer version)", j.ReviewVersion, got.Status, got.Stage)
	}
}

func (w *quietWorld) row(rcpt string, v int) delivery.Row {
	w.t.Helper()
	r, err := w.deliveries.Get(context.Background(), delivery.ID(job.ChangelistKey("generic", w.cl), rcpt, v))
	if err != nil {
		w.t.Fatal(err)
	}
	return r
}

func offlineCritique(findings ...critic.Finding) critic.Critique {
	return critic.Critique{Critic: "offline/v1", Summary: "s", Findings: append([]critic.Finding{}, findings...)}
}

// delayQueue records the delay each stage message was sent with.
type delayQueue struct {
	mu     sync.Mutex
	delays map[job.ID]time.Duration
}

func (q *delayQueue) Enqueue(_ context.Context, m job.Message) error {
	return q.EnqueueAfter(context.Background(), m, 0)
}

func (q *delayQueue) EnqueueAfter(_ context.Context, m job.Message, d time.Duration) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.delays[m.JobID] = d
	return nil
}

// Three pushes inside the collapse window: the llm stage enqueues each
// version's notify to run the window after the version was accepted (a
// delayed message, no wait in the function). The older versions' rows
// wait, unclaimed, while v3 has not reached its reviewers; once it has,
// they are superseded — never sent, their rows say by which version —
// and one email goes to each reviewer, about the last. A row another
// notifier holds in `sending` is never relabelled.
// Rules: R-QUIET-3, R-STAGE-6.
func TestQuiet_ThreePushesInTheWindow_OneEmailAboutTheLast(t *testing.T) {
	ctx := context.Background()
	w := newQuietWorld(t, "cl-burst")
	const window = 90 * time.Second
	q := &delayQueue{delays: map[job.ID]time.Duration{}}
	llm := &pipeline.LLM{Base: pipeline.Base{Jobs: w.jobs, Blobs: oneBlob(critictest.SampleDiff), Queue: q, Log: w.n.Log, Now: w.n.Now},
		Critic: critic.NewOffline(), Collapse: window}
	var versions []job.Job
	for v := 1; v <= 3; v++ {
		j := storetest.NewJob(w.cl, v)
		j.Recipients, j.DiffSHA256, j.DiffRef = []string{"ann@example.com", "bob@example.com"}, "sha-"+string(rune('0'+v)), "diffs/x"
		j.CreatedAt = w.now
		storetest.Create(t, w.jobs, j, "key-burst-"+string(rune('0'+v)), "body")
		j.Stage = job.StageLLM
		w.jobs.Put(j)
		w.now = w.now.Add(20 * time.Second) // the review takes 20 s; the next push comes then
		if err := llm.Handle(ctx, job.Message{JobID: j.ID, Stage: job.StageLLM}, 1); err != nil {
			t.Fatal(err)
		}
		if d := q.delays[j.ID]; d != window-20*time.Second {
			t.Errorf("v%d: notify enqueued with delay %s, want %s (the window from acceptance)", v, d, window-20*time.Second)
		}
		got, _ := w.jobs.Get(ctx, j.ID)
		versions = append(versions, got)
	}
	// Another notifier already claimed bob's v2 row: it keeps its course.
	_, _, _ = w.n.Deliveries.Ensure(ctx, delivery.Row{ID: delivery.ID(job.ChangelistKey("generic", w.cl), "bob@example.com", 2),
		JobID: versions[1].ID, ChangelistKey: job.ChangelistKey("generic", w.cl), Recipient: "bob@example.com", ReviewVersion: 2,
		Status: delivery.StatusPending, CreatedAt: w.now, UpdatedAt: w.now})
	if _, err := w.deliveries.Claim(ctx, delivery.ID(job.ChangelistKey("generic", w.cl), "bob@example.com", 2), "other", time.Hour); err != nil {
		t.Fatal(err)
	}

	w.now = w.now.Add(window)
	w.waits(versions[0])
	for _, rcpt := range []string{"ann@example.com", "bob@example.com"} {
		if r := w.row(rcpt, 1); r.Status != delivery.StatusPending || r.Attempts != 0 {
			t.Errorf("%s v1 before v3 reached them: %s after %d attempts, want pending, never claimed", rcpt, r.Status, r.Attempts)
		}
	}
	_ = w.n.Handle(ctx, job.Message{JobID: versions[1].ID, Stage: job.StageNotify}, 1) // bob's row is another's
	w.notify(versions[2])
	// The older versions look again (their delayed message): v3 reached
	// both reviewers.
	w.notify(versions[0])
	_ = w.n.Handle(ctx, job.Message{JobID: versions[1].ID, Stage: job.StageNotify}, 1)

	sent := w.snd.all()
	if len(sent) != 2 || !strings.Contains(sent[0], " v3") || !strings.Contains(sent[1], " v3") {
		t.Fatalf("sent %q, want one email to each reviewer, about v3", sent)
	}
	for _, c := range []struct {
		rcpt string
		v    int
	}{{"ann@example.com", 1}, {"bob@example.com", 1}, {"ann@example.com", 2}} {
		if r := w.row(c.rcpt, c.v); r.Status != delivery.StatusSuperseded || r.SkipReason != "v3" || r.Attempts != 0 {
			t.Errorf("%s v%d: %s %q after %d attempts, want superseded by v3, never claimed", c.rcpt, c.v, r.Status, r.SkipReason, r.Attempts)
		}
	}
	if r := w.row("bob@example.com", 2); r.Status != delivery.StatusSending || r.ClaimToken != "other" {
		t.Errorf("bob v2 (claimed by another notifier): %s, want left in sending", r.Status)
	}
}

// The latest version dead-lettered: it supersedes nothing, the older
// version's email goes out.
// Rules: R-QUIET-3.
func TestQuiet_DeadLetteredLatestSupersedesNothing(t *testing.T) {
	// A head that ended without a review mails no one either: refused by
	// a budget (R-BUDGET-1), with nobody to read it (R-BUDGET-2), or
	// skipped by the repository's settings (R-REPO-4).
	for _, c := range []struct {
		name    string
		status  job.Status
		skipped string
	}{
		{"dead-lettered", job.StatusDeadLettered, ""},
		{"budget-exceeded", job.StatusBudgetExceeded, ""},
		{"no-recipients", job.StatusNoRecipients, ""},
		{"skipped", job.StatusSucceeded, "label skip-review"},
	} {
		t.Run(c.name, func(t *testing.T) {
			w := newQuietWorld(t, "cl-"+c.name)
			v1 := w.accept(1, "sha-1", offlineCritique(), "ann@example.com")
			v2 := storetest.NewJob(w.cl, 2)
			storetest.Create(t, w.jobs, v2, "key-"+c.name+"-2", "body")
			v2.Status, v2.Skipped = c.status, c.skipped
			w.jobs.Put(v2)
			w.notify(v1)
			if sent := w.snd.all(); len(sent) != 1 || !strings.Contains(sent[0], " v1") {
				t.Fatalf("sent %q, want v1's email", sent)
			}
		})
	}
}

// The same diff under a new commit mails nobody who was mailed that diff:
// the row says why (skipped_same_diff, naming the version mailed); a
// reviewer added with the new version is mailed it; a v3 that repeats
// v2's diff mails no one either; and with CRITICIZER_MAIL_SAME_DIFF it
// is mailed again.
// Rules: R-QUIET-1.
func TestQuiet_SameDiffUnderANewSHA_NoNewEmail(t *testing.T) {
	w := newQuietWorld(t, "cl-same")
	w.notify(w.accept(1, "sha-A", offlineCritique(), "ann@example.com"))
	w.notify(w.accept(2, "sha-A", offlineCritique(), "ann@example.com", "new@example.com"))
	if r := w.row("ann@example.com", 2); r.Status != delivery.StatusSkippedSameDiff || r.SkipReason != "same diff as v1" || r.Attempts != 0 {
		t.Errorf("ann v2: %s %q, want skipped_same_diff as v1", r.Status, r.SkipReason)
	}
	if sent := w.snd.all(); len(sent) != 2 || !strings.HasPrefix(sent[1], "new@example.com: ") {
		t.Fatalf("sent %q, want ann's v1 and the newcomer's v2 only", sent)
	}
	w.notify(w.accept(3, "sha-B", offlineCritique(), "ann@example.com"))
	w.notify(w.accept(4, "sha-B", offlineCritique(), "ann@example.com"))
	if r := w.row("ann@example.com", 4); r.Status != delivery.StatusSkippedSameDiff || r.SkipReason != "same diff as v3" {
		t.Errorf("ann v4 (v3's diff): %s %q, want skipped_same_diff as v3", r.Status, r.SkipReason)
	}
	// Back to the first diff: ann had it (v1), and v2's skip counts too.
	w.notify(w.accept(5, "sha-A", offlineCritique(), "ann@example.com"))
	if r := w.row("ann@example.com", 5); r.Status != delivery.StatusSkippedSameDiff || r.SkipReason != "same diff as v2" {
		t.Errorf("ann v5 (v1's diff): %s %q, want skipped_same_diff", r.Status, r.SkipReason)
	}
	if sent := w.snd.all(); len(sent) != 3 {
		t.Fatalf("sent %q, want 3 emails (v1, the newcomer's v2, v3)", sent)
	}
	w.gates.quiet.MailSameDiff = true
	setGates(t, w.n, w.gates)
	w.notify(w.accept(6, "sha-A", offlineCritique(), "ann@example.com"))
	if sent := w.snd.all(); len(sent) != 4 {
		t.Fatalf("sent %q with CRITICIZER_MAIL_SAME_DIFF, want v6 mailed", sent)
	}
}

// A rerun that finds nothing new — compared with a version the recipient
// was mailed, no new finding and none resolved — mails nobody by
// default, and mails once more with CRITICIZER_MAIL_UNCHANGED_RERUNS. A
// rerun with a new finding is mailed; so is a recipient who was not
// mailed the version compared with; so is an operator's rerun, explicit,
// whose findings are those it repeats.
// Rules: R-QUIET-2, R-RERUN-2.
func TestQuiet_RerunWithNothingNew_NoEmailUnlessConfigured(t *testing.T) {
	f := critic.Finding{File: "a.go", Line: 3, Severity: critic.SeverityWarning, Rule: "todo-added", Message: "TODO", Anchor: "x"}
	nothingNew := offlineCritique(f)
	nothingNew.Changes = &critic.Changes{Since: 1, Reviewed: 1, Unchanged: 1}
	w := newQuietWorld(t, "cl-rerun")
	v1 := w.accept(1, "sha-1", offlineCritique(f), "ann@example.com")
	w.notify(v1)
	w.notify(w.accept(2, "sha-2", nothingNew, "ann@example.com", "new@example.com"))
	if r := w.row("ann@example.com", 2); r.Status != delivery.StatusSkippedNothingNew || r.SkipReason != "nothing new since v1" {
		t.Errorf("ann v2: %s %q, want skipped_nothing_new since v1", r.Status, r.SkipReason)
	}
	if sent := w.snd.all(); len(sent) != 2 || !strings.HasPrefix(sent[1], "new@example.com: ") {
		t.Fatalf("sent %q, want v1 and the newcomer's v2", sent)
	}
	// An operator's rerun of v2 (a copy, the same findings, the same
	// diff): explicit, so mailed all the same (R-RERUN-2).
	rerun := storetest.NewJob(w.cl, 3)
	rerun.Recipients, rerun.DiffSHA256, rerun.RerunOf, rerun.Explicit = []string{"new@example.com"}, "sha-2", job.NewID("generic", w.cl, 2), true
	storetest.Create(t, w.jobs, rerun, "key-rerun-3", "body")
	w.notify(w.atNotify(rerun, offlineCritique(f)))
	if r := w.row("new@example.com", 3); r.Status != delivery.StatusSent {
		t.Errorf("operator's rerun: %s %q, want sent", r.Status, r.SkipReason)
	}
	// Something new: mailed.
	news := offlineCritique(f, critic.Finding{File: "b.go", Line: 1, Severity: critic.SeverityError, Rule: "debug-print", Message: "print", Anchor: "y", New: true})
	news.Changes = &critic.Changes{Since: 3, Reviewed: 2, New: 1, Unchanged: 1}
	w.notify(w.accept(4, "sha-4", news, "ann@example.com"))
	// Configured to mail unchanged reruns: nothing new, mailed anyway.
	w.gates.quiet.MailUnchangedReruns = true
	setGates(t, w.n, w.gates)
	again := offlineCritique(f)
	again.Changes = &critic.Changes{Since: 4, Reviewed: 1, Unchanged: 1}
	w.notify(w.accept(5, "sha-5", again, "ann@example.com"))
	sent := w.snd.all()
	if len(sent) != 5 || !strings.Contains(sent[2], " v3") || !strings.Contains(sent[3], " v4") || !strings.Contains(sent[4], " v5") {
		t.Fatalf("sent %q, want the operator's v3, v4 (new finding) and v5 (configured) mailed", sent)
	}
}

// A reader on daily delivery is not put in a digest a version a newer one
// may still reach: the row waits, unclaimed, as any reader's does; once
// the newer version went into the digest, the older is superseded, and
// the digest holds the newer alone.
// Rules: R-QUIET-3, R-DIGEST-2, R-OUTBOX-11.
func TestQuiet_DailyReader_OlderWaitsForTheNewer_NotDigested(t *testing.T) {
	w := newQuietWorld(t, "cl-daily-wait")
	rcpts := memstore.NewPreferences()
	save(t, rcpts, "ann@example.com", func(p *prefs.Preferences) { p.Mode = prefs.Daily })
	w.n.Recipients = rcpts
	w.gates.digests = w.deliveries
	setGates(t, w.n, w.gates)
	v1 := w.accept(1, "sha-1", offlineCritique(), "ann@example.com")
	v2 := w.accept(2, "sha-2", offlineCritique(), "ann@example.com")
	w.waits(v1)
	if r := w.row("ann@example.com", 1); r.Status != delivery.StatusPending || r.Digest != "" {
		t.Fatalf("v1 while v2 may reach ann: %s into %q, want pending, in no digest", r.Status, r.Digest)
	}
	w.notify(v2)
	r2 := w.row("ann@example.com", 2)
	if r2.Status != delivery.StatusDigested {
		t.Fatalf("v2: %s, want digested", r2.Status)
	}
	w.notify(v1)
	if r := w.row("ann@example.com", 1); r.Status != delivery.StatusSuperseded {
		t.Fatalf("v1 after v2 went into the digest: %s, want superseded", r.Status)
	}
	d, err := w.deliveries.Get(context.Background(), r2.Digest)
	if err != nil || len(d.Entries) != 1 || d.Entries[0] != r2.ID {
		t.Fatalf("digest %v entries %v, want v2's row alone", err, d.Entries)
	}
	if sent := w.snd.all(); len(sent) != 0 {
		t.Fatalf("sent %q, want nothing at once", sent)
	}
}
