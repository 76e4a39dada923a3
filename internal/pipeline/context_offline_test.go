package pipeline_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/criticizer/criticizer/internal/critic"
	"github.com/criticizer/criticizer/internal/job"
	"github.com/criticizer/criticizer/internal/pipeline"
	"github.com/criticizer/criticizer/internal/retry"
	"github.com/criticizer/criticizer/internal/reviewers"
	"github.com/criticizer/criticizer/internal/source"
	"github.com/criticizer/criticizer/internal/store"
	"github.com/criticizer/criticizer/internal/store/memstore"
)

// headSource is a code host whose change edits n Go files, each one
// line in a function, and which serves them at the head: svc/f03.go is
// over the cap, f04 is 404, f05 fails with a 5xx.
type headSource struct {
	n     int
	mu    sync.Mutex
	reads []string
	refs  []string
	limit int
}

func headGoFile(i int, changed bool) string {
	var b strings.Builder
	fmt.Fprintf(&b, "package svc\n\nfunc F%02d(x int) int {\n", i)
	for n := 4; n <= 20; n++ {
		l := fmt.Sprintf("\tx += %d", n)
		if n == 12 && changed {
			l += " * 2"
		}
		b.WriteString(l + "\n")
	}
	b.WriteString("\treturn x\n}\n")
	return b.String()
}

func (s *headSource) Fetch(context.Context, source.Ref) (source.Changelist, error) {
	var d strings.Builder
	for i := range s.n {
		p := fmt.Sprintf("svc/f%02d.go", i)
		fmt.Fprintf(&d, "diff --git a/%s b/%s\n--- a/%s\n+++ b/%s\n@@ -11,3 +11,3 @@\n \tx += 11\n-\tx += 12\n+\tx += 12 * 2\n \tx += 13\n", p, p, p, p)
	}
	return source.Changelist{BaseSHA: "ba5e", Diff: d.String(), Reviewers: source.Reviewers{Requested: []source.Reviewer{{Username: "alice"}}}}, nil
}

func (s *headSource) Reviewers(context.Context, source.Ref) (source.Reviewers, error) {
	return source.Reviewers{}, nil
}

func (s *headSource) HeadFile(_ context.Context, ref source.Ref, path string, limit int) (source.RepoFile, error) {
	s.mu.Lock()
	s.reads, s.refs, s.limit = append(s.reads, path), append(s.refs, ref.HeadSHA), limit
	s.mu.Unlock()
	var i int
	fmt.Sscanf(path, "svc/f%02d.go", &i)
	switch i {
	case 3:
		return source.RepoFile{Found: true, Content: []byte(strings.Repeat("x", limit+1))}, nil
	case 4:
		return source.RepoFile{}, nil
	case 5:
		return source.RepoFile{}, retry.Transient(retry.Upstream5xx, errors.New("502 from the code host"))
	}
	return source.RepoFile{Found: true, Content: []byte(headGoFile(i, true))}, nil
}

