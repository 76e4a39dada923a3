package sweep_test

import (
	"context"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/criticizer/criticizer/internal/delivery"
	"github.com/criticizer/criticizer/internal/drain"
	"github.com/criticizer/criticizer/internal/job"
	"github.com/criticizer/criticizer/internal/store"
	"github.com/criticizer/criticizer/internal/store/memstore"
	"github.com/criticizer/criticizer/internal/store/storetest"
	"github.com/criticizer/criticizer/internal/sweep"
)

type queue struct {
	mu   sync.Mutex
	msgs []job.Message
}

func (q *queue) Enqueue(_ context.Context, m job.Message) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.msgs = append(q.msgs, m)
	return nil
}

// One sweep on the in-memory store (the contract DynamoDB keeps, by the
// conformance suite): a job whose stage has not moved is enqueued again
// at its stage; a row stuck in sending that no notifier watches hands its
// job to notify; a row marked sent that the evidence path passed without
// an event moves to reconciling and its job to needs_intervention; a
// finished job and a sent row with evidence are left alone.
// Rules: R-STAGE-8, R-RECON-1, R-RECON-3.
func TestSweep_StuckJobsStuckSendsAndSentWithoutEvidence(t *testing.T) {
	ctx := context.Background()
	now := time.Now().UTC()
	clock := func() time.Time { return now }
	jobs, deliveries, ev, q := memstore.NewJobs(clock), memstore.NewDeliveries(clock), memstore.NewEvidence(clock), &queue{}

	stuck := storetest.NewJob("cl-stuck", 1)
	stuck.Stage, stuck.Status, stuck.UpdatedAt = job.StageLLM, job.StatusInProgress, now.Add(-time.Hour)
	done := storetest.NewJob("cl-done", 1)
	done.Stage, done.Status, done.UpdatedAt = job.StageDone, job.StatusSucceeded, now.Add(-time.Hour)
	sentJob := storetest.NewJob("cl-sent", 1)
	sentJob.Stage, sentJob.Status, sentJob.UpdatedAt = job.StageDone, job.StatusSucceeded, now.Add(-time.Hour)
	sendJob := storetest.NewJob("cl-sending", 1)
	sendJob.Stage, sendJob.Status, sendJob.UpdatedAt = job.StageNotify, job.StatusInProgress, now
	for _, j := range []job.Job{stuck, done, sentJob, sendJob} {
		jobs.Put(j)
	}
	row := func(id string, j job.ID) {
		r := storetest.NewRow(id)
		r.JobID = j
		if _, _, err := deliveries.Ensure(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	// Sent an hour ago, never confirmed; another sent and confirmed.
	row("d_unconfirmed", sentJob.ID)
	row("d_confirmed", sentJob.ID)
	now = now.Add(-time.Hour)
	for _, id := range []string{"d_unconfirmed", "d_confirmed"} {
		if _, err := deliveries.Claim(ctx, id, "t", time.Minute); err != nil {
			t.Fatal(err)
		}
		if _, err := deliveries.MarkSent(ctx, id, "t", "ses-"+id); err != nil {
			t.Fatal(err)
		}
	}
	if _, _, err := deliveries.RecordEvent(ctx, "d_confirmed", storetestEvent("ses-d_confirmed", now)); err != nil {
		t.Fatal(err)
	}
	// A send whose answer was lost, its lease long over, nobody watching.
	row("d_sending", sendJob.ID)
	if _, err := deliveries.Claim(ctx, "d_sending", "t", time.Minute); err != nil {
		t.Fatal(err)
	}
	now = now.Add(time.Hour)
	// The evidence path has recorded events up to a minute ago, and the
	// sweep finds the feedback queue and its DLQ empty: it has processed
	// everything that reached it before the counters' lag.
	if err := ev.Advance(ctx, "set", now.Add(-time.Minute)); err != nil {
		t.Fatal(err)
	}
	counter := &counts{}
	check := &drain.Checker{Counter: counter, Queue: "fb", DLQ: "fb-dlq", Lag: 2 * time.Minute, Evidence: ev, Set: "set", Now: clock}

	s := &sweep.Sweeper{Jobs: jobs, Deliveries: deliveries, Evidence: ev, ConfigurationSet: "set", Queue: q, Drain: check,
		Log: slog.New(slog.NewJSONHandler(io.Discard, nil)), Now: clock,
		StuckAfter: 10 * time.Minute, EvidenceWindow: 15 * time.Minute, Margin: 2 * time.Minute}
	rep, err := s.Run(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if rep.JobsRequeued != 1 || rep.StuckSending != 1 || rep.OrderingViolations != 1 {
		t.Errorf("report %+v, want 1 requeued, 1 stuck send, 1 ordering violation", rep)
	}
	want := map[job.Message]bool{{JobID: stuck.ID, Stage: job.StageLLM}: true, {JobID: sendJob.ID, Stage: job.StageNotify}: true}
	if len(q.msgs) != 2 || !want[q.msgs[0]] || !want[q.msgs[1]] {
		t.Errorf("enqueued %v, want %v", q.msgs, want)
	}
	if r, _ := deliveries.Get(ctx, "d_unconfirmed"); r.Status != delivery.StatusReconciling {
		t.Errorf("unconfirmed row %s, want reconciling", r.Status)
	}
	if r, _ := deliveries.Get(ctx, "d_confirmed"); r.Status != delivery.StatusSent {
		t.Errorf("confirmed row %s, want sent", r.Status)
	}
	if j, _ := jobs.Get(ctx, sentJob.ID); j.Status != job.StatusNeedsIntervention {
		t.Errorf("job of the unconfirmed row %s, want needs_intervention", j.Status)
	}
	if j, _ := jobs.Get(ctx, done.ID); j.Status != job.StatusSucceeded {
		t.Errorf("finished job %s, want it left alone", j.Status)
	}
	if st, _ := ev.State(ctx, "set"); !st.Drained.Equal(now.Add(-2 * time.Minute)) {
		t.Errorf("drain time %v, want the sweep's reading less the lag", st.Drained)
	}
	if len(counter.read) != 3 || counter.read[1] != "fb-dlq" {
		t.Errorf("queues read %v, want the queue, its DLQ, the queue", counter.read)
	}

	// While the evidence path is behind the send, silence proves nothing.
	now2 := now
	ev2 := memstore.NewEvidence(clock)
	_ = ev2.Advance(ctx, "set", now2.Add(-2*time.Hour))
	outbox2 := memstore.NewDeliveries(clock)
	r := storetest.NewRow("d_x")
	r.JobID = sentJob.ID
	_, _, _ = outbox2.Ensure(ctx, r)
	now = now2.Add(-time.Hour)
	_, _ = outbox2.Claim(ctx, "d_x", "t", time.Minute)
	_, _ = outbox2.MarkSent(ctx, "d_x", "t", "ses-x")
	now = now2
	s.Deliveries, s.Evidence, s.Drain = outbox2, ev2, nil
	if rep, err := s.Run(ctx); err != nil || rep.OrderingViolations != 0 {
		t.Errorf("behind the send: %+v %v, want no violation", rep, err)
	}
	// Newer events recorded, but the feedback queue never found empty (an
	// event of the send may still be in it): silence proves nothing.
	_ = ev2.Advance(ctx, "set", now2)
	counter.busy = true
	s.Drain = &drain.Checker{Counter: counter, Queue: "fb", DLQ: "fb-dlq", Lag: 2 * time.Minute, Evidence: ev2, Set: "set", Now: clock}
	if rep, err := s.Run(ctx); err != nil || rep.OrderingViolations != 0 {
		t.Errorf("queue not drained: %+v %v, want no violation", rep, err)
	}
}

// counts is a feedback queue and DLQ that are empty, or (busy) hold a
// message in flight.
type counts struct {
	busy bool
	read []string
}

func (c *counts) Counts(_ context.Context, url string) (drain.Counts, error) {
	c.read = append(c.read, url)
	if c.busy {
		return drain.Counts{InFlight: 1}, nil
	}
	return drain.Counts{}, nil
}

func storetestEvent(msgID string, at time.Time) store.Event {
	return store.Event{Type: "Send", MessageID: msgID, At: at}
}

// EvidenceLag is how long the row that has waited longest on the evidence
// path has waited since its send, whatever the path's state: a path that
// never drained (it used to report exactly the window, below the alarm's
// threshold) shows the whole wait, and so does one that drained before
// the send. No row waiting: 0.
// Rules: R-RECON-3.
func TestSweep_EvidenceLagIsTheLongestWait(t *testing.T) {
	ctx := context.Background()
	now := time.Now().UTC()
	clock := func() time.Time { return now }
	jobs, deliveries, ev := memstore.NewJobs(clock), memstore.NewDeliveries(clock), memstore.NewEvidence(clock)
	s := &sweep.Sweeper{Jobs: jobs, Deliveries: deliveries, Evidence: ev, ConfigurationSet: "set", Queue: &queue{},
		Log: slog.New(slog.NewJSONHandler(io.Discard, nil)), Now: clock,
		StuckAfter: 10 * time.Minute, EvidenceWindow: 15 * time.Minute, Margin: 2 * time.Minute}
	if rep, err := s.Run(ctx); err != nil || rep.EvidenceLagSeconds != 0 {
		t.Fatalf("no row waiting: %+v %v, want EvidenceLag 0", rep, err)
	}
	j := storetest.NewJob("cl-lag", 1)
	j.Stage, j.Status, j.UpdatedAt = job.StageNotify, job.StatusInProgress, now
	jobs.Put(j)
	r := storetest.NewRow("d_lag")
	r.JobID = j.ID
	if _, _, err := deliveries.Ensure(ctx, r); err != nil {
		t.Fatal(err)
	}
	if _, err := deliveries.Claim(ctx, "d_lag", "t", time.Minute); err != nil { // lease until now+1m
		t.Fatal(err)
	}
	now = now.Add(3 * time.Hour) // never drained, three hours on
	rep, err := s.Run(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if want := (3*time.Hour - time.Minute).Seconds(); rep.EvidenceLagSeconds != want {
		t.Errorf("never drained: EvidenceLag %v s, want the wait since the send, %v s", rep.EvidenceLagSeconds, want)
	}
	_ = ev.Drain(ctx, "set", now.Add(-time.Second)) // drained just now, but the row still waits
	if rep, _ := s.Run(ctx); rep.EvidenceLagSeconds < (2 * time.Hour).Seconds() {
		t.Errorf("drained, row still waiting: EvidenceLag %v s, want its whole wait", rep.EvidenceLagSeconds)
	}
}

// A reply's confirmation stuck in sending is handed back to notify on
// its own reply task (not its job's run, which would not look at it),
// next to a row of the same job; one marked sent without evidence waits
// for an operator without touching the answered job's outcome.
// Rules: R-REPLY-5, R-RECON-1.
func TestSweep_ReplyConfirmationHandedBackOnItsTask(t *testing.T) {
	ctx := context.Background()
	now := time.Now().UTC()
	clock := func() time.Time { return now }
	jobs, deliveries, ev, q := memstore.NewJobs(clock), memstore.NewDeliveries(clock), memstore.NewEvidence(clock), &queue{}
	j := storetest.NewJob("cl-answered", 1)
	j.Stage, j.Status, j.UpdatedAt = job.StageNotify, job.StatusInProgress, now
	jobs.Put(j)
	for _, id := range []string{"d_critique", delivery.ReplyID("ses-1"), delivery.ReplyID("ses-2")} {
		r := storetest.NewRow(id)
		r.JobID = j.ID
		if id != "d_critique" {
			r.Kind = delivery.KindReply
		}
		if _, _, err := deliveries.Ensure(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	now = now.Add(-time.Hour)
	for _, id := range []string{"d_critique", delivery.ReplyID("ses-1"), delivery.ReplyID("ses-2")} {
		if _, err := deliveries.Claim(ctx, id, "t", time.Minute); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := deliveries.MarkSent(ctx, delivery.ReplyID("ses-2"), "t", "ses-sent"); err != nil {
		t.Fatal(err)
	}
	now = now.Add(time.Hour)
	_ = ev.Advance(ctx, "set", now.Add(-time.Minute))
	_ = ev.Drain(ctx, "set", now.Add(-time.Minute))
	s := &sweep.Sweeper{Jobs: jobs, Deliveries: deliveries, Evidence: ev, ConfigurationSet: "set", Queue: q,
		Log: slog.New(slog.NewJSONHandler(io.Discard, nil)), Now: clock,
		StuckAfter: 10 * time.Minute, EvidenceWindow: 15 * time.Minute, Margin: 2 * time.Minute}
	if _, err := s.Run(ctx); err != nil {
		t.Fatal(err)
	}
	want := map[job.Message]bool{
		{JobID: j.ID, Stage: job.StageNotify}: true,
		{JobID: j.ID, Stage: job.StageNotify, Task: job.TaskReply, Delivery: delivery.ReplyID("ses-1")}: true,
	}
	if len(q.msgs) != 2 || !want[q.msgs[0]] || !want[q.msgs[1]] {
		t.Errorf("enqueued %v, want the job's run and the confirmation's task", q.msgs)
	}
	if r, _ := deliveries.Get(ctx, delivery.ReplyID("ses-2")); r.Status != delivery.StatusReconciling {
		t.Errorf("confirmation sent without evidence: %s, want reconciling", r.Status)
	}
	if got, _ := jobs.Get(ctx, j.ID); got.Status != job.StatusInProgress {
		t.Errorf("answered job %s, want its outcome untouched", got.Status)
	}
}

type postSweeper struct {
	now    time.Time
	settle time.Duration
}

func (p *postSweeper) Sweep(_ context.Context, now time.Time, settle time.Duration) (int, error) {
	p.now, p.settle = now, settle
	return 3, nil
}

// Each sweep hands the post rows left unsent back to notify
// (posting.Posting.Sweep), rows younger than the stuck-after left to
// their own message, and reports how many.
// Rules: R-CHANNEL-5.
func TestSweep_UnsentPostsHandedBack(t *testing.T) {
	ctx := context.Background()
	now := time.Now().UTC()
	clock := func() time.Time { return now }
	ps := &postSweeper{}
	s := &sweep.Sweeper{Jobs: memstore.NewJobs(clock), Deliveries: memstore.NewDeliveries(clock), Queue: &queue{}, Posts: ps,
		Log: slog.New(slog.NewJSONHandler(io.Discard, nil)), Now: clock, StuckAfter: 10 * time.Minute, EvidenceWindow: 15 * time.Minute}
	rep, err := s.Run(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if rep.PostsRequeued != 3 || !ps.now.Equal(now) || ps.settle != 10*time.Minute {
		t.Fatalf("report %+v, swept at %s settle %s", rep, ps.now, ps.settle)
	}
}
