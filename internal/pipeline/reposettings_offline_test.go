package pipeline_test

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
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
	"github.com/criticizer/criticizer/internal/retry"
	"github.com/criticizer/criticizer/internal/reviewers"
	"github.com/criticizer/criticizer/internal/source"
	"github.com/criticizer/criticizer/internal/store"
	"github.com/criticizer/criticizer/internal/store/memstore"
)

// settingsDiff changes a source file and a file under gen/ that no
// heuristic takes for generated: only the repository's ignore glob can
// keep it from the model.
const settingsDiff = `diff --git a/src/app.go b/src/app.go
--- a/src/app.go
+++ b/src/app.go
@@ -1,2 +1,2 @@
 package app
-func A() int { return 1 }
+func A() int { return 2 }
diff --git a/gen/client.go b/gen/client.go
--- a/gen/client.go
+++ b/gen/client.go
@@ -1,2 +1,2 @@
 package gen
-func GeneratedMarker() {}
+func GeneratedMarkerTwo() {}
`

// fileSource is a code review system with a diff against the base commit
// "ba5e", one reviewer and, when file is not nil, a .criticizer.yaml at
// that base.
type fileSource struct {
	file   []byte
	denied bool // the credentials may not read files
	asked  []source.Ref
	// diff replaces settingsDiff; base holds other files at the base.
	diff  string
	base  map[string]string
	paths []string // what was read, in order
	limit []int
	// tips are the bases Fetch names, one per call (the destination
	// branch moving on between attempts); "ba5e" when none is left.
	tips []string
	// failReads fails that many file reads first (an upstream 5xx).
	failReads int
	// authorLabels: the author could have set the change's labels, so
	// none counts (source.LabelJudge); labelAsks counts the questions.
	authorLabels bool
	labelAsks    int
}

func (s *fileSource) Fetch(context.Context, source.Ref) (source.Changelist, error) {
	base := "ba5e"
	if len(s.tips) > 0 {
		base, s.tips = s.tips[0], s.tips[1:]
	}
	return source.Changelist{BaseSHA: base, Diff: cmp.Or(s.diff, settingsDiff), Reviewers: source.Reviewers{Requested: []source.Reviewer{{Username: "alice"}}}}, nil
}

func (s *fileSource) LabelsBeyondAuthor(_ context.Context, _ source.Ref, _ string, labels []string) (source.LabelVerdict, error) {
	s.labelAsks++
	if s.authorLabels {
		return source.LabelVerdict{Why: "the author may set labels, so skip_labels does not apply"}, nil
	}
	return source.LabelVerdict{Beyond: labels}, nil
}

func (s *fileSource) Reviewers(context.Context, source.Ref) (source.Reviewers, error) {
	return source.Reviewers{Requested: []source.Reviewer{{Username: "alice"}, {Username: "bob"}}}, nil
}

func (s *fileSource) BaseFile(_ context.Context, ref source.Ref, path string, limit int) (source.RepoFile, error) {
	s.asked = append(s.asked, ref)
	s.paths, s.limit = append(s.paths, path), append(s.limit, limit)
	if s.failReads > 0 {
		s.failReads--
		return source.RepoFile{}, retry.Transient(retry.Upstream5xx, errors.New("502 from the code host"))
	}
	if s.denied {
		return source.RepoFile{Denied: true}, nil
	}
	if b, ok := s.base[path]; ok {
		return source.RepoFile{Content: []byte(b[:min(len(b), limit+1)]), Found: true}, nil
	}
	if s.file == nil || path != ".criticizer.yaml" {
		return source.RepoFile{}, nil
	}
	return source.RepoFile{Content: s.file[:min(len(s.file), limit+1)], Found: true}, nil
}

// memBlobs is a content-addressed blob store in memory.
type memBlobs struct {
	mu sync.Mutex
	m  map[string][]byte
}

func (b *memBlobs) Put(_ context.Context, _ string, body []byte) (string, string, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	sum := sha256.Sum256(body)
	ref := hex.EncodeToString(sum[:])
	if b.m == nil {
		b.m = map[string][]byte{}
	}
	b.m[ref] = append([]byte(nil), body...)
	return ref, ref, nil
}

func (b *memBlobs) Get(_ context.Context, ref string, _ int64) ([]byte, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.m[ref], nil
}

// scriptedModel answers every request with one finding and keeps what it
// was sent.
type scriptedModel struct {
	mu   sync.Mutex
	reqs []critic.Request
}

