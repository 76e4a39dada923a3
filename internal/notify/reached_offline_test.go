package notify_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/criticizer/criticizer/internal/delivery"
	"github.com/criticizer/criticizer/internal/job"
	"github.com/criticizer/criticizer/internal/prefs"
	"github.com/criticizer/criticizer/internal/sesevent"
	"github.com/criticizer/criticizer/internal/store"
	"github.com/criticizer/criticizer/internal/store/memstore"
)

// What SES says after the Send event, on the in-memory store: the real
// notifier and the real feedback function (R-QUIET-4).

// sesFeedback is the feedback function over a world's rows and jobs, its
// notify messages kept for the test to run.
func sesFeedback(rows *memstore.Deliveries, jobs *memstore.Jobs, rcpts *memstore.Preferences, q *queueRecorder) *sesevent.Handler {
	h := &sesevent.Handler{Deliveries: rows, Jobs: jobs, Queue: q, Log: slog.New(slog.NewJSONHandler(io.Discard, nil))}
	if rcpts != nil {
		h.Recipients = rcpts
	}
	return h
}

// publish hands feedback the event SES publishes for the message row id
// was sent with: "Send", "Reject", or "Bounce/Permanent".
func publish(t *testing.T, h *sesevent.Handler, rows *memstore.Deliveries, id, typ string) {
	t.Helper()
	r, err := rows.Get(context.Background(), id)
	if err != nil || r.NotificationID == "" {
		t.Fatalf("row %s: %+v (%v), want one sent", id, r, err)
	}
	extra := ""
	switch typ {
	case "Reject":
		extra = `,"reject":{"reason":"Bad content"}`
	case "Bounce/Permanent":
		typ, extra = "Bounce", `,"bounce":{"bounceType":"Permanent","bounceSubType":"General"}`
	}
	body := fmt.Sprintf(`{"eventType":%q,"mail":{"messageId":%q,"timestamp":%q,"tags":{"delivery_id":[%q]}}%s}`,
		typ, r.NotificationID, time.Now().UTC().Format(time.RFC3339Nano), id, extra)
	resp, err := h.Handle(context.Background(), events.SQSEvent{Records: []events.SQSMessage{{MessageId: "sqs-" + typ, Body: body}}})
	if err != nil || len(resp.BatchItemFailures) != 0 {
		t.Fatalf("feedback %s of %s: %v %+v", typ, id, err, resp.BatchItemFailures)
	}
}

// runAll runs notify on every message q holds, as the notify queue's
// consumer does, until none is left.
func runAll(t *testing.T, n interface {
	Handle(context.Context, job.Message, int) error
}, q *queueRecorder) {
	t.Helper()
	for range 5 {
		ms := q.take()
		if len(ms) == 0 {
			return
		}
		for _, m := range ms {
			if err := n.Handle(context.Background(), m, 1); err != nil {
				t.Fatalf("notify %s: %v", m.JobID, err)
			}
		}
	}
}

// toAnn is what ann was sent, in order.
func (w *quietWorld) toAnn() []string {
	var out []string
	for _, s := range w.snd.all() {
		if strings.HasPrefix(s, "ann@example.com: ") {
			out = append(out, s[strings.LastIndex(s, " ")+1:])
		}
	}
	return out
}

