package notify_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/criticizer/criticizer/internal/notify"

	"github.com/criticizer/criticizer/internal/critic"
	"github.com/criticizer/criticizer/internal/delivery"
	"github.com/criticizer/criticizer/internal/job"
	"github.com/criticizer/criticizer/internal/mail"
	"github.com/criticizer/criticizer/internal/pipeline"
	"github.com/criticizer/criticizer/internal/prefs"
	"github.com/criticizer/criticizer/internal/retry"
	"github.com/criticizer/criticizer/internal/store"
	"github.com/criticizer/criticizer/internal/store/memstore"
	"github.com/criticizer/criticizer/internal/store/storetest"
	"github.com/criticizer/criticizer/internal/sweep"
	"github.com/criticizer/criticizer/internal/unsubscribe"
	"github.com/criticizer/criticizer/internal/vote"
)

// digestBox keeps every message sent, by recipient, with its delivery id;
// lose makes the provider accept a recipient's next send and the answer
// never come back.
type digestBox struct {
	mu   sync.Mutex
	got  map[string][]delivery.Message
	ids  map[string][]string
	lose map[string]bool
}

func (b *digestBox) Send(_ context.Context, id, to string, m delivery.Message) (string, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.got[to] = append(b.got[to], m)
	b.ids[to] = append(b.ids[to], id)
	if b.lose[to] {
		delete(b.lose, to)
		return "", fmt.Errorf("read tcp: connection reset by peer")
	}
	return fmt.Sprintf("ses-%s-%d", id, len(b.got[to])), nil
}

func (b *digestBox) of(to string) []delivery.Message {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]delivery.Message(nil), b.got[to]...)
}

// queueRecorder keeps what is enqueued.
type queueRecorder struct {
	mu   sync.Mutex
	msgs []job.Message
}

func (q *queueRecorder) Enqueue(_ context.Context, m job.Message) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.msgs = append(q.msgs, m)
	return nil
}

func (q *queueRecorder) take() []job.Message {
	q.mu.Lock()
	defer q.mu.Unlock()
	out := q.msgs
	q.msgs = nil
	return out
}

// digestWorld is the notifier and the sweeper on the in-memory store,
// with a clock of their own and a digest clock the test moves.
type digestWorld struct {
	t          *testing.T
	now, day   time.Time
	jobs       *memstore.Jobs
	rows       *memstore.Deliveries
	rcpts      *memstore.Preferences
	marks      *memstore.Dismissals
	box        *digestBox
	q          *queueRecorder
	n          *notify.Notify
	sw         *sweep.Sweeper
	ev         *memstore.Evidence
	versionsOf map[string]int
	// gates are the notifier's gates beyond the standing and reply
	// gates; a test that changes them lists them again (setGates).
	gates gateOpts
}

func newDigestWorld(t *testing.T) *digestWorld {
	w := &digestWorld{t: t, now: time.Date(2026, 6, 10, 10, 0, 0, 0, time.UTC), box: &digestBox{got: map[string][]delivery.Message{},
		ids: map[string][]string{}, lose: map[string]bool{}}, q: &queueRecorder{}, versionsOf: map[string]int{}}
	w.day = w.now
	clock := func() time.Time { return w.now }
	w.jobs, w.rows, w.rcpts, w.marks, w.ev = memstore.NewJobs(clock), memstore.NewDeliveries(clock), memstore.NewPreferences(), memstore.NewDismissals(), memstore.NewEvidence(clock)
	r, err := mail.NewRenderer()
	if err != nil {
		t.Fatal(err)
	}
	signer, err := unsubscribe.NewSigner("0123456789abcdef0123456789abcdef-digest")
	if err != nil {
		t.Fatal(err)
	}
	votes, err := vote.NewSigner("0123456789abcdef0123456789abcdef-votes")
	if err != nil {
		t.Fatal(err)
	}
	ps, err := prefs.NewSigner("0123456789abcdef0123456789abcdef-digest")
	if err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.NewJSONHandler(io.Discard, nil))
	w.n = &notify.Notify{
		Base:       pipeline.Base{Jobs: w.jobs, Queue: w.q, Log: log, Now: clock},
		Deliveries: w.rows, Renderer: r, Sender: w.box, Evidence: w.ev, ConfigurationSet: "set", Recipients: w.rcpts,
		Lease: time.Minute, Margin: 2 * time.Minute, MarkTimeout: 5 * time.Second, SendTimeout: 5 * time.Second,
		Signer: signer, PublicURL: "https://api.example.com", Votes: votes, Dismissals: w.marks, Prefs: ps,
	}
	w.gates = gateOpts{quiet: &notify.QuietConfig{Versions: w.jobs, MailSameDiff: true, MailUnchangedReruns: true},
		digests: w.rows, clock: func() time.Time { return w.day }}
	setGates(t, w.n, w.gates)
	w.sw = &sweep.Sweeper{Jobs: w.jobs, Deliveries: w.rows, Queue: w.q, Log: log, Now: clock, StuckAfter: 10 * time.Minute,
		EvidenceWindow: 10 * time.Minute, Margin: 2 * time.Minute, Digests: w.rows, DigestClock: func() time.Time { return w.day }}
	return w
}