func (m *scriptedModel) Name() string { return "scripted/1" }

func (m *scriptedModel) Complete(_ context.Context, r critic.Request) (critic.Reply, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.reqs = append(m.reqs, r)
	return critic.Reply{Text: `{"summary":"One problem.","findings":[{"file":"src/app.go","line":2,"severity":"warning","rule":"changed-constant","message":"A returns 2."}]}`}, nil
}

// mailbox is a Sender that keeps every message.
type mailbox struct {
	mu   sync.Mutex
	msgs map[string][]delivery.Message
}

func (m *mailbox) Send(_ context.Context, _ string, to string, msg delivery.Message) (string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.msgs == nil {
		m.msgs = map[string][]delivery.Message{}
	}
	m.msgs[to] = append(m.msgs[to], msg)
	return "ses-" + to, nil
}

// settingsRig runs a GitHub version through fetch, llm (an LLM critic over
// the scripted model, wrapped by Incremental as deployed) and notify.
type settingsRig struct {
	t      *testing.T
	jobs   *memstore.Jobs
	src    *fileSource
	model  *scriptedModel
	mail   *mailbox
	fetch  *pipeline.Fetch
	llm    *pipeline.LLM
	notify *notify.Notify
}

func newSettingsRig(t *testing.T, file string) *settingsRig {
	t.Helper()
	ctx := context.Background()
	clock := func() time.Time { return time.Now().UTC() }
	log := slog.New(slog.NewJSONHandler(io.Discard, nil))
	r := &settingsRig{t: t, jobs: memstore.NewJobs(clock), src: &fileSource{}, model: &scriptedModel{}, mail: &mailbox{}}
	if file != "" {
		r.src.file = []byte(file)
	}
	dir := memstore.NewDirectory(nil)
	dir.Set(ctx, "github", "alice", "alice@example.com", "t")
	dir.Set(ctx, "github", "bob", "bob@example.com", "t")
	blobs := &memBlobs{}
	base := pipeline.Base{Jobs: r.jobs, Blobs: blobs, Queue: nopQueue{}, Log: log, Now: clock}
	r.fetch = &pipeline.Fetch{Base: base, Source: r.src, Directory: reviewers.Overlay{Table: dir}}
	llm, err := critic.NewLLM(r.model)
	if err != nil {
		t.Fatal(err)
	}
	r.llm = &pipeline.LLM{Base: base, Critic: critic.NewIncremental(llm), LookBack: pipeline.DefaultLookBack}
	rend, err := mail.NewRenderer()
	if err != nil {
		t.Fatal(err)
	}
	r.notify = &notify.Notify{Base: base, Deliveries: memstore.NewDeliveries(clock), Renderer: rend, Sender: r.mail,
		Lease: time.Minute, Margin: time.Minute, MarkTimeout: 5 * time.Second, SendTimeout: 5 * time.Second}
	return r
}

// run takes version v of acme/app#7, by author with labels, through the
// three stages and returns the job as they left it.
func (r *settingsRig) run(v int, author string, labels ...string) job.Job {
	r.t.Helper()
	ctx := context.Background()
	now := time.Now().UTC()
	j := job.Job{ID: job.NewID("github", "acme/app#7", v), Source: "github", ChangelistID: "acme/app#7", ReviewVersion: v,
		Title: "Change A", URL: "https://github.example/acme/app/pull/7", Author: author, Recipients: []string{},
		Status: job.StatusAccepted, Stage: job.StageFetch, Attempts: job.Attempts{}, CreatedAt: now, UpdatedAt: now}
	r.jobs.Put(j)
	if err := r.jobs.PutSourceRef(ctx, j.ID, store.SourceRef{Source: "github", Repo: "acme/app", Number: 7,
		HeadSHA: "c0ffee", Labels: labels}); err != nil {
		r.t.Fatal(err)
	}
	if err := r.fetch.Handle(ctx, job.Message{JobID: j.ID, Stage: job.StageFetch}, 1); err != nil {
		r.t.Fatalf("fetch: %v", err)
	}
	if err := r.llm.Handle(ctx, job.Message{JobID: j.ID, Stage: job.StageLLM}, 1); err != nil {
		r.t.Fatalf("llm: %v", err)
	}
	if err := r.notify.Handle(ctx, job.Message{JobID: j.ID, Stage: job.StageNotify}, 1); err != nil {
		r.t.Fatalf("notify: %v", err)
	}
	got, err := r.jobs.Get(ctx, j.ID)
	if err != nil {
		r.t.Fatal(err)
	}
	return got
}

