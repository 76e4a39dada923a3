package notify_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
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
)

type replyWorld struct {
	now     time.Time
	jobs    *memstore.Jobs
	rows    *memstore.Deliveries
	replies *memstore.Replies
	rcpts   *memstore.Preferences
	snd     *sender
	n       *notify.Notify
}

func newReplyWorld(t *testing.T) *replyWorld {
	w := &replyWorld{now: time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)}
	clock := func() time.Time { return w.now }
	w.jobs, w.rows, w.replies, w.rcpts = memstore.NewJobs(clock), memstore.NewDeliveries(clock), memstore.NewReplies(), memstore.NewPreferences()
	w.snd = &sender{sent: map[string]int{}, loseN: map[string]bool{}}
	r, err := mail.NewRenderer()
	if err != nil {
		t.Fatal(err)
	}
	w.n = &notify.Notify{
		Base:       pipeline.Base{Jobs: w.jobs, Queue: nopQueue{}, Log: slog.New(slog.NewJSONHandler(io.Discard, nil)), Now: clock},
		Deliveries: w.rows, Renderer: r, Sender: w.snd, Evidence: memstore.NewEvidence(clock), ConfigurationSet: "set",
		Recipients: w.rcpts,
		Lease:      time.Minute, Margin: 2 * time.Minute, MarkTimeout: 5 * time.Second, SendTimeout: 5 * time.Second,
	}
	setGates(t, w.n, gateOpts{mutes: w.replies})
	return w
}

func (w *replyWorld) job(t *testing.T, cl string, version int, recipients ...string) job.Job {
	crit, _ := json.Marshal(critic.Critique{Critic: "offline/v1", Summary: "s", Findings: []critic.Finding{}})
	j := storetest.NewJob(cl, version)
	j.Stage, j.Status, j.Critique, j.Recipients = job.StageNotify, job.StatusInProgress, crit, recipients
	w.jobs.Put(j)
	return j
}

// A reader who muted a changelist by reply gets no more email about it:
// their row of the next version is settled skipped_muted, never sent,
// and the job succeeds; the other reviewer, and the reader's email about
// another changelist, are mailed as before.
// Rules: R-REPLY-7.
func TestNotify_MutedByReply_SkippedMuted_Offline(t *testing.T) {
	ctx := context.Background()
	w := newReplyWorld(t)
	if err := w.replies.Mute(ctx, job.ChangelistKey("generic", "cl-muted"), unsubscribe.RecipientID("Ann@Example.com"), w.now); err != nil {
		t.Fatal(err)
	}
	j := w.job(t, "cl-muted", 2, "ann@example.com", "bo@example.com")
	other := w.job(t, "cl-other", 1, "ann@example.com")
	for _, x := range []job.Job{j, other} {
		if err := w.n.Handle(ctx, job.Message{JobID: x.ID, Stage: job.StageNotify}, 1); err != nil {
			t.Fatal(err)
		}
	}
	if w.snd.sent["ann@example.com"] != 1 || w.snd.sent["bo@example.com"] != 1 {
		t.Fatalf("sends %v: want ann once (the other changelist), bo once", w.snd.sent)
	}
	row, _ := w.rows.Get(ctx, delivery.ID(job.ChangelistKey("generic", "cl-muted"), "ann@example.com", 2))
	if row.Status != delivery.StatusSkippedMuted || row.SkipReason != "reply" || row.NotificationID != "" {
		t.Errorf("ann's row %s (%q), want skipped_muted, never sent", row.Status, row.SkipReason)
	}
	if got, _ := w.jobs.Get(ctx, j.ID); got.Status != job.StatusSucceeded {
		t.Errorf("job %s, want succeeded: a muted row is settled", got.Status)
	}
}