// choose saves a reader's delivery mode (digest at 9 UTC).
func (w *digestWorld) choose(rcpt string, mode prefs.Mode, muted ...string) {
	w.t.Helper()
	id := unsubscribe.RecipientID(rcpt)
	p, _ := w.rcpts.Preferences(context.Background(), id)
	p.Mode, p.DigestHour, p.TimeZone, p.Muted = mode, 9, "UTC", muted
	if _, err := w.rcpts.SavePreferences(context.Background(), id, p); err != nil {
		w.t.Fatal(err)
	}
}

// review has notify mail the next version of cl (its critique c) to the
// recipients, and returns the job.
func (w *digestWorld) review(cl string, c critic.Critique, recipients ...string) job.Job {
	w.t.Helper()
	w.now = w.now.Add(time.Minute)
	w.versionsOf[cl]++
	v := w.versionsOf[cl]
	j := storetest.NewJob(cl, v)
	j.Title, j.URL, j.Recipients, j.Explicit = "Change "+cl, "https://review.example/"+cl, recipients, true
	storetest.Create(w.t, w.jobs, j, fmt.Sprintf("key-%s-%d", cl, v), "body")
	b, _ := json.Marshal(c)
	j.Stage, j.Status, j.Critique = job.StageNotify, job.StatusInProgress, b
	w.jobs.Put(j)
	if err := w.n.Handle(context.Background(), job.Message{JobID: j.ID, Stage: job.StageNotify}, 1); err != nil {
		w.t.Fatalf("notify %s v%d: %v", cl, v, err)
	}
	if got, _ := w.jobs.Get(context.Background(), j.ID); got.Status != job.StatusSucceeded {
		w.t.Fatalf("job %s v%d is %s, want succeeded", cl, v, got.Status)
	}
	return j
}

// sweep runs the sweeper, then notify on every message it enqueued, and
// returns how many digest messages there were.
func (w *digestWorld) sweep() int {
	w.t.Helper()
	if _, err := w.sw.Run(context.Background()); err != nil {
		w.t.Fatal(err)
	}
	n := 0
	for _, m := range w.q.take() {
		if m.Task == job.TaskDigest {
			n++
		}
		if err := w.n.Handle(context.Background(), m, 1); err != nil {
			w.t.Fatalf("notify %s: %v", m.JobID, err)
		}
	}
	return n
}

func (w *digestWorld) row(cl, rcpt string, v int) delivery.Row {
	w.t.Helper()
	r, err := w.rows.Get(context.Background(), delivery.ID(job.ChangelistKey("generic", cl), rcpt, v))
	if err != nil {
		w.t.Fatal(err)
	}
	return r
}

func crit(fs ...critic.Finding) critic.Critique {
	return critic.Critique{Critic: "offline/v1", Summary: fmt.Sprintf("%d findings.", len(fs)), Files: 1, Findings: fs}
}

var (
	warnA  = critic.Finding{File: "a.go", Line: 3, Severity: critic.SeverityWarning, Rule: "debug-print", Message: "fmt.Println left in.", Anchor: "println", Place: "place-println"}
	errorB = critic.Finding{File: "b.go", Line: 9, Severity: critic.SeverityError, Rule: "secret-added", Message: "A secret was added.", Anchor: "secret", Place: "place-secret"}
)