func critiqueOf(t *testing.T, j job.Job) critic.Critique {
	t.Helper()
	var c critic.Critique
	if err := json.Unmarshal(j.Critique, &c); err != nil {
		t.Fatal(err)
	}
	return c
}

// A .criticizer.yaml at the base that ignores gen/** keeps the generated
// file away from the model: not its content, not its name; the critique
// names it as ignored. The repository's instructions for the files sent go
// inside the data, and its language is asked for. Without the file, the
// same change sends the model both files.
// Rules: R-REPO-1, R-CRITIC-2.
func TestRepoSettings_IgnoredFileNeverReachesTheModel(t *testing.T) {
	r := newSettingsRig(t, `ignore: ["gen/**"]
instructions:
  - path: "src/**"
    text: "Return values are part of the public API."
  - path: "docs/**"
    text: "Never shown: no file under docs/ changed."
language: German
`)
	j := r.run(1, "carol")
	if len(r.model.reqs) != 1 {
		t.Fatalf("model asked %d times, want 1", len(r.model.reqs))
	}
	req := r.model.reqs[0]
	if strings.Contains(req.User, "gen/client.go") || strings.Contains(req.User, "GeneratedMarker") || strings.Contains(req.System, "gen/client.go") {
		t.Fatalf("the ignored file reached the model:\n%s", req.User)
	}
	if !strings.Contains(req.User, "func A() int { return 2 }") {
		t.Fatalf("the source file did not reach the model:\n%s", req.User)
	}
	// The repository's notes are data: between the boundaries, not in
	// the system prompt; only those for the files sent.
	begin, end := strings.Index(req.User, "BEGIN UNTRUSTED DATA"), strings.Index(req.User, "END UNTRUSTED DATA")
	note := strings.Index(req.User, "Repository notes: For src/**: Return values are part of the public API.")
	if note < begin || note > end || strings.Contains(req.System, "public API") || strings.Contains(req.User, "Never shown") {
		t.Fatalf("notes misplaced:\nsystem: %s\nuser: %s", req.System, req.User)
	}
	if !strings.Contains(req.System, "Write the summary and every message in German") {
		t.Fatalf("no language instruction:\n%s", req.System)
	}
	c := critiqueOf(t, j)
	want := critic.Omitted{Path: "gen/client.go", Reason: "ignored by .criticizer.yaml"}
	if len(c.Omitted) != 1 || c.Omitted[0] != want || c.Files != 2 || !strings.Contains(c.Summary, "Not reviewed: gen/client.go (ignored by .criticizer.yaml).") {
		t.Fatalf("omitted %+v, files %d, summary %q; want %+v of 2 files, said", c.Omitted, c.Files, c.Summary, want)
	}
	if j.Settings == nil || len(j.SettingsWarnings) != 0 || j.Status != job.StatusSucceeded {
		t.Fatalf("job %s, settings %+v, warnings %q", j.Status, j.Settings, j.SettingsWarnings)
	}
	if r.src.asked[0].BaseSHA != "ba5e" {
		t.Fatalf("settings read at %+v, want the version's base", r.src.asked[0])
	}

	// The control: no settings file, both files go to the model.
	r = newSettingsRig(t, "")
	r.run(1, "carol")
	if req := r.model.reqs[0]; !strings.Contains(req.User, "GeneratedMarkerTwo") || strings.Contains(req.System, "German") {
		t.Fatalf("without settings the model should see gen/client.go, in English:\n%s", req.User)
	}
}

// A malformed .criticizer.yaml (an unknown key here) is refused whole: the
// review runs with defaults — the file it meant to ignore is reviewed — and
// the job says why, in the warnings GET /jobs and the CLI show.
// Rules: R-REPO-2.
func TestRepoSettings_MalformedFileGivesDefaultsAndAWarning(t *testing.T) {
	r := newSettingsRig(t, "ignore: [\"gen/**\"]\nignore_paths: [docs/**]\n")
	j := r.run(1, "carol")
	if !strings.Contains(r.model.reqs[0].User, "GeneratedMarkerTwo") {
		t.Fatal("a refused file's ignore glob was applied")
	}
	if j.Settings != nil || len(j.SettingsWarnings) == 0 || !strings.Contains(strings.Join(j.SettingsWarnings, " "), `unknown key "ignore_paths"`) {
		t.Fatalf("settings %+v, warnings %q", j.Settings, j.SettingsWarnings)
	}
	if j.Status != job.StatusSucceeded || len(r.mail.msgs["alice@example.com"]) != 1 {
		t.Fatalf("job %s, mail %d; the review should go on", j.Status, len(r.mail.msgs["alice@example.com"]))
	}
	// The operator's view (criticizer jobs show prints the job as JSON).
	b, _ := json.Marshal(j)
	if !strings.Contains(string(b), `"settings_warnings":[".criticizer.yaml: unknown key \"ignore_paths\"`) {
		t.Fatalf("job JSON: %s", b)
	}
}

