package notify_test

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/criticizer/criticizer/internal/notify"

	"github.com/criticizer/criticizer/internal/delivery"
	"github.com/criticizer/criticizer/internal/job"
	"github.com/criticizer/criticizer/internal/mail"
	"github.com/criticizer/criticizer/internal/pipeline"
	"github.com/criticizer/criticizer/internal/reviewers"
	"github.com/criticizer/criticizer/internal/source"
	"github.com/criticizer/criticizer/internal/store"
	"github.com/criticizer/criticizer/internal/store/memstore"
	"github.com/criticizer/criticizer/internal/webhook"
)

// textSender keeps the text of every e-mail sent.
type textSender struct {
	mu   sync.Mutex
	text map[string]string
}

func (s *textSender) Send(_ context.Context, _ string, to string, m delivery.Message) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.text[to] = m.Text
	return "ses-" + to, nil
}

// A real GitLab hook of a merge request reopened by someone other than
// its author (real6543 reopens the merge request of account 29352663):
// the hook does not say who the author is, so the fetch stage takes it
// from the merge request (GET …/merge_requests/:iid, author root here),
// and the model's prompt and the e-mail's "by" line name root, never the
// reopener.
// Rules: R-SOURCE-1.
func TestGitLabReopenByAnotherUser_PromptAndEmailNameTheAuthor(t *testing.T) {
	ctx := context.Background()
	read := func(name string) []byte {
		b, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	body := read("../webhook/testdata/gitlab/merge_request.woodpecker.reopen-by-other-user.json")
	h := http.Header{}
	h.Set("Content-Type", "application/json")
	h.Set(webhook.GitLabEventHeader, "Merge Request Hook")
	h.Set(webhook.GitLabTokenHeader, "t")
	h.Set(webhook.GitLabEventUUIDHeader, "13792a34-cac6-4fda-95a8-c58e00a3954e")
	ev, err := webhook.GitLab{Token: []byte("t")}.ParseEvent(webhook.Request{Header: h.Get, Body: body})
	if err != nil || ev.Skip != "" {
		t.Fatalf("ParseEvent: %+v, %v", ev, err)
	}

	mrPath := "/api/v4/projects/demoaccount2-commits-group/test_ci_tmp/merge_requests/1"
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		switch r.URL.Path {
		case mrPath:
			w.Write(read("../source/testdata/gitlab/merge_request.json")) // author: root
		case mrPath + "/versions":
			w.Write([]byte(`[{"id":110,"head_commit_sha":"` + ev.HeadSHA + `","base_commit_sha":"ae73cb07c9eeaf35924a10f713b364d32b2dd34f"}]`))
		case mrPath + "/versions/110":
			w.Write(read("../source/testdata/gitlab/version.json"))
		case mrPath + "/reviewers":
			w.Write(read("../source/testdata/gitlab/reviewers.json")) // user1, user2
		default:
			http.NotFound(w, r)
		}
	}))
	defer api.Close()

	now := time.Now().UTC()
	clock := func() time.Time { return now }
	jobs, blobs := memstore.NewJobs(clock), &memBlobs{}
	log := slog.New(slog.NewJSONHandler(io.Discard, nil))
	j := job.Job{ID: job.NewID("gitlab", ev.Change.ChangelistID, 1), Source: "gitlab", ChangelistID: ev.Change.ChangelistID, ReviewVersion: 1,
		Title: ev.Change.Title, URL: ev.Change.URL, Author: ev.Change.Author,
		Status: job.StatusAccepted, Stage: job.StageFetch, Attempts: job.Attempts{}, CreatedAt: now, UpdatedAt: now}
	jobs.Put(j)
	jobs.PutSourceRef(ctx, j.ID, store.SourceRef{Source: "gitlab", Repo: ev.Repo, Number: ev.Number, HeadSHA: ev.HeadSHA})
	dir := memstore.NewDirectory(nil)
	dir.Set(ctx, "gitlab", "user1", "user1@example.com", "t")

	fetch := &pipeline.Fetch{Base: pipeline.Base{Jobs: jobs, Blobs: blobs, Queue: nopQueue{}, Log: log, Now: clock},
		Source:    source.Router{"gitlab": &source.GitLab{BaseURL: api.URL + "/api/v4", Token: "api", Client: api.Client(), Now: clock}},
		Directory: reviewers.Overlay{Table: dir}, Rosters: memstore.NewRosters()}
	if err := fetch.Handle(ctx, job.Message{JobID: j.ID, Stage: job.StageFetch}, 1); err != nil {
		t.Fatal(err)
	}
	crit := &recordingCritic{}
	llm := &pipeline.LLM{Base: pipeline.Base{Jobs: jobs, Blobs: blobs, Queue: nopQueue{}, Log: log, Now: clock}, Critic: crit, LookBack: pipeline.DefaultLookBack}
	if err := llm.Handle(ctx, job.Message{JobID: j.ID, Stage: job.StageLLM}, 1); err != nil {
		t.Fatal(err)
	}
	r, err := mail.NewRenderer()
	if err != nil {
		t.Fatal(err)
	}
	snd := &textSender{text: map[string]string{}}
	n := &notify.Notify{Base: pipeline.Base{Jobs: jobs, Queue: nopQueue{}, Log: log, Now: clock},
		Deliveries: memstore.NewDeliveries(clock), Renderer: r, Sender: snd, Lease: time.Minute, Margin: time.Minute,
		MarkTimeout: 5 * time.Second, SendTimeout: 5 * time.Second}
	if err := n.Handle(ctx, job.Message{JobID: j.ID, Stage: job.StageNotify}, 1); err != nil {
		t.Fatal(err)
	}

	if crit.in.Author != "root" {
		t.Errorf("the model was told the author is %q, want root (the merge request's author)", crit.in.Author)
	}
	text, ok := snd.text["user1@example.com"]
	if !ok {
		t.Fatalf("user1 was not mailed: %v", snd.text)
	}
	if !strings.Contains(text, "by root") || strings.Contains(text, "real6543") {
		t.Errorf("the e-mail does not name root as the author:\n%s", text)
	}
}