// A reader on daily delivery gets nothing at once and, when their hour
// comes, one digest of the day: every changelist once, at its newest
// version, never the email of each; a sweep or a message more sends no
// second; a version after the digest was closed goes into the next day's.
// A reader on instant delivery of the same reviews gets each at once.
// Rules: R-DIGEST-1, R-DIGEST-2, R-DIGEST-3, R-DIGEST-4, R-OUTBOX-8.
func TestDigest_DailyReader_OneDigestOfTheDay_NothingAtOnce_Offline(t *testing.T) {
	w := newDigestWorld(t)
	ctx := context.Background()
	const daily, instant = "dana@example.com", "ivan@example.com"
	w.choose(daily, prefs.Daily)
	w.review("cl-a", crit(warnA), daily, instant)
	w.review("cl-b", crit(errorB), daily, instant)
	w.review("cl-a", crit(warnA, errorB), daily, instant)
	w.review("cl-c", crit(), daily, instant)
	if n := len(w.box.of(daily)); n != 0 {
		t.Fatalf("the daily reader got %d emails during the day, want none", n)
	}
	if n := len(w.box.of(instant)); n != 4 {
		t.Fatalf("the instant reader got %d emails, want 4", n)
	}
	first := w.row("cl-a", daily, 1)
	if first.Status != delivery.StatusDigested || first.Period != "2026-06-11" {
		t.Fatalf("the daily reader's row: %s into %q (%s); want digested into 2026-06-11's digest (9:00 passed today)", first.Status, first.Digest, first.Period)
	}
	g, err := w.rows.Get(ctx, first.Digest)
	if err != nil || g.Status != delivery.StatusOpen || len(g.Entries) != 4 {
		t.Fatalf("digest %s: %v %s %d entries; want open with 4", first.Digest, err, g.Status, len(g.Entries))
	}
	// Not due: the sweeper hands nothing over.
	if n := w.sweep(); n != 0 || len(w.box.of(daily)) != 0 {
		t.Fatalf("before the hour: %d digest messages", n)
	}
	// The reader's hour comes.
	w.day = time.Date(2026, 6, 11, 9, 0, 30, 0, time.UTC)
	if n := w.sweep(); n != 1 {
		t.Fatalf("at the hour: %d digest messages, want 1", n)
	}
	got := w.box.of(daily)
	if len(got) != 1 {
		t.Fatalf("the daily reader has %d emails, want one digest", len(got))
	}
	m := got[0]
	if m.TemplateVersion != mail.DigestVersion || m.Subject != "[Criticizer] Daily digest for 2026-06-11: 3 changelists" || m.Severity != "error" {
		t.Errorf("digest: %q %q severity %s", m.TemplateVersion, m.Subject, m.Severity)
	}
	for _, want := range []string{"== cl-a version 2 ==", "== cl-b version 1 ==", "== cl-c version 1 ==", "newest of 2 versions", "Unsubscribe from all"} {
		if !strings.Contains(m.Text, want) {
			t.Errorf("digest text lacks %q:\n%s", want, m.Text)
		}
	}
	if strings.Contains(m.Text, "cl-a version 1 ==") {
		t.Error("the digest shows cl-a's older version too")
	}
	// Its footer links the reader's own preference page (R-PREF-2), for
	// no one repository: a digest is about many.
	link := regexp.MustCompile(`https://api\.example\.com/preferences/([A-Za-z0-9_.~-]+)`).FindStringSubmatch(m.Text)
	if link == nil {
		t.Fatalf("the digest's footer has no preference link:\n%s", m.Text)
	}
	if c, err := w.n.Prefs.Verify(link[1], w.now); err != nil || c.RecipientID != unsubscribe.RecipientID(daily) || c.Repository != "" {
		t.Errorf("the digest's preference link: %+v %v, want %s's page, no repository", c, err, daily)
	}
	if g, _ = w.rows.Get(ctx, first.Digest); g.Status != delivery.StatusSent || g.NotificationID == "" {
		t.Errorf("digest row after the send: %s %q", g.Status, g.NotificationID)
	}
	// Sweeps and a stray message change nothing.
	w.now = w.now.Add(time.Hour)
	w.sweep()
	if err := w.n.Handle(ctx, delivery.DigestMessage(first.Digest), 1); err != nil {
		t.Fatal(err)
	}
	if n := len(w.box.of(daily)); n != 1 {
		t.Fatalf("%d emails after more sweeps, want 1", n)
	}
	// A version after the close goes into the next day's digest.
	w.review("cl-b", crit(errorB), daily)
	late := w.row("cl-b", daily, 2)
	if late.Status != delivery.StatusDigested || late.Digest == first.Digest || late.Period != "2026-06-12" {
		t.Fatalf("a version after the close: %s into %s (%s), want the next day's digest", late.Status, late.Digest, late.Period)
	}
	if n := len(w.box.of(daily)); n != 1 {
		t.Fatalf("%d emails, want still 1", n)
	}
}