// An author in skip_authors, or a label in skip_labels the author cannot
// have set, ends the version before any model run: nobody is mailed, the
// job succeeds saying why, and a reviewer added later is not mailed
// either. Any other author or label is reviewed.
// Rules: R-REPO-4.
func TestRepoSettings_SkipAuthorsAndLabels(t *testing.T) {
	const file = "skip_authors: [\"Renovate[bot]\"]\nskip_labels: [no-review]\n"
	for _, tc := range []struct {
		name, author string
		labels       []string
		skip         string
	}{
		{"author", "renovate[bot]", nil, "the author renovate[bot] is in skip_authors"},
		{"label", "carol", []string{"bug", "No-Review"}, `the label "No-Review" is in skip_labels`},
		{"neither", "carol", []string{"bug"}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newSettingsRig(t, file)
			j := r.run(1, tc.author, tc.labels...)
			if j.Status != job.StatusSucceeded || j.Stage != job.StageDone {
				t.Fatalf("job %s at %s", j.Status, j.Stage)
			}
			if tc.skip == "" {
				if j.Skipped != "" || len(r.model.reqs) != 1 || len(r.mail.msgs) != 1 {
					t.Fatalf("skipped %q, model %d, mail %d; want a review", j.Skipped, len(r.model.reqs), len(r.mail.msgs))
				}
				return
			}
			if !strings.Contains(j.Skipped, tc.skip) || len(r.model.reqs) != 0 || len(r.mail.msgs) != 0 {
				t.Fatalf("skipped %q, model %d, mail %d; want %q, no model, no mail", j.Skipped, len(r.model.reqs), len(r.mail.msgs), tc.skip)
			}
			// A reviewer requested afterwards is not mailed a skipped version.
			if err := r.fetch.Handle(context.Background(), job.Message{JobID: j.ID, Stage: job.StageFetch, Task: job.TaskReviewers}, 1); err != nil {
				t.Fatal(err)
			}
			if got, _ := r.jobs.Get(context.Background(), j.ID); len(got.AllRecipients()) != 0 {
				t.Fatalf("recipients %v added to a skipped version", got.AllRecipients())
			}
		})
	}
}

// A label in skip_labels that the change's author could have set (the
// source says so: Gerrit's hashtags, a GitHub author with triage access, a
// GitLab Developer) skips nothing: the version is reviewed and mailed, and
// the job's warnings say why skip_labels did not apply. The source is
// asked only when skip_labels names one of the change's labels.
// Rules: R-REPO-7.
func TestRepoSettings_ALabelTheAuthorCouldSetSkipsNothing(t *testing.T) {
	r := newSettingsRig(t, "skip_labels: [no-review]\n")
	r.src.authorLabels = true
	j := r.run(1, "carol", "No-Review")
	if j.Status != job.StatusSucceeded || j.Skipped != "" || len(r.model.reqs) != 1 || len(r.mail.msgs["alice@example.com"]) != 1 {
		t.Fatalf("job %s, skipped %q, model %d, mail %d; want reviewed and mailed", j.Status, j.Skipped, len(r.model.reqs), len(r.mail.msgs["alice@example.com"]))
	}
	if w := strings.Join(j.SettingsWarnings, " "); !strings.Contains(w, "skip_labels does not apply") {
		t.Fatalf("warnings %q; want why skip_labels did not apply", j.SettingsWarnings)
	}
	r = newSettingsRig(t, "skip_labels: [no-review]\n")
	r.src.authorLabels = true
	if j := r.run(1, "carol", "bug"); j.Skipped != "" || len(j.SettingsWarnings) != 0 || r.src.labelAsks != 0 {
		t.Fatalf("skipped %q, warnings %q, asked %d; a label skip_labels does not name needs no question", j.Skipped, j.SettingsWarnings, r.src.labelAsks)
	}
}

