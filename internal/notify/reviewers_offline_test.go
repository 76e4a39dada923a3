package notify_test

import (
	"context"
	"encoding/json"
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
	"github.com/criticizer/criticizer/internal/store/memstore"
	"github.com/criticizer/criticizer/internal/store/storetest"
)

// hookSender sends like sender, and calls during (once) in the middle of
// the first send: something another worker does while notify runs.
type hookSender struct {
	sender
	once   sync.Once
	during func()
}

func (h *hookSender) Send(ctx context.Context, id, to string, m delivery.Message) (string, error) {
	h.once.Do(h.during)
	return h.sender.Send(ctx, id, to, m)
}

// A reviewer added to the version while notify is mailing the others is
// mailed before the job is closed: notify's verdict is conditioned on the
// additions it read, so it runs again for the newcomer. Without that
// condition the job closes as succeeded and the message the refresh
// enqueued finds it done: the newcomer is never mailed.
// Rules: R-REVIEWERS-1, R-OUTBOX-8.
func TestNotify_ReviewerAddedWhileItRuns_MailedBeforeTheJobCloses(t *testing.T) {
	ctx := context.Background()
	now := time.Now().UTC()
	clock := func() time.Time { return now }
	jobs, deliveries := memstore.NewJobs(clock), memstore.NewDeliveries(clock)
	r, err := mail.NewRenderer()
	if err != nil {
		t.Fatal(err)
	}
	crit, _ := json.Marshal(critic.Critique{Critic: "offline/v1", Summary: "s", Findings: []critic.Finding{}})
	j := storetest.NewJob("cl-late", 1)
	j.Stage, j.Status, j.Critique, j.Recipients = job.StageNotify, job.StatusInProgress, crit, []string{"a@example.com"}
	jobs.Put(j)
	snd := &hookSender{sender: sender{sent: map[string]int{}}, during: func() {
		if _, err := jobs.AddReviewers(ctx, j.ID, []string{"late@example.com"}, nil); err != nil {
			t.Error(err)
		}
	}}
	n := &notify.Notify{
		Base:       pipeline.Base{Jobs: jobs, Queue: nopQueue{}, Log: slog.New(slog.NewJSONHandler(io.Discard, nil)), Now: clock},
		Deliveries: deliveries, Renderer: r, Sender: snd, Lease: time.Minute, Margin: time.Minute,
		MarkTimeout: 5 * time.Second, SendTimeout: 5 * time.Second,
	}
	if err := n.Handle(ctx, job.Message{JobID: j.ID, Stage: job.StageNotify}, 1); err != nil {
		t.Fatal(err)
	}
	if snd.sent["a@example.com"] != 1 || snd.sent["late@example.com"] != 1 {
		t.Fatalf("sends %v, want one each, the late reviewer's before the job closed", snd.sent)
	}
	got, _ := jobs.Get(ctx, j.ID)
	if got.Status != job.StatusSucceeded || got.AddedSeen != 1 {
		t.Fatalf("job %s, added seen %d; want succeeded having seen the addition", got.Status, got.AddedSeen)
	}
}