// A reader on mixed delivery gets a critique with an error at once — as
// they are mailed it: an error they marked wrong does not count — and the
// rest in their digest; a changelist a newer version of which reached
// them at once, or in a repository they muted since, is left out of it;
// a digest with nothing left to show is not sent.
// Rules: R-DIGEST-5, R-DIGEST-4, R-VOTE-3.
func TestDigest_MixedReader_ErrorsAtOnceRestInTheDigest_Offline(t *testing.T) {
	w := newDigestWorld(t)
	ctx := context.Background()
	const mixed = "mia@example.com"
	w.choose(mixed, prefs.Mixed)
	w.review("cl-err", crit(errorB, warnA), mixed)
	w.review("cl-warn", crit(warnA), mixed)
	w.review("cl-newer", crit(warnA), mixed)
	w.review("cl-newer", crit(errorB), mixed) // reaches her at once
	w.review("acme/muted#1", crit(warnA), mixed)
	// She marked cl-dis's error wrong: as she is mailed it, v2 has none.
	w.review("cl-dis", crit(warnA), mixed)
	if _, err := w.marks.Mark(ctx, job.ChangelistKey("generic", "cl-dis"), unsubscribe.RecipientID(mixed), critic.SameKey(errorB), vote.Wrong, w.now); err != nil {
		t.Fatal(err)
	}
	w.review("cl-dis", crit(warnA, errorB), mixed)
	at := w.box.of(mixed)
	if len(at) != 2 || !strings.Contains(at[0].Text, "cl-err version 1") || !strings.Contains(at[1].Text, "cl-newer version 2") {
		t.Fatalf("at once: %d emails, want cl-err v1 and cl-newer v2", len(at))
	}
	for _, v := range []struct {
		cl string
		v  int
	}{{"cl-warn", 1}, {"cl-newer", 1}, {"acme/muted#1", 1}, {"cl-dis", 1}, {"cl-dis", 2}} {
		if r := w.row(v.cl, mixed, v.v); r.Status != delivery.StatusDigested {
			t.Errorf("%s v%d: %s, want digested", v.cl, v.v, r.Status)
		}
	}
	w.choose(mixed, prefs.Mixed, unsubscribe.Repository("generic", "acme/muted#1"))
	w.day = time.Date(2026, 6, 11, 9, 1, 0, 0, time.UTC)
	w.sweep()
	got := w.box.of(mixed)
	if len(got) != 3 {
		t.Fatalf("%d emails, want the two at once and one digest", len(got))
	}
	d := got[2]
	if !strings.Contains(d.Text, "== cl-warn version 1 ==") || !strings.Contains(d.Text, "== cl-dis version 2 ==") ||
		!strings.Contains(d.Text, "1 finding you marked wrong is hidden") {
		t.Errorf("digest lacks cl-warn, or cl-dis v2 with its hidden finding:\n%s", d.Text)
	}
	for _, out := range []string{"cl-newer", "acme/muted#1", "cl-err", "A secret was added"} {
		if strings.Contains(d.Text, out) {
			t.Errorf("digest shows %q", out)
		}
	}
	// A day with nothing left to show sends nothing: its one change is in
	// a repository she mutes before her hour.
	w.review("acme/later#1", crit(warnA), mixed)
	w.choose(mixed, prefs.Mixed, unsubscribe.Repository("generic", "acme/muted#1"), unsubscribe.Repository("generic", "acme/later#1"))
	w.day = w.day.Add(24 * time.Hour)
	w.sweep()
	if n := len(w.box.of(mixed)); n != 3 {
		t.Fatalf("%d emails after a day of muted changes only, want still 3", n)
	}
	r := w.row("acme/later#1", mixed, 1)
	if g, _ := w.rows.Get(ctx, r.Digest); g.Status != delivery.StatusSkippedEmpty || !strings.Contains(g.SkipReason, "1 muted") {
		t.Errorf("an empty digest: %s %q, want skipped_empty saying why", g.Status, g.SkipReason)
	}
}

