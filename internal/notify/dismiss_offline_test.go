package notify_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"regexp"
	"strconv"
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
	"github.com/criticizer/criticizer/internal/retry"
	"github.com/criticizer/criticizer/internal/store/memstore"
	"github.com/criticizer/criticizer/internal/store/storetest"
	"github.com/criticizer/criticizer/internal/unsubscribe"
	"github.com/criticizer/criticizer/internal/vote"
	"github.com/criticizer/criticizer/internal/voting"
)

// inbox keeps every message sent, per recipient, and fails the next send
// to an address in failNext (an answer that says nothing was sent).
type inbox struct {
	mu       sync.Mutex
	got      map[string][]delivery.Message
	failNext map[string]bool
}

func (b *inbox) Send(_ context.Context, _ string, to string, m delivery.Message) (string, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.failNext[to] {
		delete(b.failNext, to)
		return "", &delivery.NotSentError{Err: retry.Transient(retry.Upstream5xx, errors.New("503 before the send"))}
	}
	b.got[to] = append(b.got[to], m)
	return "ses-" + to + "-" + string(rune('0'+len(b.got[to]))), nil
}

func (b *inbox) last(t *testing.T, to string) delivery.Message {
	t.Helper()
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.got[to]) == 0 {
		t.Fatalf("nothing sent to %s", to)
	}
	return b.got[to][len(b.got[to])-1]
}

func (b *inbox) count(to string) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.got[to])
}

// dismissWorld is one changelist on the in-memory store: the notifier
// with readers' marks, and the recorder a vote link (or a reply) calls.
type dismissWorld struct {
	t     *testing.T
	cl    string
	now   time.Time
	jobs  *memstore.Jobs
	rows  *memstore.Deliveries
	box   *inbox
	n     *notify.Notify
	rec   *voting.Recorder
	votes *memstore.Votes
	marks *memstore.Dismissals
	// explicit makes the versions explicit (R-RERUN-2), as a generic
	// caller's review_version is.
	explicit bool
	gates    gateOpts
}

func newDismissWorld(t *testing.T, cl string, quiet *notify.QuietConfig) *dismissWorld {
	w := &dismissWorld{t: t, cl: cl, now: time.Date(2026, 11, 27, 10, 0, 0, 0, time.UTC), box: &inbox{got: map[string][]delivery.Message{}, failNext: map[string]bool{}}}
	clock := func() time.Time { return w.now }
	w.jobs, w.rows, w.votes = memstore.NewJobs(clock), memstore.NewDeliveries(clock), memstore.NewVotes()
	marks := memstore.NewDismissals()
	r, err := mail.NewRenderer()
	if err != nil {
		t.Fatal(err)
	}
	signer, err := vote.NewSigner("0123456789abcdef0123456789abcdef-test")
	if err != nil {
		t.Fatal(err)
	}
	if quiet != nil {
		quiet.Versions = w.jobs
	}
	w.n = &notify.Notify{
		Base:       pipeline.Base{Jobs: w.jobs, Queue: nopQueue{}, Log: slog.New(slog.NewJSONHandler(io.Discard, nil)), Now: clock},
		Deliveries: w.rows, Renderer: r, Sender: w.box, Evidence: memstore.NewEvidence(clock), ConfigurationSet: "set",
		Lease: time.Minute, Margin: 2 * time.Minute, MarkTimeout: 5 * time.Second, SendTimeout: 5 * time.Second,
		Votes: signer, PublicURL: "https://api.example.com", Dismissals: marks,
	}
	w.gates = gateOpts{quiet: quiet}
	setGates(t, w.n, w.gates)
	w.rec = &voting.Recorder{Votes: w.votes, Marks: marks, Rows: w.rows, Jobs: w.jobs}
	w.marks = marks
	return w
}

// version creates version v with critique c for ann and bo and runs
// notify on it once; it returns the error of that run.
func (w *dismissWorld) version(v int, c critic.Critique) error {
	w.t.Helper()
	w.now = w.now.Add(time.Hour)
	j := storetest.NewJob(w.cl, v)
	j.Recipients = []string{"ann@example.com", "bo@example.com"}
	j.Explicit = w.explicit
	storetest.Create(w.t, w.jobs, j, "key-"+w.cl+"-"+string(rune('0'+v)), "body")
	b, _ := json.Marshal(c)
	j.Stage, j.Status, j.Critique = job.StageNotify, job.StatusInProgress, b
	w.jobs.Put(j)
	return w.n.Handle(context.Background(), job.Message{JobID: j.ID, Stage: job.StageNotify}, 1)
}

