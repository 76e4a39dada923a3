package pipeline_test

import (
	"context"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/criticizer/criticizer/internal/job"
	"github.com/criticizer/criticizer/internal/pipeline"
	"github.com/criticizer/criticizer/internal/reviewers"
	"github.com/criticizer/criticizer/internal/source"
	"github.com/criticizer/criticizer/internal/store"
	"github.com/criticizer/criticizer/internal/store/memstore"
	"github.com/criticizer/criticizer/internal/store/storetest"
)

// queueRec records enqueued messages.
type queueRec struct {
	mu   sync.Mutex
	msgs []job.Message
}

func (q *queueRec) Enqueue(_ context.Context, m job.Message) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.msgs = append(q.msgs, m)
	return nil
}

// reviewerSource is a code review system whose reviewers a test sets.
type reviewerSource struct{ asked source.Reviewers }

func (s *reviewerSource) Fetch(context.Context, source.Ref) (source.Changelist, error) {
	return source.Changelist{Diff: "", Reviewers: s.asked}, nil
}

func (s *reviewerSource) Reviewers(context.Context, source.Ref) (source.Reviewers, error) {
	return s.asked, nil
}

// The reviewer refresh (a reviewer requested after the version's
// reviewers were fetched) adds only who is new, at whatever stage the job
// is: at llm the additions wait for notify; on a finished job it reopens
// it at notify and enqueues notify; a repeat (a retry, a redelivered
// webhook) adds nothing and enqueues nothing; a reviewer without an
// address gets an identity, and a later directory entry turns them into a
// recipient; a removal never takes anyone off the version.
// Rules: R-REVIEWERS-1, R-REVIEWERS-3.
func TestFetchRefresh_AddsOnlyWhoIsNew_ReopensAFinishedJob(t *testing.T) {
	ctx := context.Background()
	jobs := memstore.NewJobs(nil)
	q := &queueRec{}
	src := &reviewerSource{asked: source.Reviewers{Requested: []source.Reviewer{{Username: "alice"}, {Username: "bob"}}}}
	dir := memstore.NewDirectory(nil)
	dir.Set(ctx, "github", "alice", "alice@example.com", "t")
	f := &pipeline.Fetch{
		Base:      pipeline.Base{Jobs: jobs, Queue: q, Log: slog.New(slog.NewJSONHandler(io.Discard, nil)), Now: time.Now},
		Source:    src,
		Directory: reviewers.Overlay{Table: dir},
		Rosters:   memstore.NewRosters(),
		Unknown:   dir,
	}
	j := storetest.NewJob("o/r#1", 1)
	j.Source, j.ChangelistID, j.ID = "github", "o/r#1", job.NewID("github", "o/r#1", 1)
	j.Recipients, j.Stage, j.Status = []string{"alice@example.com"}, job.StageLLM, job.StatusInProgress
	jobs.Put(j)
	jobs.PutSourceRef(ctx, j.ID, store.SourceRef{Source: "github", Repo: "o/r", Number: 1})
	refresh := func() {
		t.Helper()
		if err := f.Handle(ctx, job.Message{JobID: j.ID, Stage: job.StageFetch, Task: job.TaskReviewers}, 1); err != nil {
			t.Fatal(err)
		}
	}

	// At llm: bob (no address) is added as an identity; nothing enqueued.
	refresh()
	got, _ := jobs.Get(ctx, j.ID)
	ids, _ := jobs.NoEmailReviewers(ctx, j.ID)
	if got.AddedRev != 1 || len(got.AddedRecipients) != 0 || len(ids) != 1 || ids[0] != "github:bob" || len(q.msgs) != 0 {
		t.Fatalf("at llm: rev %d, added %v, identities %v, enqueued %v", got.AddedRev, got.AddedRecipients, ids, q.msgs)
	}
	if u, _ := dir.Unknown(ctx, "github"); len(u) != 1 || u[0] != "bob" {
		t.Fatalf("the directory's unknown list %v, want bob", u)
	}

	// The job finishes (notify saw revision 1). A repeat of the refresh
	// adds nothing and leaves the job alone.
	got.Stage, got.Status, got.AddedSeen = job.StageDone, job.StatusSucceeded, 1
	jobs.Put(got)
	refresh()
	if again, _ := jobs.Get(ctx, j.ID); again.AddedRev != 1 || again.Stage != job.StageDone || len(q.msgs) != 0 {
		t.Fatalf("a repeat: rev %d, stage %s, enqueued %v", again.AddedRev, again.Stage, q.msgs)
	}

	// bob gets an entry; alice is taken off and carol requested: carol
	// and bob's address are added, alice stays, the job reopens at notify.
	dir.Set(ctx, "github", "bob", "bob@example.com", "t")
	src.asked = source.Reviewers{Requested: []source.Reviewer{{Username: "bob"}, {Username: "carol", Email: "carol@example.com"}}}
	refresh()
	got, _ = jobs.Get(ctx, j.ID)
	if want := []string{"alice@example.com", "bob@example.com", "carol@example.com"}; len(got.AllRecipients()) != 3 ||
		got.AllRecipients()[0] != want[0] || got.AllRecipients()[1] != want[1] || got.AllRecipients()[2] != want[2] {
		t.Fatalf("recipients %v, want %v", got.AllRecipients(), want)
	}
	if got.Stage != job.StageNotify || got.Status != job.StatusInProgress || len(q.msgs) != 1 || q.msgs[0].Stage != job.StageNotify || q.msgs[0].Task != "" {
		t.Fatalf("after an addition to a finished job: %s %s, enqueued %v; want reopened at notify and notify enqueued", got.Stage, got.Status, q.msgs)
	}

	// The job's records expired (retention): a refresh does nothing, and
	// is not a failure to retry or dead-letter.
	jobs.Expire(j.ID)
	if err := f.Handle(ctx, job.Message{JobID: j.ID, Stage: job.StageFetch, Task: job.TaskReviewers}, 1); err != nil || len(q.msgs) != 1 {
		t.Fatalf("a refresh of an expired job: %v, enqueued %v", err, q.msgs)
	}
}