// A version's row settled into a digest that closed before its entry got
// in (the notifier stopped between its two writes) moves to the next
// digest, and is mailed there, once: never in the closed one, never lost.
// Rules: R-DIGEST-2.
func TestDigest_ClosedBeforeTheEntryGotIn_NextDigest_Offline(t *testing.T) {
	w := newDigestWorld(t)
	ctx := context.Background()
	const daily = "dana@example.com"
	w.choose(daily, prefs.Daily)
	w.review("cl-a", crit(warnA), daily)
	first := w.row("cl-a", daily, 1)
	// cl-b's notify settles its row into the same digest, then stops.
	j := storetest.NewJob("cl-b", 1)
	j.Recipients, j.Explicit = []string{daily}, true
	storetest.Create(t, w.jobs, j, "key-cl-b", "body")
	b, _ := json.Marshal(crit(errorB))
	j.Stage, j.Status, j.Critique = job.StageNotify, job.StatusInProgress, b
	w.jobs.Put(j)
	stop := &stopAfterSettle{Deliveries: w.rows}
	w.gates.digests = stop
	setGates(t, w.n, w.gates)
	if err := w.n.Handle(ctx, job.Message{JobID: j.ID, Stage: job.StageNotify}, 1); err == nil {
		t.Fatal("the notifier was to stop after settling the row")
	}
	w.gates.digests = w.rows
	setGates(t, w.n, w.gates)
	b1 := w.row("cl-b", daily, 1)
	if b1.Status != delivery.StatusDigested || b1.Digest != first.Digest {
		t.Fatalf("cl-b's row: %s into %s, want digested into %s", b1.Status, b1.Digest, first.Digest)
	}
	// The digest comes due and goes out without it.
	w.day = time.Date(2026, 6, 11, 9, 0, 30, 0, time.UTC)
	w.sweep()
	got := w.box.of(daily)
	if len(got) != 1 || strings.Contains(got[0].Text, "cl-b") {
		t.Fatalf("%d emails; the first digest must hold cl-a only", len(got))
	}
	// cl-b's notify runs again: into the next digest.
	if err := w.n.Handle(ctx, job.Message{JobID: j.ID, Stage: job.StageNotify}, 2); err != nil {
		t.Fatal(err)
	}
	b1 = w.row("cl-b", daily, 1)
	next, _ := w.rows.Get(ctx, b1.Digest)
	if b1.Digest == first.Digest || !next.HasEntry(b1.ID) || next.Status != delivery.StatusOpen {
		t.Fatalf("cl-b's row names %s (%s, holds it: %t); want the next, open digest", b1.Digest, next.Status, next.HasEntry(b1.ID))
	}
	if job, _ := w.jobs.Get(ctx, j.ID); job.Status != "succeeded" {
		t.Errorf("cl-b's job: %s", job.Status)
	}
	w.day = w.day.Add(24 * time.Hour)
	w.sweep()
	got = w.box.of(daily)
	if len(got) != 2 || !strings.Contains(got[1].Text, "== cl-b version 1 ==") {
		t.Fatalf("%d emails; the second digest must hold cl-b", len(got))
	}
}

// stopAfterSettle fails the first AddToDigest: a notifier that stopped
// between settling a row and adding its entry.
type stopAfterSettle struct {
	*memstore.Deliveries
	stopped bool
}

