package pipeline_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
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

type invitedFixture struct {
	f       *pipeline.Fetch
	jobs    *memstore.Jobs
	src     *reviewerSource
	rosters *memstore.Rosters
	q       *queueRec
	logs    *bytes.Buffer
}

func newInvitedFixture(t *testing.T) *invitedFixture {
	t.Helper()
	ctx := context.Background()
	x := &invitedFixture{jobs: memstore.NewJobs(nil), src: &reviewerSource{}, rosters: memstore.NewRosters(), q: &queueRec{}, logs: &bytes.Buffer{}}
	dir := memstore.NewDirectory(nil)
	for _, u := range []string{"alice", "carol", "mallory"} {
		dir.Set(ctx, "github", u, u+"@example.com", "t")
	}
	x.f = &pipeline.Fetch{
		Base:   pipeline.Base{Jobs: x.jobs, Blobs: oneBlob(""), Queue: x.q, Log: slog.New(slog.NewJSONHandler(x.logs, nil)), Now: time.Now},
		Source: x.src, Directory: reviewers.Overlay{Table: dir}, Rosters: x.rosters, MaxTeamMembers: 3,
	}
	return x
}

// fetch runs the fetch stage for version v of github o/r#2 and returns
// the job.
func (x *invitedFixture) fetch(t *testing.T, v int) job.Job {
	t.Helper()
	ctx := context.Background()
	j := storetest.NewJob("o/r#2", v)
	j.Source, j.ID, j.Author, j.Recipients = "github", job.NewID("github", "o/r#2", v), "octo", nil
	x.jobs.Put(j)
	x.jobs.PutSourceRef(ctx, j.ID, store.SourceRef{Source: "github", Repo: "o/r", Number: 2})
	if err := x.f.Handle(ctx, job.Message{JobID: j.ID, Stage: job.StageFetch}, 1); err != nil {
		t.Fatal(err)
	}
	got, err := x.jobs.Get(ctx, j.ID)
	if err != nil {
		t.Fatal(err)
	}
	return got
}

// A review by someone nobody asked (anyone who can see a GitHub pull
// request can submit one) does not make them a recipient, now or on a
// later version; a reviewer the source asked, or a review request named,
// keeps getting versions after their review, when GitHub no longer lists
// them as requested.
// Rules: R-REVIEWERS-5.
func TestFetch_ReviewsByUninvitedPeopleMailNobody(t *testing.T) {
	ctx := context.Background()
	x := newInvitedFixture(t)
	at := time.Date(2026, 11, 27, 9, 0, 0, 0, time.UTC)
	x.src.asked = source.Reviewers{Requested: []source.Reviewer{{Username: "alice"}},
		Reviewed: []source.Reviewer{{Username: "mallory", Reviewed: at}}}
	// mallory's review also reached the roster (pull_request_review).
	if _, err := x.rosters.Apply(ctx, "github", "o/r#2", []reviewers.Event{{Username: "mallory", Kind: reviewers.Reviewed, At: at}}); err != nil {
		t.Fatal(err)
	}
	v1 := x.fetch(t, 1)
	if got := v1.AllRecipients(); !slices.Equal(got, []string{"alice@example.com"}) {
		t.Fatalf("version 1 goes to %v, want alice only (mallory reviewed uninvited)", got)
	}
	if !strings.Contains(x.logs.String(), `"UninvitedReviewers":1`) {
		t.Fatalf("uninvited review not counted: %s", x.logs.String())
	}

	// carol was requested (a review_requested webhook) and reviewed; alice
	// reviewed; GitHub lists neither as requested any more. mallory
	// reviews again.
	if _, err := x.rosters.Apply(ctx, "github", "o/r#2", []reviewers.Event{
		{Username: "carol", Kind: reviewers.Requested, At: at.Add(time.Minute)},
		{Username: "carol", Kind: reviewers.Reviewed, At: at.Add(2 * time.Minute)},
	}); err != nil {
		t.Fatal(err)
	}
	x.src.asked = source.Reviewers{Requested: []source.Reviewer{}, Reviewed: []source.Reviewer{
		{Username: "alice", Reviewed: at.Add(time.Minute)}, {Username: "carol", Reviewed: at.Add(2 * time.Minute)},
		{Username: "mallory", Reviewed: at.Add(3 * time.Minute)}}}
	v2 := x.fetch(t, 2)
	if got := v2.AllRecipients(); !slices.Equal(got, []string{"alice@example.com", "carol@example.com"}) {
		t.Fatalf("version 2 goes to %v, want alice (a reviewer of version 1) and carol (requested), not mallory", got)
	}
}