// The fetch stage reads at most MaxContextFiles changed files, at the
// head commit the event named, each at most the cap; a file over the cap,
// one the host does not have and one it fails on are reviewed from their
// hunks, the stage goes on, and each is counted; the files are stored in
// the blob store, named on the job, and the llm stage shows the model
// their functions. With no cap (the offline critic's deployment) nothing
// is read.
// Rules: R-CONTEXT-1, R-CONTEXT-2.
func TestFetch_HeadFilesReadBoundedAndCounted(t *testing.T) {
	for _, capBytes := range []int{4096, 0} {
		t.Run(fmt.Sprint("cap ", capBytes), func(t *testing.T) {
			ctx := context.Background()
			clock := func() time.Time { return time.Now().UTC() }
			var logs bytes.Buffer
			log := slog.New(slog.NewJSONHandler(&logs, nil))
			jobs := memstore.NewJobs(clock)
			dir := memstore.NewDirectory(nil)
			dir.Set(ctx, "github", "alice", "alice@example.com", "t")
			src := &headSource{n: pipeline.MaxContextFiles + 5}
			blobs := &memBlobs{}
			base := pipeline.Base{Jobs: jobs, Blobs: blobs, Queue: nopQueue{}, Log: log, Now: clock}
			fetch := &pipeline.Fetch{Base: base, Source: src, Directory: reviewers.Overlay{Table: dir}, ContextFileBytes: capBytes}
			model := &scriptedModel{}
			llm, err := critic.NewLLM(model)
			if err != nil {
				t.Fatal(err)
			}
			stage := &pipeline.LLM{Base: base, Critic: llm}
			now := time.Now().UTC()
			j := job.Job{ID: job.NewID("github", "acme/app#7", 1), Source: "github", ChangelistID: "acme/app#7", ReviewVersion: 1,
				Title: "Double", Author: "carol", Recipients: []string{}, Status: job.StatusAccepted, Stage: job.StageFetch,
				Attempts: job.Attempts{}, CreatedAt: now, UpdatedAt: now}
			jobs.Put(j)
			if err := jobs.PutSourceRef(ctx, j.ID, store.SourceRef{Source: "github", Repo: "acme/app", Number: 7, HeadSHA: "c0ffee"}); err != nil {
				t.Fatal(err)
			}
			if err := fetch.Handle(ctx, job.Message{JobID: j.ID, Stage: job.StageFetch}, 1); err != nil {
				t.Fatalf("fetch: %v", err)
			}
			if err := stage.Handle(ctx, job.Message{JobID: j.ID, Stage: job.StageLLM}, 1); err != nil {
				t.Fatalf("llm: %v", err)
			}
			got, err := jobs.Get(ctx, j.ID)
			if err != nil {
				t.Fatal(err)
			}
			user := model.reqs[0].User
			if capBytes == 0 {
				if len(src.reads) != 0 || got.ContextRef != "" || strings.Contains(user, "Context of") {
					t.Fatalf("with no cap: %d reads, context %q", len(src.reads), got.ContextRef)
				}
				return
			}
			if len(src.reads) != pipeline.MaxContextFiles || src.limit != capBytes {
				t.Fatalf("%d reads of %d bytes, want %d of %d", len(src.reads), src.limit, pipeline.MaxContextFiles, capBytes)
			}
			for _, sha := range src.refs {
				if sha != "c0ffee" {
					t.Fatalf("read at %q, want the event's head c0ffee", sha)
				}
			}
			if got.ContextRef == "" {
				t.Fatalf("context ref %q", got.ContextRef)
			}
			var c critic.Critique
			if err := json.Unmarshal(got.Critique, &c); err != nil {
				t.Fatal(err)
			}
			if c.Context == nil || c.Context.Files != pipeline.MaxContextFiles-3 {
				t.Errorf("context %+v, want %d files", c.Context, pipeline.MaxContextFiles-3)
			}
			for i := range pipeline.MaxContextFiles + 5 {
				has := strings.Contains(user, fmt.Sprintf("Context of svc/f%02d.go", i))
				if want := i < pipeline.MaxContextFiles && i != 3 && i != 4 && i != 5; has != want {
					t.Errorf("svc/f%02d.go has context: %v, want %v", i, has, want)
				}
			}
			if !strings.Contains(user, fmt.Sprintf("     3 |  func F%02d(x int) int {", 0)) {
				t.Errorf("no enclosing function in:\n%.2000s", user)
			}
			for _, want := range []string{`"ContextFileReads":20`, `"ContextFilesUnread":2`, `"ContextFilesTooLarge":1`, `"ContextFilesPastLimit":5`,
				`"ContextFiles":17`} {
				if !strings.Contains(logs.String(), want) {
					t.Errorf("no metric %s in the logs", want)
				}
			}
		})
	}
}