func (s *stopAfterSettle) AddToDigest(ctx context.Context, d delivery.Row, entry string, max int) (delivery.Row, error) {
	if !s.stopped {
		s.stopped = true
		return delivery.Row{}, fmt.Errorf("the invocation ended")
	}
	return s.Deliveries.AddToDigest(ctx, d, entry, max)
}

var _ store.Digests = (*stopAfterSettle)(nil)

// A digest whose send's answer was lost is a delivery row held for
// provider evidence like any other: not resent, and settled by its Send
// event; one email.
// Rules: R-DIGEST-1, R-OUTBOX-6.
func TestDigest_LostAnswer_SettledFromEvidence_OneEmail_Offline(t *testing.T) {
	w := newDigestWorld(t)
	ctx := context.Background()
	const daily = "dana@example.com"
	w.choose(daily, prefs.Daily)
	w.review("cl-a", crit(warnA), daily)
	id := w.row("cl-a", daily, 1).Digest
	w.box.lose[daily] = true
	w.day = time.Date(2026, 6, 11, 9, 0, 30, 0, time.UTC)
	if _, err := w.sw.Run(ctx); err != nil {
		t.Fatal(err)
	}
	msgs := w.q.take()
	if len(msgs) != 1 {
		t.Fatalf("%d messages", len(msgs))
	}
	if err := w.n.Handle(ctx, msgs[0], 1); err == nil {
		t.Fatal("a lost answer must hold the digest for evidence")
	}
	w.now = w.now.Add(3 * time.Minute)
	for range 3 {
		_ = w.n.Handle(ctx, msgs[0], 2)
		w.sweep()
	}
	if n := len(w.box.of(daily)); n != 1 {
		t.Fatalf("%d sends of the digest before any evidence, want 1", n)
	}
	if _, _, err := w.rows.RecordEvent(ctx, id, store.Event{Type: "Send", MessageID: "ses-lost", At: w.now}); err != nil {
		t.Fatal(err)
	}
	if err := w.n.Handle(ctx, msgs[0], 3); err != nil {
		t.Fatal(err)
	}
	g, _ := w.rows.Get(ctx, id)
	if g.Status != delivery.StatusSent || g.NotificationID != "ses-lost" || len(w.box.of(daily)) != 1 {
		t.Fatalf("digest %s %q after %d sends, want sent from its evidence, one email", g.Status, g.NotificationID, len(w.box.of(daily)))
	}
}

// full is a send rate with no room: a notifier gives up before its claim.
type full struct{}

func (full) Wait(context.Context) error {
	return retry.Transient(retry.RateLimited, fmt.Errorf("no slot in the send rate"))
}

// A digest closed but never claimed — its notify message lost after the
// close — is handed to notify again once the sweeper's stuck threshold
// has passed, and sent once; one still open is handed over at every
// sweep until it is closed.
// Rules: R-DIGEST-3.
func TestDigest_ClosedNeverClaimed_SweeperHandsItBack_Offline(t *testing.T) {
	w := newDigestWorld(t)
	ctx := context.Background()
	const daily = "dana@example.com"
	w.choose(daily, prefs.Daily)
	w.review("cl-a", crit(warnA), daily)
	id := w.row("cl-a", daily, 1).Digest
	w.day = time.Date(2026, 6, 11, 9, 0, 30, 0, time.UTC)
	for range 2 { // open: handed over at each sweep, the message lost
		if _, err := w.sw.Run(ctx); err != nil {
			t.Fatal(err)
		}
		if msgs := w.q.take(); len(msgs) != 1 || msgs[0] != delivery.DigestMessage(id) {
			t.Fatalf("sweep of an open due digest: %v", msgs)
		}
	}
	w.n.Pacer = full{}
	if err := w.n.Handle(ctx, delivery.DigestMessage(id), 1); err == nil {
		t.Fatal("want the send rate's refusal")
	}
	w.n.Pacer = nil
	if g, _ := w.rows.Get(ctx, id); g.Status != delivery.StatusPending || g.Attempts != 0 {
		t.Fatalf("digest after the refusal: %s, %d attempts; want closed, never claimed", g.Status, g.Attempts)
	}
	// The message is lost. Within the threshold nothing is handed over.
	if n := w.sweep(); n != 0 {
		t.Fatalf("%d digest messages within the stuck threshold", n)
	}
	w.now = w.now.Add(11 * time.Minute)
	if n := w.sweep(); n != 1 {
		t.Fatalf("%d digest messages past the stuck threshold, want 1", n)
	}
	if got := w.box.of(daily); len(got) != 1 {
		t.Fatalf("%d emails, want the digest once", len(got))
	}
	w.now = w.now.Add(11 * time.Minute)
	if n := w.sweep(); n != 0 || len(w.box.of(daily)) != 1 {
		t.Fatalf("after the send: %d digest messages, %d emails", n, len(w.box.of(daily)))
	}
}