// v2 of a burst is mailed, SES accepts it — and then rejects it for its
// content (a Reject after the Send): ann never had v2. Whether v1 had
// been superseded by v2 already (feedback revives v1's row, reopens its
// job and hands it to notify) or looks after the Reject (v2 is no longer
// reached), ann is mailed v1, once: the newest version that can reach
// her; v2's content is never sent again (R-EVIDENCE-8), and no row stays
// superseded by the rejected one. A copy of the Reject, or of v1's
// notify message, sends nothing more.
// Rules: R-QUIET-4, R-QUIET-3, R-EVIDENCE-8.
func TestReached_NewerRejectedAfterItsSend_OlderMailedOnce(t *testing.T) {
	for _, order := range []string{"v1-superseded-first", "reject-first"} {
		t.Run(order, func(t *testing.T) {
			w := newQuietWorld(t, "cl-rej-"+order)
			q := &queueRecorder{}
			fb := sesFeedback(w.deliveries, w.jobs, nil, q)
			v1 := w.accept(1, "sha-1", offlineCritique(), "ann@example.com")
			v2 := w.accept(2, "sha-2", offlineCritique(), "ann@example.com")
			w.waits(v1)
			w.notify(v2)
			v2row := delivery.ID(w.clKey(), "ann@example.com", 2)
			if order == "v1-superseded-first" {
				w.notify(v1)
				if r := w.row("ann@example.com", 1); r.Status != delivery.StatusSuperseded || r.SkipReason != "v2" {
					t.Fatalf("ann v1 before the Reject: %s %q, want superseded by v2", r.Status, r.SkipReason)
				}
			}
			publish(t, fb, w.deliveries, v2row, "Send")
			publish(t, fb, w.deliveries, v2row, "Reject")
			publish(t, fb, w.deliveries, v2row, "Reject") // SNS delivers it twice
			runAll(t, w.n, q)
			if order == "reject-first" {
				w.notify(v1) // its own delayed message
			}
			w.notify(v1) // a copy of its message: nothing more
			if got := w.toAnn(); len(got) != 2 || got[0] != "v2" || got[1] != "v1" {
				t.Fatalf("ann was sent %q, want v2 (rejected by SES) and then v1 once", got)
			}
			if r := w.row("ann@example.com", 1); r.Status != delivery.StatusSent || r.Attempts != 1 {
				t.Errorf("ann v1: %s after %d attempts, want sent once", r.Status, r.Attempts)
			}
			if r := w.row("ann@example.com", 2); r.Status != delivery.StatusFailedPermanent || r.RejectedAt.IsZero() {
				t.Errorf("ann v2: %s, want failed_permanent, rejected", r.Status)
			}
			if j, _ := w.jobs.Get(context.Background(), v1.ID); j.Status != job.StatusSucceeded {
				t.Errorf("v1's job is %s, want succeeded", j.Status)
			}
		})
	}
}

// v2 has the same diff as v1, which ann was mailed: v2 is settled
// skipped_same_diff — and then SES rejects v1 after its Send. ann never
// had that content: v2 is mailed (revived, or, when the Reject came first,
// never skipped), once; no skipped_same_diff row stands on the rejected
// version.
// Rules: R-QUIET-4, R-QUIET-1.
func TestReached_SameDiffAsARejectedVersion_Mailed(t *testing.T) {
	for _, order := range []string{"v2-skipped-first", "reject-first"} {
		t.Run(order, func(t *testing.T) {
			w := newQuietWorld(t, "cl-same-"+order)
			q := &queueRecorder{}
			fb := sesFeedback(w.deliveries, w.jobs, nil, q)
			v1 := w.accept(1, "sha-same", offlineCritique(), "ann@example.com")
			w.notify(v1)
			v1row := delivery.ID(w.clKey(), "ann@example.com", 1)
			publish(t, fb, w.deliveries, v1row, "Send")
			if order == "reject-first" {
				publish(t, fb, w.deliveries, v1row, "Reject")
			}
			v2 := w.accept(2, "sha-same", offlineCritique(), "ann@example.com")
			w.notify(v2)
			if order == "v2-skipped-first" {
				if r := w.row("ann@example.com", 2); r.Status != delivery.StatusSkippedSameDiff {
					t.Fatalf("ann v2 before the Reject: %s, want skipped_same_diff", r.Status)
				}
				publish(t, fb, w.deliveries, v1row, "Reject")
			}
			runAll(t, w.n, q)
			w.notify(v2)
			if got := w.toAnn(); len(got) != 2 || got[0] != "v1" || got[1] != "v2" {
				t.Fatalf("ann was sent %q, want v1 (rejected by SES) and then v2 once", got)
			}
			if r := w.row("ann@example.com", 2); r.Status != delivery.StatusSent || r.Attempts != 1 {
				t.Errorf("ann v2: %s after %d attempts, want sent once", r.Status, r.Attempts)
			}
		})
	}
}