func (w *dismissWorld) id(rcpt string, v int) string {
	return delivery.ID(job.ChangelistKey("generic", w.cl), rcpt, v)
}

// vote is the reader's choice on the finding numbered n in their email
// of version v, through the operation a vote link and a reply share.
func (w *dismissWorld) vote(rcpt string, v, n int, c vote.Choice) voting.Result {
	w.t.Helper()
	w.now = w.now.Add(time.Minute)
	res, err := w.rec.Record(context.Background(), w.id(rcpt, v), voting.Ref{Number: n}, c, w.now)
	if err != nil {
		w.t.Fatalf("%s votes %s on finding %d of v%d: %v", rcpt, c, n, v, err)
	}
	return res
}

// The findings of the changelist: debug on a.go (marked wrong by ann),
// a TODO on b.go, and a third one v2 adds on c.go. Anchor and Place are
// the flagged line's text and where it stands, as critic.Incremental
// digests them.
var (
	debugV1 = critic.Finding{File: "a.go", Line: 10, Severity: critic.SeverityWarning, Rule: "debug-print", Message: "fmt.Println left in.", Anchor: "line-println", Place: "place-println"}
	todoV1  = critic.Finding{File: "b.go", Line: 3, Severity: critic.SeverityInfo, Rule: "todo-added", Message: "A TODO was added.", Anchor: "line-todo", Place: "place-todo"}
	newC    = critic.Finding{File: "c.go", Line: 7, Severity: critic.SeverityWarning, Rule: "debug-print", Message: "log.Printf left in.", Anchor: "line-printf", Place: "place-printf", New: true}
)

// rerun is a critique compared with version since.
func rerun(since int, fs ...critic.Finding) critic.Critique {
	c := critic.Critique{Critic: "offline/v1", Summary: "s", Findings: fs, Changes: &critic.Changes{Since: since, Reviewed: 1, Carried: 1}}
	for _, f := range fs {
		if f.New {
			c.Changes.New++
		} else {
			c.Changes.Unchanged++
		}
	}
	return c
}