// A digest whose reader left every email before it closed, or whose
// domain the operator no longer allows, is settled without a send.
// Rules: R-DIGEST-4, R-RECIPIENT-1.
func TestDigest_ReaderLeftOrDomainRefused_NotSent_Offline(t *testing.T) {
	for _, c := range []struct {
		name string
		then func(w *digestWorld, rcpt string)
		want delivery.Status
	}{
		{"left every email", func(w *digestWorld, rcpt string) {
			if err := w.rcpts.UnsubscribeAll(context.Background(), unsubscribe.RecipientID(rcpt)); err != nil {
				t.Fatal(err)
			}
		}, delivery.StatusSkippedUnsubscribed},
		{"domain no longer allowed", func(w *digestWorld, _ string) {
			d, err := delivery.ParseDomains("other.example")
			if err != nil {
				t.Fatal(err)
			}
			w.gates.domains = d
			setGates(t, w.n, w.gates)
		}, delivery.StatusSkippedDomain},
	} {
		t.Run(c.name, func(t *testing.T) {
			w := newDigestWorld(t)
			const daily = "dana@example.com"
			w.choose(daily, prefs.Daily)
			w.review("cl-a", crit(warnA), daily)
			id := w.row("cl-a", daily, 1).Digest
			c.then(w, daily)
			w.day = time.Date(2026, 6, 11, 9, 0, 30, 0, time.UTC)
			w.sweep()
			if g, _ := w.rows.Get(context.Background(), id); g.Status != c.want || len(w.box.of(daily)) != 0 {
				t.Fatalf("digest %s with %d emails; want %s, none", g.Status, len(w.box.of(daily)), c.want)
			}
		})
	}
}

// A changelist its daily reader muted by reply after its versions went
// into the digest is left out of it; the other changelists are shown, and
// a later version of the muted one is never mailed or digested.
// Rules: R-REPLY-7, R-DIGEST-4.
func TestDigest_MutedByReplyBeforeItGoesOut_LeftOut_Offline(t *testing.T) {
	w := newDigestWorld(t)
	ctx := context.Background()
	mutes := memstore.NewReplies()
	w.gates.mutes = mutes
	setGates(t, w.n, w.gates)
	const daily = "dana@example.com"
	w.choose(daily, prefs.Daily)
	w.review("cl-a", crit(warnA), daily)
	w.review("cl-b", crit(errorB), daily)
	if err := mutes.Mute(ctx, job.ChangelistKey("generic", "cl-a"), unsubscribe.RecipientID(daily), w.now); err != nil {
		t.Fatal(err)
	}
	w.review("cl-a", crit(warnA, errorB), daily)
	if r := w.row("cl-a", daily, 2); r.Status != delivery.StatusSkippedMuted {
		t.Fatalf("cl-a v2 after the mute: %s, want skipped_muted", r.Status)
	}
	w.day = time.Date(2026, 6, 11, 9, 0, 30, 0, time.UTC)
	if n := w.sweep(); n != 1 {
		t.Fatalf("at the hour: %d digest messages, want 1", n)
	}
	got := w.box.of(daily)
	if len(got) != 1 {
		t.Fatalf("the daily reader has %d emails, want one digest", len(got))
	}
	if !strings.Contains(got[0].Text, "== cl-b version 1 ==") || strings.Contains(got[0].Text, "cl-a") {
		t.Errorf("digest shows the muted changelist, or not the other:\n%s", got[0].Text)
	}
}