// The commit the settings are read at is pinned the first time the fetch
// stage finds it: an attempt that failed after finding it (the settings
// read answered 502) is retried at the same commit, though the source now
// names another (the destination branch moved on), so a retry reads the
// same bytes.
// Rules: R-SOURCE-5, R-REPO-6.
func TestRepoSettings_TheBaseIsPinnedAcrossAttempts(t *testing.T) {
	r := newSettingsRig(t, "skip_authors: [carol]\n")
	r.src.tips = []string{"71b1", "71b2"}
	r.src.failReads = 1
	ctx := context.Background()
	now := time.Now().UTC()
	j := job.Job{ID: job.NewID("gerrit", "p~7", 1), Source: "gerrit", ChangelistID: "p~7", ReviewVersion: 1, Title: "t",
		URL: "https://gerrit.example/c/p/+/7", Author: "dave", Recipients: []string{}, Status: job.StatusAccepted,
		Stage: job.StageFetch, Attempts: job.Attempts{}, CreatedAt: now, UpdatedAt: now}
	r.jobs.Put(j)
	if err := r.jobs.PutSourceRef(ctx, j.ID, store.SourceRef{Source: "gerrit", Repo: "p", Number: 7, Patchset: 1, HeadSHA: "c0ffee"}); err != nil {
		t.Fatal(err)
	}
	if err := r.fetch.Handle(ctx, job.Message{JobID: j.ID, Stage: job.StageFetch}, 1); err == nil {
		t.Fatal("the first attempt should fail on the settings read")
	}
	if err := r.fetch.Handle(ctx, job.Message{JobID: j.ID, Stage: job.StageFetch}, 2); err != nil {
		t.Fatal(err)
	}
	var at []string
	for _, a := range r.src.asked {
		at = append(at, a.BaseSHA)
	}
	if len(at) != 2 || at[0] != "71b1" || at[1] != "71b1" {
		t.Fatalf("settings read at %q; want the first attempt's base both times", at)
	}
	if ref, err := r.jobs.GetSourceRef(ctx, j.ID); err != nil || ref.BaseSHA != "71b1" {
		t.Fatalf("source reference base %q %v; want the pin 71b1", ref.BaseSHA, err)
	}
}

// Findings below the minimum severity are left out of the email, which
// says how many: the deployment's minimum, raised by the repository's
// min_severity, never lowered by it.
// Rules: R-REPO-5.
func TestRepoSettings_MinSeverity(t *testing.T) {
	for _, tc := range []struct {
		name, deploy, file string
		shown              bool
	}{
		{"none", "", "", true},
		{"deployment", "error", "", false},
		{"repository raises", "", "min_severity: error\n", false},
		{"repository cannot lower", "error", "min_severity: info\n", false},
		{"repository at the deployment's", "warning", "min_severity: warning\n", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newSettingsRig(t, tc.file)
			r.notify.MinSeverity = critic.Severity(tc.deploy)
			j := r.run(1, "carol")
			msgs := r.mail.msgs["alice@example.com"]
			if len(msgs) != 1 {
				t.Fatalf("%d emails", len(msgs))
			}
			text := msgs[0].Text
			if got := strings.Contains(text, "A returns 2."); got != tc.shown {
				t.Fatalf("warning shown %v, want %v:\n%s", got, tc.shown, text)
			}
			if said := strings.Contains(text, "1 finding below error not shown."); said == tc.shown {
				t.Fatalf("count said %v:\n%s", said, text)
			}
			// The stored critique keeps every finding.
			if c := critiqueOf(t, j); len(c.Findings) != 1 {
				t.Fatalf("stored findings %d", len(c.Findings))
			}
		})
	}
}

// A token that may not read the repository's files (GitHub without
// contents: read) keeps reviews going, with defaults, and the job says why.
// Rules: R-REPO-2.
func TestRepoSettings_UnreadableFileGivesDefaultsAndAWarning(t *testing.T) {
	r := newSettingsRig(t, "")
	r.src.denied = true
	j := r.run(1, "carol")
	if j.Status != job.StatusSucceeded || j.Settings != nil || len(r.mail.msgs) != 1 {
		t.Fatalf("job %s, settings %+v, mail %d", j.Status, j.Settings, len(r.mail.msgs))
	}
	if len(j.SettingsWarnings) != 1 || !strings.Contains(j.SettingsWarnings[0], "contents: read") {
		t.Fatalf("warnings %q", j.SettingsWarnings)
	}
}