// A finding ann marked wrong is left out of her later emails about the
// changelist while its line is unchanged — moved down two lines and
// reworded by the critic, it is the same finding — and her email says
// one was hidden; bo, who did not vote, still sees it. When its line
// changes it is another finding, and shows again; a later "useful" on it
// brings it back too. The vote is kept for make eval either way.
// Rules: R-VOTE-3, R-VOTE-2.
func TestDismissal_HiddenFromTheReaderWhileTheLineIsUnchanged(t *testing.T) {
	w := newDismissWorld(t, "cl-dismiss", nil)
	if err := w.version(1, critic.Critique{Critic: "offline/v1", Summary: "s", Findings: []critic.Finding{debugV1, todoV1}}); err != nil {
		t.Fatal(err)
	}
	v1 := w.box.last(t, "ann@example.com")
	if first, _ := v1.Finding(1); first != vote.FindingID(debugV1) {
		t.Fatalf("ann's v1 lists %q first, want the debug finding %q", v1.Findings, vote.FindingID(debugV1))
	}
	if res := w.vote("ann@example.com", 1, 1, vote.Wrong); res.Mark != vote.MarkDismissed || res.Vote != vote.Recorded || res.Rule != "debug-print" {
		t.Fatalf("ann's wrong: %+v, want recorded and dismissed", res)
	}

	moved := debugV1
	moved.Line, moved.Message = 12, "Debug output left in the hot path."
	if err := w.version(2, rerun(1, moved, todoV1, newC)); err != nil {
		t.Fatal(err)
	}
	ann, bo := w.box.last(t, "ann@example.com"), w.box.last(t, "bo@example.com")
	if strings.Contains(ann.Text, "hot path") || !strings.Contains(ann.Text, "1 finding you marked wrong is hidden") ||
		!strings.Contains(ann.HTML, "1 finding you marked wrong is hidden") || !strings.Contains(ann.Text, "log.Printf") {
		t.Errorf("ann's v2 shows the finding she marked wrong, or does not say it is hidden:\n%s", ann.Text)
	}
	if !strings.Contains(ann.Text, "Findings: 0 errors, 1 warning, 1 info") || !strings.Contains(ann.Text, "1 new, 1 unchanged, 0 resolved") {
		t.Errorf("ann's v2 counts the hidden finding:\n%s", ann.Text)
	}
	if !strings.Contains(bo.Text, "hot path") || strings.Contains(bo.Text, "marked wrong") {
		t.Errorf("bo's v2 lacks the finding ann marked wrong:\n%s", bo.Text)
	}
	if ids := strings.Fields(ann.Findings); len(ids) != 2 {
		t.Errorf("ann's v2 numbers %q, want the 2 findings it shows", ann.Findings)
	}

	// The line changes: another finding, shown to ann.
	changed := moved
	changed.Anchor, changed.New, changed.Message = "line-println-changed", true, "Debug output, still."
	if err := w.version(3, rerun(2, changed, todoV1)); err != nil {
		t.Fatal(err)
	}
	if ann := w.box.last(t, "ann@example.com"); !strings.Contains(ann.Text, "Debug output, still.") || strings.Contains(ann.Text, "marked wrong") {
		t.Errorf("ann's v3, whose line changed, lacks the finding:\n%s", ann.Text)
	}

	// ann marks the TODO wrong in v3, then thinks again: useful wins.
	if res := w.vote("ann@example.com", 3, 2, vote.Wrong); res.Mark != vote.MarkDismissed || res.FindingID != vote.FindingID(todoV1) {
		t.Fatalf("ann's wrong on the TODO: %+v", res)
	}
	if res := w.vote("ann@example.com", 3, 2, vote.Useful); res.Mark != vote.MarkRestored || res.Vote != vote.Changed {
		t.Fatalf("ann's useful on the TODO: %+v, want restored and changed", res)
	}
	if err := w.version(4, rerun(3, changed, todoV1, newC)); err != nil {
		t.Fatal(err)
	}
	if ann := w.box.last(t, "ann@example.com"); !strings.Contains(ann.Text, "A TODO was added.") || strings.Contains(ann.Text, "marked wrong") {
		t.Errorf("ann's v4 hides the finding she called useful last:\n%s", ann.Text)
	}
	votes, _ := w.votes.List(context.Background())
	if len(votes) != 2 {
		t.Errorf("votes kept for make eval: %+v, want 2 (one per finding of each email)", votes)
	}
	// A number the email does not list is refused, and records nothing.
	if _, err := w.rec.Record(context.Background(), w.id("ann@example.com", 4), voting.Ref{Number: 9}, vote.Wrong, w.now); !errors.Is(err, voting.ErrUnknownFinding) {
		t.Errorf("finding 9 of 3: %v, want ErrUnknownFinding", err)
	}
}

// A vote that arrives between a failed send and its retry changes nothing
// in that email: the row keeps the message it was rendered with before
// any send (R-OUTBOX-2); the vote applies from the next version.
// Rules: R-VOTE-3, R-OUTBOX-2.
func TestDismissal_VoteBetweenAFailedSendAndItsRetry_SameBytes(t *testing.T) {
	w := newDismissWorld(t, "cl-dismiss-retry", nil)
	if err := w.version(1, critic.Critique{Critic: "offline/v1", Summary: "s", Findings: []critic.Finding{debugV1, todoV1}}); err != nil {
		t.Fatal(err)
	}
	w.vote("ann@example.com", 1, 1, vote.Wrong)
	w.box.failNext["ann@example.com"] = true
	if err := w.version(2, rerun(1, debugV1, todoV1, newC)); err == nil {
		t.Fatal("v2: the failed send did not fail the run")
	}
	stored, err := w.rows.Get(context.Background(), w.id("ann@example.com", 2))
	if err != nil || stored.Status != delivery.StatusFailedTransient {
		t.Fatalf("ann's v2 row: %s, %v; want failed_transient", stored.Status, err)
	}
	// Before the retry, ann calls the debug finding useful after all and
	// the TODO wrong (through her v1 email).
	w.vote("ann@example.com", 1, 1, vote.Useful)
	w.vote("ann@example.com", 1, 2, vote.Wrong)
	j, _ := w.jobs.Get(context.Background(), job.NewID("generic", w.cl, 2))
	if err := w.n.Handle(context.Background(), job.Message{JobID: j.ID, Stage: job.StageNotify}, 2); err != nil {
		t.Fatalf("retry: %v", err)
	}
	sent := w.box.last(t, "ann@example.com")
	if sent != stored.Message || w.box.count("ann@example.com") != 2 {
		t.Fatalf("the retry sent other bytes than the row was created with (%d emails to ann)", w.box.count("ann@example.com"))
	}
	if strings.Contains(sent.Text, "fmt.Println") || !strings.Contains(sent.Text, "A TODO was added.") {
		t.Errorf("the retried v2 does not show what was rendered before the votes:\n%s", sent.Text)
	}
	// The next version follows the votes.
	if err := w.version(3, rerun(2, debugV1, todoV1, newC)); err != nil {
		t.Fatal(err)
	}
	if v3 := w.box.last(t, "ann@example.com"); !strings.Contains(v3.Text, "fmt.Println") || strings.Contains(v3.Text, "A TODO was added.") {
		t.Errorf("ann's v3 does not follow her latest votes:\n%s", v3.Text)
	}
}

