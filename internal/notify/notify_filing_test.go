package notify_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
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
	"github.com/criticizer/criticizer/internal/store/memstore"
	"github.com/criticizer/criticizer/internal/store/storetest"
)

// keepSender keeps every message it is given, by recipient and version.
type keepSender struct {
	mu   sync.Mutex
	sent map[string]delivery.Message // "<recipient> v<n>" -> message
}

func (s *keepSender) Send(_ context.Context, _ string, to string, m delivery.Message) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	v := "v1"
	if strings.Contains(m.Text, " version 2\n") {
		v = "v2"
	}
	s.sent[to+" "+v] = m
	return "ses-" + to + "-" + v, nil
}

// Two versions of one changelist through notify on the in-memory store:
// each recipient's two emails share the subject and the conversation root
// (References and In-Reply-To), different recipients have different roots;
// every email carries the deploy's List-Id, why its recipient got it (the
// author named by address, a reviewer, one added to the version after its
// reviewers were fetched), and the highest severity of its critique's
// findings. The values are the rendered row's, so a retry sends the same.
// Rules: R-THREAD-1, R-MAIL-4.
func TestNotify_VersionsShareThread_RowsCarryListReasonSeverity_Offline(t *testing.T) {
	ctx := context.Background()
	now := time.Now().UTC()
	clock := func() time.Time { return now }
	jobs, deliveries := memstore.NewJobs(clock), memstore.NewDeliveries(clock)
	r, err := mail.NewRenderer()
	if err != nil {
		t.Fatal(err)
	}
	snd := &keepSender{sent: map[string]delivery.Message{}}
	n := &notify.Notify{
		Base:       pipeline.Base{Jobs: jobs, Queue: nopQueue{}, Log: slog.New(slog.NewJSONHandler(io.Discard, nil)), Now: clock},
		Deliveries: deliveries, Renderer: r, Sender: snd,
		Lease: time.Minute, Margin: 2 * time.Minute, MarkTimeout: 5 * time.Second, SendTimeout: 5 * time.Second,
		Threads: mail.NewThreads(strings.Repeat("k", 32), "reviews.example.org"), ListID: "criticizer.reviews.example.org",
	}
	severities := map[int]critic.Severity{1: critic.SeverityWarning, 2: critic.SeverityError}
	for v := 1; v <= 2; v++ {
		crit, _ := json.Marshal(critic.Critique{Critic: "offline/v1", Summary: "s", Findings: []critic.Finding{
			{File: "a.go", Line: 1, Severity: critic.SeverityInfo, Rule: "todo-added", Message: "m"},
			{File: "a.go", Line: 2, Severity: severities[v], Rule: "r", Message: "m"},
		}})
		j := storetest.NewJob("acme-7", v)
		j.Stage, j.Status, j.Critique = job.StageNotify, job.StatusInProgress, crit
		j.Author = "Ana@Example.com"
		j.Recipients = []string{"rev@example.com", "ana@example.com"}
		j.AddedRecipients = []string{"late@example.com"}
		jobs.Put(j)
		if err := n.Handle(ctx, job.Message{JobID: j.ID, Stage: job.StageNotify}, 1); err != nil {
			t.Fatalf("v%d: %v", v, err)
		}
	}
	if len(snd.sent) != 6 {
		t.Fatalf("%d emails, want 3 recipients × 2 versions", len(snd.sent))
	}
	reasons := map[string]string{"rev@example.com": mail.ReasonReviewer, "ana@example.com": mail.ReasonAuthor, "late@example.com": mail.ReasonAdded}
	roots := map[string]string{}
	for rcpt, reason := range reasons {
		v1, v2 := snd.sent[rcpt+" v1"], snd.sent[rcpt+" v2"]
		if v1.Subject != v2.Subject || v1.Subject != "[Criticizer] acme-7: t" {
			t.Errorf("%s: subjects %q and %q; want both %q", rcpt, v1.Subject, v2.Subject, "[Criticizer] acme-7: t")
		}
		if v1.Thread == "" || v1.Thread != v2.Thread || !strings.HasPrefix(v1.Thread, mail.ThreadRootPrefix) || !strings.HasSuffix(v1.Thread, "@reviews.example.org>") {
			t.Errorf("%s: conversation roots %q and %q; want one root under the sender's domain", rcpt, v1.Thread, v2.Thread)
		}
		if other, ok := roots[v1.Thread]; ok {
			t.Errorf("%s and %s share the conversation root %s", rcpt, other, v1.Thread)
		}
		roots[v1.Thread] = rcpt
		for v, m := range map[int]delivery.Message{1: v1, 2: v2} {
			if m.ListID != "Criticizer <criticizer.reviews.example.org>" || m.Reason != reason || m.Severity != string(severities[v]) {
				t.Errorf("%s v%d: List-Id %q, reason %q, severity %q; want the deploy's list, %q, %q", rcpt, v, m.ListID, m.Reason, m.Severity, reason, severities[v])
			}
			row, err := deliveries.Get(ctx, delivery.ID(job.ChangelistKey("generic", "acme-7"), rcpt, v))
			if err != nil {
				t.Fatal(err)
			}
			if row.Message != m {
				t.Errorf("%s v%d: the message sent is not the row's rendered message", rcpt, v)
			}
		}
	}
}
