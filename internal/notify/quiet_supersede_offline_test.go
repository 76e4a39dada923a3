package notify_test

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/smithy-go"

	"github.com/criticizer/criticizer/internal/delivery"
	"github.com/criticizer/criticizer/internal/job"
	"github.com/criticizer/criticizer/internal/store/storetest"
)

// refusing is SES answering every message about one version with an
// error code, nothing sent (MessageRejected: refused for good;
// TooManyRequestsException: a throttle); the others go through.
type refusing struct {
	*subjects
	version int
	code    string
}

func (r refusing) Send(ctx context.Context, id, to string, m delivery.Message) (string, error) {
	if versionInText.FindStringSubmatch(m.Text + "\nversion 0\n")[1] == strconv.Itoa(r.version) {
		return "", &delivery.NotSentError{Err: &smithy.GenericAPIError{Code: r.code, Message: "refused", Fault: smithy.FaultClient}}
	}
	return r.subjects.Send(ctx, id, to, m)
}

// A version is superseded only by one that reached the recipient. Here
// v2 is accepted before v1's notify runs, so v1's row waits, unclaimed
// (its job in progress at notify, a delayed notify message sent to look
// again); then v2 ends without mailing ann — before v1 looks first, or
// after — in each way it can: refused by a budget, nobody to read it,
// skipped by its repository's settings, dead-lettered before notify or
// at notify with ann's row never sent, SES refusing ann's v2 for good, or
// ann not a recipient of v2. v1 is then mailed to ann, once, and its job
// succeeds; when v2 reaches ann instead, v1 is superseded by it.
// Rules: R-QUIET-3, R-OUTBOX-8, R-STAGE-6.
func TestQuiet_SupersedingVersionFails_OlderMailedOnce(t *testing.T) {
	ctx := context.Background()
	type fail func(w *quietWorld, v2 job.Job)
	setStatus := func(status job.Status, skipped string) fail {
		return func(w *quietWorld, v2 job.Job) {
			v2.Status, v2.Skipped = status, skipped
			w.jobs.Put(v2)
		}
	}
	atNotify := func(then func(w *quietWorld, v2 job.Job)) fail {
		return func(w *quietWorld, v2 job.Job) {
			v2 = w.atNotify(v2, offlineCritique())
			then(w, v2)
		}
	}
	for _, c := range []struct {
		name string
		fail fail
	}{
		{"budget-exceeded", setStatus(job.StatusBudgetExceeded, "")},
		{"no-recipients", setStatus(job.StatusNoRecipients, "")},
		{"skipped-by-settings", setStatus(job.StatusSucceeded, "label skip-review")},
		{"dead-lettered-at-llm", setStatus(job.StatusDeadLettered, "")},
		{"dead-lettered-at-notify", atNotify(func(w *quietWorld, v2 job.Job) {
			// Its rows created, the send throttled, then the stage gave up.
			snd := w.n.Sender
			w.n.Sender = refusing{w.snd, 2, "TooManyRequestsException"}
			_ = w.n.Handle(ctx, job.Message{JobID: v2.ID, Stage: job.StageNotify}, 1)
			w.n.Sender = snd
			v2, _ = w.jobs.Get(ctx, v2.ID)
			v2.Status = job.StatusDeadLettered
			w.jobs.Put(v2)
		})},
		{"refused-for-good", atNotify(func(w *quietWorld, v2 job.Job) {
			snd := w.n.Sender
			w.n.Sender = refusing{w.snd, 2, "MessageRejected"}
			_ = w.n.Handle(ctx, job.Message{JobID: v2.ID, Stage: job.StageNotify}, 1)
			w.n.Sender = snd
		})},
		{"not-a-recipient-of-v2", atNotify(func(w *quietWorld, v2 job.Job) {
			v2.Recipients = []string{"bob@example.com"}
			w.jobs.Put(v2)
			w.notify(v2)
		})},
	} {
		for _, order := range []string{"after", "before"} {
			t.Run(c.name+"/"+order+"-the-check", func(t *testing.T) {
				w := newQuietWorld(t, "cl-"+c.name+"-"+order)
				v1 := w.accept(1, "sha-1", offlineCritique(), "ann@example.com")
				v2 := storetest.NewJob(w.cl, 2)
				v2.Recipients, v2.DiffSHA256 = []string{"ann@example.com"}, "sha-2"
				storetest.Create(t, w.jobs, v2, "key-"+w.cl+"-2", "body")
				if order == "after" {
					q := &delayQueue{delays: map[job.ID]time.Duration{}}
					w.n.Queue = q
					w.waits(v1)
					if r := w.row("ann@example.com", 1); r.Status != delivery.StatusPending || r.Attempts != 0 {
						t.Fatalf("ann v1 while v2 is on its way: %s after %d attempts, want pending, never claimed", r.Status, r.Attempts)
					}
					if d, ok := q.delays[v1.ID]; !ok || d < 2*time.Second || d > 4*time.Minute {
						t.Errorf("v1 looks again after %s (enqueued %t), want a delayed notify message", d, ok)
					}
				}
				c.fail(w, v2)
				w.notify(v1)
				w.notify(v1) // a duplicate message: nothing more
				sent := w.snd.all()
				var toAnn []string
				for _, s := range sent {
					if strings.HasPrefix(s, "ann@example.com: ") {
						toAnn = append(toAnn, s)
					}
				}
				if len(toAnn) != 1 || !strings.HasSuffix(toAnn[0], " v1") {
					t.Fatalf("ann got %q, want v1 once: v2 never reached her", toAnn)
				}
				if r := w.row("ann@example.com", 1); r.Status != delivery.StatusSent || r.Attempts != 1 {
					t.Errorf("ann v1: %s after %d attempts, want sent once", r.Status, r.Attempts)
				}
			})
		}
	}
	t.Run("v2-reaches-ann", func(t *testing.T) {
		w := newQuietWorld(t, "cl-reached")
		v1 := w.accept(1, "sha-1", offlineCritique(), "ann@example.com")
		v2 := w.accept(2, "sha-2", offlineCritique(), "ann@example.com")
		w.waits(v1)
		w.notify(v2)
		w.notify(v1)
		if r := w.row("ann@example.com", 1); r.Status != delivery.StatusSuperseded || r.SkipReason != "v2" || r.Attempts != 0 {
			t.Errorf("ann v1: %s %q after %d attempts, want superseded by v2, never claimed", r.Status, r.SkipReason, r.Attempts)
		}
		if sent := w.snd.all(); len(sent) != 1 || !strings.HasSuffix(sent[0], " v2") {
			t.Errorf("sent %q, want v2 only", sent)
		}
	})
}

