package notify_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"strings"
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

// A title edited between versions, through intake's store and notify on
// the in-memory stores: every email of the changelist keeps the subject
// of the first, and the body shows each version's own title, escaped. A
// changelist whose head predates the kept title gets the title of its
// earliest version still known, kept from then on, so a later version
// agrees after that version's job has expired; with every earlier job
// expired, the version's own.
// Rules: R-THREAD-1.
func TestNotify_TitleEdited_SubjectKeepsTheFirst_Offline(t *testing.T) {
	ctx := context.Background()
	now := time.Now().UTC()
	clock := func() time.Time { return now }
	jobs, deliveries := memstore.NewJobs(clock), memstore.NewDeliveries(clock)
	r, err := mail.NewRenderer()
	if err != nil {
		t.Fatal(err)
	}
	n := &notify.Notify{
		Base:       pipeline.Base{Jobs: jobs, Queue: nopQueue{}, Log: slog.New(slog.NewJSONHandler(io.Discard, nil)), Now: clock},
		Deliveries: deliveries, Renderer: r, Sender: &keepSender{sent: map[string]delivery.Message{}},
		Lease: time.Minute, Margin: 2 * time.Minute, MarkTimeout: 5 * time.Second, SendTimeout: 5 * time.Second,
		Titles: jobs,
	}
	crit, _ := json.Marshal(critic.Critique{Critic: "offline/v1", Summary: "s", Findings: []critic.Finding{}})
	get := func(cl string, v int) job.Job {
		t.Helper()
		j, err := jobs.Get(ctx, job.NewID("generic", cl, v))
		if err != nil {
			t.Fatal(err)
		}
		return j
	}
	accept := func(cl string, v int, title string) job.Job {
		t.Helper()
		j := storetest.NewJob(cl, v)
		j.Title, j.Stage, j.Status, j.Critique = title, job.StageNotify, job.StatusInProgress, crit
		storetest.Create(t, jobs, j, fmt.Sprintf("%s-k%d", cl, v), "b")
		return j
	}
	mailed := func(j job.Job) delivery.Message {
		t.Helper()
		if err := n.Handle(ctx, job.Message{JobID: j.ID, Stage: job.StageNotify}, 1); err != nil {
			t.Fatalf("%s: %v", j.ID, err)
		}
		row, err := deliveries.Get(ctx, delivery.ID(job.ChangelistKey("generic", j.ChangelistID), "r@example.com", j.ReviewVersion))
		if err != nil {
			t.Fatal(err)
		}
		return row.Message
	}

	v1, v2 := accept("acme-7", 1, "Add refunds"), accept("acme-7", 2, "Refunds & <credits>")
	m1, m2 := mailed(v1), mailed(v2)
	if want := "[Criticizer] acme-7: Add refunds"; m1.Subject != want || m2.Subject != want {
		t.Errorf("subjects %q and %q; want both %q", m1.Subject, m2.Subject, want)
	}
	if !strings.Contains(m2.HTML, ">Refunds &amp; &lt;credits&gt;</a></h1>") || !strings.Contains(m2.Text, "\nRefunds & <credits>\nby ") {
		t.Error("v2's body does not show its own title (escaped in the HTML)")
	}

	// A head from before the kept title: the earliest version known.
	for i, title := range []string{"Old", "Renamed", "Renamed again"} {
		accept("legacy-1", i+1, title)
	}
	jobs.ForgetThreadTitle("generic", "legacy-1")
	if got := mailed(get("legacy-1", 2)).Subject; got != "[Criticizer] legacy-1: Old" {
		t.Errorf("legacy v2: subject %q, want the earliest version's title", got)
	}
	jobs.Expire(job.NewID("generic", "legacy-1", 1))
	if got := mailed(get("legacy-1", 3)).Subject; got != "[Criticizer] legacy-1: Old" {
		t.Errorf("legacy v3 after v1 expired: subject %q, want the title kept at v2", got)
	}

	for i, title := range []string{"First", "Second", "Third"} {
		accept("legacy-2", i+1, title)
	}
	jobs.ForgetThreadTitle("generic", "legacy-2")
	jobs.Expire(job.NewID("generic", "legacy-2", 1))
	if got := mailed(get("legacy-2", 3)).Subject; got != "[Criticizer] legacy-2: Second" {
		t.Errorf("legacy-2 v3 with v1 expired: subject %q, want the earliest still known (v2)", got)
	}
	accept("legacy-3", 1, "Gone")
	accept("legacy-3", 2, "Only")
	jobs.ForgetThreadTitle("generic", "legacy-3")
	jobs.Expire(job.NewID("generic", "legacy-3", 1))
	if got := mailed(get("legacy-3", 2)).Subject; got != "[Criticizer] legacy-3: Only" {
		t.Errorf("legacy-3 v2, no earlier job left: subject %q, want its own title", got)
	}
}
