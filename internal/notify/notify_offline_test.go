package notify_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
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
	"github.com/criticizer/criticizer/internal/store"
	"github.com/criticizer/criticizer/internal/store/memstore"
	"github.com/criticizer/criticizer/internal/store/storetest"
)

// sender records sends; lose makes the provider accept a send and the
// answer never come back (the send happened, the caller cannot know).
type sender struct {
	mu    sync.Mutex
	sent  map[string]int // recipient -> emails
	n     int
	loseN map[string]bool
}

func (s *sender) Send(_ context.Context, _ string, to string, _ delivery.Message) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sent[to]++
	s.n++
	if s.loseN[to] {
		return "", errors.New("read tcp: connection reset by peer")
	}
	return "ses-" + to, nil
}

type nopQueue struct{}

func (nopQueue) Enqueue(context.Context, job.Message) error { return nil }

// The outbox protocol on the in-memory store (the deliveries' contract, by
// the conformance suite), no stack: each recipient is sent once and the
// row marked with the provider id; a second run sends nothing; a send
// whose answer was lost keeps its row in sending, held, and is not sent
// again, the job not succeeded, while the evidence path says nothing; its
// Send event then settles it without a resend.
// Rules: R-OUTBOX-3, R-OUTBOX-4, R-OUTBOX-6, R-OUTBOX-8, R-STORE-1.
func TestNotify_OutboxProtocol_Offline(t *testing.T) {
	ctx := context.Background()
	now := time.Now().UTC()
	clock := func() time.Time { return now }
	jobs, deliveries, ev := memstore.NewJobs(clock), memstore.NewDeliveries(clock), memstore.NewEvidence(clock)
	r, err := mail.NewRenderer()
	if err != nil {
		t.Fatal(err)
	}
	snd := &sender{sent: map[string]int{}, loseN: map[string]bool{"lost@example.com": true}}
	n := &notify.Notify{
		Base:       pipeline.Base{Jobs: jobs, Queue: nopQueue{}, Log: slog.New(slog.NewJSONHandler(io.Discard, nil)), Now: clock},
		Deliveries: deliveries, Renderer: r, Sender: snd, Evidence: ev, ConfigurationSet: "set", Recipients: memstore.NewPreferences(),
		Lease: time.Minute, Margin: 2 * time.Minute, MarkTimeout: 5 * time.Second, SendTimeout: 5 * time.Second,
	}
	setGates(t, n, gateOpts{})
	crit, _ := json.Marshal(critic.Critique{Critic: "offline/v1", Summary: "s", Findings: []critic.Finding{}})
	j := storetest.NewJob("cl-notify", 1)
	j.Stage, j.Status, j.Critique = job.StageNotify, job.StatusInProgress, crit
	j.Recipients = []string{"a@example.com", "lost@example.com"}
	jobs.Put(j)

	err = n.Handle(ctx, job.Message{JobID: j.ID, Stage: job.StageNotify}, 1)
	if err == nil || !retry.Classify(err).Retryable() {
		t.Fatalf("first run: %v, want a retryable wait for the lost answer's evidence", err)
	}
	if snd.sent["a@example.com"] != 1 || snd.sent["lost@example.com"] != 1 {
		t.Fatalf("sends %v, want one each", snd.sent)
	}
	okRow, _ := deliveries.Get(ctx, delivery.ID(job.ChangelistKey("generic", "cl-notify"), "a@example.com", 1))
	if okRow.Status != delivery.StatusSent || okRow.NotificationID != "ses-a@example.com" {
		t.Errorf("row a: %s %q, want sent with the provider id", okRow.Status, okRow.NotificationID)
	}
	lostID := delivery.ID(job.ChangelistKey("generic", "cl-notify"), "lost@example.com", 1)
	if lost, _ := deliveries.Get(ctx, lostID); lost.Status != delivery.StatusSending || lost.NotificationID != "" {
		t.Errorf("lost row: %s %q, want sending, no id", lost.Status, lost.NotificationID)
	}
	if got, _ := jobs.Get(ctx, j.ID); got.Status == job.StatusSucceeded {
		t.Error("the job succeeded with a row unsettled")
	}

	// The lease ends; the evidence path has said nothing: held, not resent.
	now = now.Add(2 * time.Minute)
	_ = n.Handle(ctx, job.Message{JobID: j.ID, Stage: job.StageNotify}, 2)
	if snd.n != 2 {
		t.Fatalf("%d sends after the lease, want 2: a lost answer is never resent blindly", snd.n)
	}
	// Its Send event arrives: backfilled from evidence, no resend, the
	// job succeeds.
	if _, _, err := deliveries.RecordEvent(ctx, lostID, storetestSend("ses-lost", now.Add(-time.Minute))); err != nil {
		t.Fatal(err)
	}
	if err := n.Handle(ctx, job.Message{JobID: j.ID, Stage: job.StageNotify}, 3); err != nil {
		t.Fatalf("after the evidence: %v", err)
	}
	if lost, _ := deliveries.Get(ctx, lostID); lost.Status != delivery.StatusSent || lost.NotificationID != "ses-lost" || snd.n != 2 {
		t.Errorf("lost row %s %q after %d sends, want sent from its evidence, no resend", lost.Status, lost.NotificationID, snd.n)
	}
	if got, _ := jobs.Get(ctx, j.ID); got.Status != job.StatusSucceeded {
		t.Errorf("job %s, want succeeded", got.Status)
	}
	// Again: nothing is sent.
	jobs.Put(j)
	_ = n.Handle(ctx, job.Message{JobID: j.ID, Stage: job.StageNotify}, 4)
	if snd.n != 2 {
		t.Errorf("%d sends on a rerun of the stage, want 2", snd.n)
	}
}

func storetestSend(msgID string, at time.Time) store.Event {
	return store.Event{Type: "Send", MessageID: msgID, At: at}
}
