package notify_test

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/criticizer/criticizer/internal/notify"

	"github.com/criticizer/criticizer/internal/critic"
	"github.com/criticizer/criticizer/internal/delivery"
	"github.com/criticizer/criticizer/internal/job"
	"github.com/criticizer/criticizer/internal/mail"
	"github.com/criticizer/criticizer/internal/obs"
	"github.com/criticizer/criticizer/internal/pipeline"
	"github.com/criticizer/criticizer/internal/store/memstore"
	"github.com/criticizer/criticizer/internal/store/storetest"
)

// An address outside the allowed domains is settled skipped_domain and
// never sent, counted once in SkippedDomain; the others are mailed and
// the job succeeds (skipped_domain is terminal). A subdomain of an
// allowed domain is not allowed.
// Rules: R-RECIPIENT-1, R-OUTBOX-11.
func TestNotify_AllowedDomains_OthersSkippedNeverSent(t *testing.T) {
	ctx := context.Background()
	now := time.Now().UTC()
	clock := func() time.Time { return now }
	jobs, deliveries := memstore.NewJobs(clock), memstore.NewDeliveries(clock)
	r, err := mail.NewRenderer()
	if err != nil {
		t.Fatal(err)
	}
	allowed, err := delivery.ParseDomains("example.com")
	if err != nil {
		t.Fatal(err)
	}
	var logs bytes.Buffer
	snd := &sender{sent: map[string]int{}}
	n := &notify.Notify{
		Base:       pipeline.Base{Jobs: jobs, Queue: nopQueue{}, Log: obs.NewLogger(&logs, "info"), Now: clock},
		Deliveries: deliveries, Renderer: r, Sender: snd, Recipients: memstore.NewPreferences(),
		Lease: time.Minute, Margin: 2 * time.Minute, MarkTimeout: 5 * time.Second, SendTimeout: 5 * time.Second,
	}
	setGates(t, n, gateOpts{domains: allowed})
	crit, _ := json.Marshal(critic.Critique{Critic: "offline/v1", Summary: "s", Findings: []critic.Finding{}})
	j := storetest.NewJob("cl-domains", 1)
	j.Stage, j.Status, j.Critique = job.StageNotify, job.StatusInProgress, crit
	j.Recipients = []string{"ann@Example.com", "eve@attacker.example", "bob@mail.example.com"}
	jobs.Put(j)

	for attempt := 1; attempt <= 2; attempt++ {
		if err := n.Handle(ctx, job.Message{JobID: j.ID, Stage: job.StageNotify}, attempt); err != nil {
			t.Fatalf("run %d: %v", attempt, err)
		}
		if got, _ := jobs.Get(ctx, j.ID); got.Status != job.StatusSucceeded {
			t.Errorf("run %d: job %s, want succeeded (skipped_domain is terminal)", attempt, got.Status)
		}
		jobs.Put(j) // the stage again: nothing new may happen
	}
	if len(snd.sent) != 1 || snd.sent["ann@example.com"] != 1 {
		t.Fatalf("sends %v, want one, to ann@example.com only", snd.sent)
	}
	clKey := job.ChangelistKey("generic", "cl-domains")
	for _, who := range []string{"eve@attacker.example", "bob@mail.example.com"} {
		row, err := deliveries.Get(ctx, delivery.ID(clKey, who, 1))
		if err != nil || row.Status != delivery.StatusSkippedDomain || row.SkipReason != "domain" || row.NotificationID != "" ||
			!row.NotifiedAt.IsZero() || row.Attempts != 0 {
			t.Errorf("row of %s: %+v %v, want skipped_domain, never claimed", who, row.Status, err)
		}
	}
	if c := strings.Count(logs.String(), `"SkippedDomain":1`); c != 2 {
		t.Errorf("SkippedDomain counted %d times, want 2 (once per row, not per run)", c)
	}
	if strings.Contains(logs.String(), "attacker.example") {
		t.Error("a log line names the skipped address")
	}
}