// A requested team mails at most the cap of its members; the rest are
// counted on the job and in a metric, not mailed. People requested by
// name are not capped, and the refresh keeps the same cap.
// Rules: R-REVIEWERS-6.
func TestFetch_TeamExpansionCapped(t *testing.T) {
	ctx := context.Background()
	x := newInvitedFixture(t)
	req := []source.Reviewer{{Username: "bob", Email: "bob@example.com"}}
	for i := range 30 {
		req = append(req, source.Reviewer{Username: fmt.Sprintf("m%02d", i), Email: fmt.Sprintf("m%02d@example.com", i), Team: "everyone"})
	}
	x.src.asked = source.Reviewers{Requested: req}
	v1 := x.fetch(t, 1)
	want := []string{"bob@example.com", "m00@example.com", "m01@example.com", "m02@example.com"}
	if got := v1.AllRecipients(); !slices.Equal(got, want) {
		t.Fatalf("recipients %v, want %v", got, want)
	}
	if v1.TeamMembersNotMailed["everyone"] != 27 {
		t.Fatalf("team members not mailed %v, want everyone: 27", v1.TeamMembersNotMailed)
	}
	if !strings.Contains(x.logs.String(), `"TeamMembersNotMailed":27`) {
		t.Fatalf("not counted: %s", x.logs.String())
	}
	// A reviewer refresh of the version adds nobody past the cap.
	if err := x.f.Handle(ctx, job.Message{JobID: v1.ID, Stage: job.StageFetch, Task: job.TaskReviewers}, 1); err != nil {
		t.Fatal(err)
	}
	if got, _ := x.jobs.Get(ctx, v1.ID); len(got.AllRecipients()) != 4 {
		t.Fatalf("after a refresh: %v", got.AllRecipients())
	}
}

// A version that ended no_recipients is reviewed once a reviewer with an
// address is added to it: back at the llm stage, llm enqueued.
// Rules: R-BUDGET-2.
func TestFetchRefresh_NoRecipientsThenAnAddress_ReviewStarts(t *testing.T) {
	ctx := context.Background()
	x := newInvitedFixture(t)
	x.f.Log = slog.New(slog.NewJSONHandler(io.Discard, nil))
	j := storetest.NewJob("o/r#2", 1)
	j.Source, j.ID, j.Recipients = "github", job.NewID("github", "o/r#2", 1), nil
	j.Stage, j.Status, j.SkipReason = job.StageLLM, job.StatusNoRecipients, "no reviewer has an address"
	x.jobs.Put(j)
	x.jobs.PutSourceRef(ctx, j.ID, store.SourceRef{Source: "github", Repo: "o/r", Number: 2})
	x.src.asked = source.Reviewers{Requested: []source.Reviewer{{Username: "alice"}}}
	if err := x.f.Handle(ctx, job.Message{JobID: j.ID, Stage: job.StageFetch, Task: job.TaskReviewers}, 1); err != nil {
		t.Fatal(err)
	}
	got, _ := x.jobs.Get(ctx, j.ID)
	if got.Status != job.StatusInProgress || got.Stage != job.StageLLM || len(x.q.msgs) != 1 || x.q.msgs[0].Stage != job.StageLLM {
		t.Fatalf("job %s at %s, enqueued %v; want in_progress at llm, llm enqueued", got.Status, got.Stage, x.q.msgs)
	}
}