// A reply's confirmation is a delivery row the reply function wrote; the
// reply task sends it through claim, send and mark: once, however often
// the task comes (redelivery); a send whose answer was lost is held for
// evidence, not resent; a suppressed address gets nothing; a task naming
// no row, or a row that is not a confirmation, is permanent.
// Rules: R-REPLY-5, R-OUTBOX-3.
func TestNotify_ReplyConfirmation_OnceThroughTheOutbox_Offline(t *testing.T) {
	ctx := context.Background()
	w := newReplyWorld(t)
	j := w.job(t, "cl-reply", 1, "ann@example.com")
	confirm := func(to, sesID string) delivery.Row {
		r := delivery.Row{ID: delivery.ReplyID(sesID), Kind: delivery.KindReply, JobID: j.ID, ChangelistKey: job.ChangelistKey("generic", "cl-reply"),
			Recipient: to, ReviewVersion: 1, Status: delivery.StatusPending, CreatedAt: w.now, UpdatedAt: w.now,
			Message: delivery.Message{Subject: "Re: x", Text: "t", HTML: "h", TemplateVersion: mail.ConfirmationVersion}}
		if _, _, err := w.rows.Ensure(ctx, r); err != nil {
			t.Fatal(err)
		}
		return r
	}
	task := func(r delivery.Row) error { return w.n.Handle(ctx, r.NotifyMessage(), 1) }

	r := confirm("ann@example.com", "ses-reply-1")
	if m := r.NotifyMessage(); m.Task != job.TaskReply || m.Delivery != r.ID || m.JobID != j.ID {
		t.Fatalf("notify message %+v", m)
	}
	for range 3 {
		if err := task(r); err != nil {
			t.Fatal(err)
		}
	}
	if w.snd.sent["ann@example.com"] != 1 {
		t.Fatalf("%d confirmations, want 1", w.snd.sent["ann@example.com"])
	}
	if got, _ := w.rows.Get(ctx, r.ID); got.Status != delivery.StatusSent || got.NotificationID == "" {
		t.Errorf("confirmation row %s %q, want sent with the provider id", got.Status, got.NotificationID)
	}
	if got, _ := w.jobs.Get(ctx, j.ID); got.Status != job.StatusInProgress || got.Stage != job.StageNotify {
		t.Errorf("the answered job moved: %s at %s", got.Status, got.Stage)
	}

	w.snd.loseN["lost@example.com"] = true
	lost := confirm("lost@example.com", "ses-reply-2")
	if err := task(lost); retry.Classify(err).Class != retry.AwaitingEvidence {
		t.Fatalf("lost answer: %v, want AWAITING_EVIDENCE", err)
	}
	w.now = w.now.Add(2 * time.Minute)
	_ = task(lost)
	if w.snd.sent["lost@example.com"] != 1 {
		t.Errorf("%d sends of a confirmation whose answer was lost, want 1 (held for evidence)", w.snd.sent["lost@example.com"])
	}

	_ = w.rcpts.Suppress(ctx, unsubscribe.RecipientID("gone@example.com"), "bounce", w.now)
	gone := confirm("gone@example.com", "ses-reply-3")
	if err := task(gone); err != nil || w.snd.sent["gone@example.com"] != 0 {
		t.Errorf("suppressed: %v, %d sends; want none", err, w.snd.sent["gone@example.com"])
	}
	if got, _ := w.rows.Get(ctx, gone.ID); got.Status != delivery.StatusSuppressed {
		t.Errorf("suppressed row %s", got.Status)
	}

	missing := job.Message{JobID: j.ID, Stage: job.StageNotify, Task: job.TaskReply, Delivery: delivery.ReplyID("nope")}
	if err := w.n.Handle(ctx, missing, 1); retry.Classify(err).Class != retry.NotFound {
		t.Errorf("no such row: %v, want NOT_FOUND, permanent", err)
	}
	critique := delivery.Row{ID: delivery.ID(job.ChangelistKey("generic", "cl-reply"), "ann@example.com", 1), JobID: j.ID,
		Recipient: "ann@example.com", Status: delivery.StatusPending, CreatedAt: w.now, UpdatedAt: w.now}
	if _, _, err := w.rows.Ensure(ctx, critique); err != nil {
		t.Fatal(err)
	}
	err := w.n.Handle(ctx, job.Message{JobID: j.ID, Stage: job.StageNotify, Task: job.TaskReply, Delivery: critique.ID}, 1)
	if retry.Classify(err).Class != retry.SchemaInvalid || w.snd.sent["ann@example.com"] != 1 {
		t.Errorf("a critique's row named by a reply task: %v, want SCHEMA_INVALID and no send", err)
	}
}