// v2 of a burst is mailed and SES then bounces it for good: the address
// is suppressed, nothing can reach ann. v1, which v2 had superseded, is
// not left superseded by a version she never had: it is revived and its
// notify settles it suppressed, never sent.
// Rules: R-QUIET-4, R-EVIDENCE-6.
func TestReached_NewerBouncedForGood_OlderSuppressedNotSuperseded(t *testing.T) {
	w := newQuietWorld(t, "cl-bounce")
	rcpts := memstore.NewPreferences()
	w.n.Recipients = rcpts
	setGates(t, w.n, w.gates)
	q := &queueRecorder{}
	fb := sesFeedback(w.deliveries, w.jobs, rcpts, q)
	v1 := w.accept(1, "sha-1", offlineCritique(), "ann@example.com")
	v2 := w.accept(2, "sha-2", offlineCritique(), "ann@example.com")
	w.waits(v1)
	w.notify(v2)
	w.notify(v1)
	v2row := delivery.ID(w.clKey(), "ann@example.com", 2)
	publish(t, fb, w.deliveries, v2row, "Send")
	publish(t, fb, w.deliveries, v2row, "Bounce/Permanent")
	runAll(t, w.n, q)
	if got := w.toAnn(); len(got) != 1 || got[0] != "v2" {
		t.Fatalf("ann was sent %q, want v2 only (bounced; nothing more can reach her)", got)
	}
	if r := w.row("ann@example.com", 1); r.Status != delivery.StatusSuppressed || r.Attempts != 0 {
		t.Errorf("ann v1: %s after %d attempts, want suppressed, never sent (not superseded by a bounced version)", r.Status, r.Attempts)
	}
}

// A reader on mixed delivery had v1 of a change (a warning) gathered into
// her digest, and v2 (an error) mailed at once — which SES then
// rejected. v2 never reached her, so her digest does not leave the change
// out as one a newer version reached on its own: it shows v1.
// Rules: R-QUIET-4, R-DIGEST-4.
func TestDigest_NewerVersionRejected_DigestStillShowsIt_Offline(t *testing.T) {
	w := newDigestWorld(t)
	const mixed = "mia@example.com"
	w.choose(mixed, prefs.Mixed)
	w.review("cl-newer", crit(warnA), mixed)
	w.review("cl-newer", crit(errorB), mixed) // at once
	fb := sesFeedback(w.rows, w.jobs, w.rcpts, w.q)
	v2row := delivery.ID(job.ChangelistKey("generic", "cl-newer"), mixed, 2)
	r, _ := w.rows.Get(context.Background(), v2row)
	if r.NotificationID == "" {
		t.Fatalf("v2 at once: %s, want sent", r.Status)
	}
	for _, typ := range []string{"Send", "Reject"} {
		body := fmt.Sprintf(`{"eventType":%q,"mail":{"messageId":%q,"timestamp":%q,"tags":{"delivery_id":[%q]}},"reject":{"reason":"Bad content"}}`,
			typ, r.NotificationID, w.now.Format(time.RFC3339Nano), v2row)
		if resp, err := fb.Handle(context.Background(), events.SQSEvent{Records: []events.SQSMessage{{MessageId: typ, Body: body}}}); err != nil || len(resp.BatchItemFailures) != 0 {
			t.Fatalf("feedback %s: %v %+v", typ, err, resp.BatchItemFailures)
		}
	}
	w.day = time.Date(2026, 6, 11, 9, 1, 0, 0, time.UTC)
	w.sweep()
	got := w.box.of(mixed)
	if len(got) != 2 {
		t.Fatalf("%d emails, want v2 at once and one digest", len(got))
	}
	if !strings.Contains(got[1].Text, "== cl-newer version 1 ==") {
		t.Errorf("the digest leaves out cl-newer, as if the rejected v2 had reached her:\n%s", got[1].Text)
	}
}

func (w *quietWorld) clKey() string { return job.ChangelistKey("generic", w.cl) }