// When every new finding of a version is one the reader marked wrong, and
// nothing was resolved, the version has nothing new for that reader
// (R-QUIET-2 as they see it): the row is settled skipped_nothing_new when
// it is created, never sent; a reader who did not vote gets the email.
// With R-QUIET-2 off, the reader is mailed, the finding hidden.
// Rules: R-VOTE-3, R-QUIET-2.
func TestDismissal_OnlyDismissedFindingsNew_NothingNewForThatReader(t *testing.T) {
	for _, mailUnchanged := range []bool{false, true} {
		w := newDismissWorld(t, "cl-dismiss-quiet", &notify.QuietConfig{MailUnchangedReruns: mailUnchanged})
		if err := w.version(1, critic.Critique{Critic: "offline/v1", Summary: "s", Findings: []critic.Finding{debugV1, todoV1}}); err != nil {
			t.Fatal(err)
		}
		w.vote("ann@example.com", 1, 1, vote.Wrong)
		// v2 reports the debug finding as new (the critic had dropped it
		// from a review in between): ann has nothing new.
		again := debugV1
		again.New = true
		if err := w.version(2, rerun(1, again, todoV1)); err != nil {
			t.Fatal(err)
		}
		row, err := w.rows.Get(context.Background(), w.id("ann@example.com", 2))
		if err != nil {
			t.Fatal(err)
		}
		if w.box.count("bo@example.com") != 2 {
			t.Errorf("bo got %d emails, want v1 and v2", w.box.count("bo@example.com"))
		}
		if mailUnchanged {
			if row.Status != delivery.StatusSent || !strings.Contains(w.box.last(t, "ann@example.com").Text, "1 finding you marked wrong is hidden") {
				t.Errorf("R-QUIET-2 off: ann's v2 %s, want sent with the finding hidden", row.Status)
			}
			continue
		}
		if row.Status != delivery.StatusSkippedNothingNew || row.Attempts != 0 || w.box.count("ann@example.com") != 1 ||
			!strings.Contains(row.SkipReason, "nothing new since v1") {
			t.Errorf("ann's v2: %s %q after %d attempts, %d emails; want skipped_nothing_new, only v1 sent", row.Status, row.SkipReason, row.Attempts, w.box.count("ann@example.com"))
		}
		if got, _ := w.jobs.Get(context.Background(), job.NewID("generic", w.cl, 2)); got.Status != job.StatusSucceeded {
			t.Errorf("v2's job %s, want succeeded", got.Status)
		}
	}
}

// An explicit version (R-RERUN-2) is mailed to a reader even when its
// only new findings are ones they marked wrong: the quiet rules, which
// R-VOTE-3's "nothing new for that reader" belongs to, do not judge it.
// Rules: R-VOTE-3, R-RERUN-2.
func TestDismissal_OnlyDismissedFindingsNew_ExplicitVersionStillMailed(t *testing.T) {
	w := newDismissWorld(t, "cl-dismiss-explicit", &notify.QuietConfig{})
	w.explicit = true
	if err := w.version(1, critic.Critique{Critic: "offline/v1", Summary: "s", Findings: []critic.Finding{debugV1, todoV1}}); err != nil {
		t.Fatal(err)
	}
	w.vote("ann@example.com", 1, 1, vote.Wrong)
	again := debugV1
	again.New = true
	if err := w.version(2, rerun(1, again, todoV1)); err != nil {
		t.Fatal(err)
	}
	row, err := w.rows.Get(context.Background(), w.id("ann@example.com", 2))
	if err != nil {
		t.Fatal(err)
	}
	if row.Status != delivery.StatusSent || w.box.count("ann@example.com") != 2 ||
		!strings.Contains(w.box.last(t, "ann@example.com").Text, "1 finding you marked wrong is hidden") {
		t.Errorf("ann's explicit v2: %s, %d emails; want sent, the finding hidden", row.Status, w.box.count("ann@example.com"))
	}
}