// Of three versions, the newest that can be mailed is mailed, once: v3 is
// refused by its budget after v1 and v2 began to wait; v2 is mailed, and
// v1, which waited for v2 as well, is superseded by v2 once v2 has
// reached the recipient — not mailed as well.
// Rules: R-QUIET-3.
func TestQuiet_NewestVersionThatCanBeMailedIsMailed(t *testing.T) {
	w := newQuietWorld(t, "cl-three")
	v1 := w.accept(1, "sha-1", offlineCritique(), "ann@example.com")
	v2 := w.accept(2, "sha-2", offlineCritique(), "ann@example.com")
	v3 := storetest.NewJob(w.cl, 3)
	v3.Recipients = []string{"ann@example.com"}
	storetest.Create(t, w.jobs, v3, "key-three-3", "body")
	w.waits(v1)
	w.waits(v2)
	v3.Status = job.StatusBudgetExceeded
	w.jobs.Put(v3)
	w.waits(v1) // v2 may still reach ann
	w.notify(v2)
	w.notify(v1)
	if sent := w.snd.all(); len(sent) != 1 || !strings.HasSuffix(sent[0], " v2") {
		t.Fatalf("sent %q, want v2 only", sent)
	}
	if r := w.row("ann@example.com", 1); r.Status != delivery.StatusSuperseded || r.SkipReason != "v2" {
		t.Errorf("ann v1: %s %q, want superseded by v2", r.Status, r.SkipReason)
	}
}