// The feedback function records a permanent bounce on v2's row before it
// suppresses ann's address; v1's notify, which judges v2 in between,
// finds v2 undone and no suppression yet. Nothing can reach ann: v1 is
// settled suppressed, naming the bounce, never mailed (found by the owed
// check in the explorer's newer-bounced world).
// Rules: R-QUIET-4, R-EVIDENCE-6, R-OWED-1.
func TestReached_NewerBouncedBeforeTheSuppression_OlderNotMailed(t *testing.T) {
	w := newQuietWorld(t, "cl-bounce-race")
	v1 := w.accept(1, "sha-1", offlineCritique(), "ann@example.com")
	v2 := w.accept(2, "sha-2", offlineCritique(), "ann@example.com")
	w.waits(v1)
	w.notify(v2)
	v2row := delivery.ID(w.clKey(), "ann@example.com", 2)
	r, err := w.deliveries.Get(context.Background(), v2row)
	if err != nil || r.NotificationID == "" {
		t.Fatalf("v2: %+v %v, want sent", r, err)
	}
	// The bounce on the row, the address not suppressed yet.
	for _, e := range []store.Event{{Type: "Send", MessageID: r.NotificationID, At: time.Now()},
		{Type: "Bounce", MessageID: r.NotificationID, At: time.Now(), BounceType: "Permanent"}} {
		if _, _, err := w.deliveries.RecordEvent(context.Background(), v2row, e); err != nil {
			t.Fatal(err)
		}
	}
	w.notify(v1)
	if got := w.toAnn(); len(got) != 1 || got[0] != "v2" {
		t.Fatalf("ann was sent %q, want v2 only (bounced for good; nothing more can reach her)", got)
	}
	if r := w.row("ann@example.com", 1); r.Status != delivery.StatusSuppressed || r.Attempts != 0 || !strings.Contains(r.SkipReason, "v2") {
		t.Errorf("ann v1: %s (%s) after %d attempts, want suppressed naming v2, never sent", r.Status, r.SkipReason, r.Attempts)
	}
}

// rejectBeforeSettle is the outbox with SES's Reject of a newer version
// landing between the quiet gate's read and its settlement (hook, once).
type rejectBeforeSettle struct {
	*memstore.Deliveries
	once sync.Once
	hook func()
}

func (d *rejectBeforeSettle) SettleQuiet(ctx context.Context, id string, status delivery.Status, reason, standsOn string) (delivery.Row, error) {
	d.once.Do(d.hook)
	return d.Deliveries.SettleQuiet(ctx, id, status, reason, standsOn)
}

// SES rejects v2 after the quiet gate judged that v2 reached ann and
// before v1's settlement as superseded was written: the settlement
// refuses to stand on the rejected row, the gate is asked again from the
// rows as they are now, and v1 is mailed in the same run, once.
// Rules: R-QUIET-4, R-OUTBOX-11.
func TestReached_NewerRejectedWhileTheOlderIsJudged_DecidedAgain(t *testing.T) {
	w := newQuietWorld(t, "cl-rej-between")
	q := &queueRecorder{}
	fb := sesFeedback(w.deliveries, w.jobs, nil, q)
	v1 := w.accept(1, "sha-1", offlineCritique(), "ann@example.com")
	v2 := w.accept(2, "sha-2", offlineCritique(), "ann@example.com")
	w.waits(v1)
	w.notify(v2)
	v2row := delivery.ID(w.clKey(), "ann@example.com", 2)
	publish(t, fb, w.deliveries, v2row, "Send")
	w.n.Deliveries = &rejectBeforeSettle{Deliveries: w.deliveries, hook: func() { publish(t, fb, w.deliveries, v2row, "Reject") }}
	w.notify(v1)
	if got := w.toAnn(); len(got) != 2 || got[0] != "v2" || got[1] != "v1" {
		t.Fatalf("ann was sent %q, want v2 (rejected by SES) and then v1 once", got)
	}
	if r := w.row("ann@example.com", 1); r.Status != delivery.StatusSent || r.StandsOn != "" {
		t.Errorf("ann v1: %s standing on %q, want sent", r.Status, r.StandsOn)
	}
}