// newGoFile is a diff that adds path with lines.
func newGoFile(path string, lines ...string) string {
	var b strings.Builder
	b.WriteString("diff --git a/" + path + " b/" + path + "\nnew file mode 100644\n--- /dev/null\n+++ b/" + path + "\n")
	b.WriteString("@@ -0,0 +1," + strconv.Itoa(len(lines)) + " @@\n")
	for _, l := range lines {
		b.WriteString("+" + l + "\n")
	}
	return b.String()
}

// reviewed is version v of diffText as the llm stage reviews it by
// default: the offline critic under critic.Incremental, compared with
// prev (nil: the first version).
func reviewed(t *testing.T, v int, diffText string, prev *critic.Critique) critic.Critique {
	t.Helper()
	in := critic.Input{ChangelistID: "cl", ReviewVersion: v, Diff: diffText}
	if prev != nil {
		in.Previous = &critic.Previous{Version: v - 1, Critique: *prev}
	}
	c, err := critic.NewIncremental(critic.NewOffline()).Review(context.Background(), in)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// A dismissal stays where it was given: ann marks wrong the debug print
// of v1's Total; v2 adds the same print in a new function above it. Her
// v2 shows the new print, as new, and hides the one she saw (moved down
// five lines), saying one is hidden; v2 is not "nothing new" for her
// under the quiet rules. bo sees both. On main both prints were hidden
// (the key was the line's text) and ann's v2 was settled
// skipped_nothing_new.
// Rules: R-VOTE-3, R-QUIET-2.
func TestDismissal_SameLineElsewhere_ShownTheOneSeenHidden(t *testing.T) {
	w := newDismissWorld(t, "cl-dismiss-place", &notify.QuietConfig{})
	total := []string{"func Total(sum int) int {", `	fmt.Println("total", sum)`, "	return sum", "}"}
	refund := []string{"func Refund(sum int) int {", `	fmt.Println("total", sum)`, "	return -sum", "}"}
	head := []string{"package a", "", `import "fmt"`, ""}
	v1 := reviewed(t, 1, newGoFile("a.go", append(head, total...)...), nil)
	if err := w.version(1, v1); err != nil {
		t.Fatal(err)
	}
	n := 0
	for i, f := range v1.Findings {
		if f.Rule == critic.RuleDebugPrint {
			n = i + 1
		}
	}
	if n == 0 {
		t.Fatalf("v1 has no debug-print finding: %+v", v1.Findings)
	}
	if res := w.vote("ann@example.com", 1, n, vote.Wrong); res.Mark != vote.MarkDismissed {
		t.Fatalf("ann's wrong on the print: %+v, want dismissed", res)
	}

	v2 := reviewed(t, 2, newGoFile("a.go", append(append(head, refund...), append([]string{""}, total...)...)...), &v1)
	if err := w.version(2, v2); err != nil {
		t.Fatal(err)
	}
	row, err := w.rows.Get(context.Background(), w.id("ann@example.com", 2))
	if err != nil || row.Status != delivery.StatusSent {
		t.Fatalf("ann's v2 row: %s %q (%v); want sent: the new print is news to her", row.Status, row.SkipReason, err)
	}
	ann, bo := w.box.last(t, "ann@example.com"), w.box.last(t, "bo@example.com")
	prints := func(text string) []string {
		return regexp.MustCompile(`line \d+: [^\n]*\(debug-print\)`).FindAllString(text, -1)
	}
	if got := prints(ann.Text); len(got) != 1 || !strings.HasPrefix(got[0], "line 6:") || !strings.Contains(ann.Text, "1 finding you marked wrong is hidden") {
		t.Errorf("ann's v2 prints %q, want only the new one on line 6 and one hidden:\n%s", got, ann.Text)
	}
	if !strings.Contains(ann.Text, "== New since version 1 (1) ==\n\na.go\n  [warning] line 6:") {
		t.Errorf("ann's v2 does not call the print in Refund new:\n%s", ann.Text)
	}
	if got := prints(bo.Text); len(got) != 2 {
		t.Errorf("bo's v2 prints %q, want both:\n%s", got, bo.Text)
	}
}

// Without the line's text there is nothing to follow a finding by: a
// wrong on a finding of a critique reviewed without line text (no
// critic.Incremental) keeps no mark, and the next version's finding at
// the same line number — other code — shows. On main the mark was kept
// by line number and hid it.
// Rules: R-VOTE-3.
func TestDismissal_NoLineText_NothingHidden(t *testing.T) {
	w := newDismissWorld(t, "cl-dismiss-notext", nil)
	bare := debugV1
	bare.Anchor, bare.Place = "", ""
	if err := w.version(1, critic.Critique{Critic: "offline/v1", Summary: "s", Findings: []critic.Finding{bare}}); err != nil {
		t.Fatal(err)
	}
	if res := w.vote("ann@example.com", 1, 1, vote.Wrong); res.Mark != vote.MarkUnplaced || res.Vote != vote.Recorded {
		t.Fatalf("ann's wrong on a finding without line text: %+v, want the vote recorded and no mark (unplaced)", res)
	}
	other := bare
	other.Message = "Another print at the same line."
	if err := w.version(2, critic.Critique{Critic: "offline/v1", Summary: "s", Findings: []critic.Finding{other}}); err != nil {
		t.Fatal(err)
	}
	if ann := w.box.last(t, "ann@example.com"); !strings.Contains(ann.Text, "Another print at the same line.") || strings.Contains(ann.Text, "marked wrong") {
		t.Errorf("ann's v2 hides the finding at the line number she voted on:\n%s", ann.Text)
	}
}

// A mark kept before findings had a Place (keyed by file, rule and line
// text, or line number) is read as before — same item, same map — and
// hides nothing: it names no place, so it cannot say which line the
// reader saw. The finding shows, and a new wrong on it is kept.
// Rules: R-VOTE-3.
func TestDismissal_MarkKeptBeforePlaces_ReadAndHidesNothing(t *testing.T) {
	w := newDismissWorld(t, "cl-dismiss-legacy", nil)
	if err := w.version(1, critic.Critique{Critic: "offline/v1", Summary: "s", Findings: []critic.Finding{debugV1, todoV1}}); err != nil {
		t.Fatal(err)
	}
	clKey, ann := job.ChangelistKey("generic", w.cl), unsubscribe.RecipientID("ann@example.com")
	for _, at := range []string{"anchor:" + debugV1.Anchor, "line:" + strconv.Itoa(debugV1.Line)} {
		sum := sha256.Sum256([]byte("same-finding\x00" + debugV1.File + "\x00" + debugV1.Rule + "\x00" + at))
		if out, err := w.marks.Mark(context.Background(), clKey, ann, hex.EncodeToString(sum[:16]), vote.Wrong, w.now); err != nil || out != vote.MarkDismissed {
			t.Fatalf("legacy mark: %s %v", out, err)
		}
	}
	if err := w.version(2, rerun(1, debugV1, todoV1)); err != nil {
		t.Fatal(err)
	}
	if v2 := w.box.last(t, "ann@example.com"); !strings.Contains(v2.Text, "fmt.Println left in.") || strings.Contains(v2.Text, "marked wrong") {
		t.Errorf("ann's v2 hides a finding by a mark kept without its place:\n%s", v2.Text)
	}
	if res := w.vote("ann@example.com", 2, 1, vote.Wrong); res.Mark != vote.MarkDismissed {
		t.Fatalf("ann's wrong again: %+v, want dismissed", res)
	}
	if err := w.version(3, rerun(2, debugV1, todoV1)); err != nil {
		t.Fatal(err)
	}
	if v3 := w.box.last(t, "ann@example.com"); strings.Contains(v3.Text, "fmt.Println left in.") || !strings.Contains(v3.Text, "1 finding you marked wrong is hidden") {
		t.Errorf("ann's v3 shows the finding she marked wrong again:\n%s", v3.Text)
	}
}
