package codehost_test

import (
	"context"
	"errors"
	"net/http"
	"testing"

	"github.com/criticizer/criticizer/internal/channel"
	"github.com/criticizer/criticizer/internal/codehost"
	"github.com/criticizer/criticizer/internal/devstack"
	"github.com/criticizer/criticizer/internal/retry"
)

const repo = "octo/hello"

func newGitHub(t *testing.T) *devstack.GitHubStandIn {
	gh := devstack.NewGitHubStandIn(repo, "b0")
	t.Cleanup(gh.Close)
	gh.Push("c3", "b0", nil)
	gh.Push("c5", "c3", nil)
	return gh
}

// One check run per head commit, in_progress then completed with its
// annotations at the findings' lines (R-CHANNEL-10, R-CHANNEL-11).
// Rules: R-CHANNEL-10, R-CHANNEL-11.
func TestGitHubCheck_StartedThenFinished_OneCompletedRunPerHead(t *testing.T) {
	ctx := context.Background()
	gh := newGitHub(t)
	api, _ := appGitHub(t, gh)
	ch := &codehost.GitHubCheck{API: api}
	fs, counts := findings(3)
	for v, head := range map[int]string{3: "c3", 5: "c5"} {
		p := post("github", repo, head, v, channel.Started)
		r, err := ch.Send(ctx, p, channel.Receipt{})
		if err != nil {
			t.Fatalf("started v%d: %v", v, err)
		}
		runs := gh.Checks.CheckRuns(head)
		if len(runs) != 1 || runs[0].Status != "in_progress" || runs[0].ExternalID != p.VersionKey || runs[0].Name != "Criticizer" {
			t.Fatalf("after Started v%d: %+v; want one in_progress Criticizer run", v, runs)
		}
		if _, err := ch.Send(ctx, finished(p, fs, counts), r); err != nil {
			t.Fatalf("finished v%d: %v", v, err)
		}
	}
	for _, head := range []string{"c3", "c5"} {
		runs := gh.Checks.CheckRuns(head)
		if len(runs) != 1 {
			t.Fatalf("%s: %d check runs; want 1", head, len(runs))
		}
		r := runs[0]
		if r.Status != "completed" || r.Conclusion == nil || *r.Conclusion != "neutral" {
			t.Errorf("%s: %s %v; want completed neutral (findings, no opt-in)", head, r.Status, r.Conclusion)
		}
		if len(r.Annotations) != 3 {
			t.Fatalf("%s: %d annotations; want 3", head, len(r.Annotations))
		}
		for i, a := range r.Annotations {
			want := []string{"failure", "warning", "notice"}[i]
			if a.Path != "a.go" || a.StartLine != i+1 || a.EndLine != i+1 || a.AnnotationLevel != want {
				t.Errorf("%s annotation %d: %+v; want a.go:%d %s", head, i, a, i+1, want)
			}
		}
	}
}

// The conclusion is never red unless the operator opts in, and an
// unreviewed version is skipped or neutral (R-CHANNEL-11).
// Rules: R-CHANNEL-11.
func TestGitHubCheck_Conclusions(t *testing.T) {
	ctx := context.Background()
	fs, counts := findings(2) // an error and a warning
	none, zero := findings(0)
	for _, tt := range []struct {
		name   string
		opt    bool
		mutate func(p channel.Post) channel.Post
		want   string
	}{
		{"findings", false, func(p channel.Post) channel.Post { return finished(p, fs, counts) }, "neutral"},
		{"none", false, func(p channel.Post) channel.Post { return finished(p, none, zero) }, "success"},
		{"error with opt-in", true, func(p channel.Post) channel.Post { return finished(p, fs, counts) }, "failure"},
		{"warning only with opt-in", true, func(p channel.Post) channel.Post {
			return finished(p, fs[1:], channel.Counts{Warning: 1})
		}, "neutral"},
		{"superseded", true, func(p channel.Post) channel.Post {
			p = finished(p, nil, channel.Counts{})
			p.Outcome = channel.Superseded
			return p
		}, "skipped"},
		{"not reviewed", true, func(p channel.Post) channel.Post {
			p = finished(p, nil, channel.Counts{})
			p.Outcome = channel.NotReviewed
			return p
		}, "neutral"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			gh := newGitHub(t)
			api, _ := appGitHub(t, gh)
			ch := &codehost.GitHubCheck{API: api, Options: codehost.Options{FailOnError: tt.opt}}
			if _, err := ch.Send(ctx, tt.mutate(post("github", repo, "c3", 3, channel.Started)), channel.Receipt{}); err != nil {
				t.Fatal(err)
			}
			runs := gh.Checks.CheckRuns("c3")
			if len(runs) != 1 || runs[0].Conclusion == nil || *runs[0].Conclusion != tt.want {
				t.Fatalf("runs %+v; want one %s", runs, tt.want)
			}
		})
	}
}

// 120 findings go in three requests of at most 50 annotations: the
// completing update, then two follow-ups (R-CHANNEL-13).
// Rules: R-CHANNEL-13.
func TestGitHubCheck_120Findings_ThreeRequestsOfAnnotations(t *testing.T) {
	ctx := context.Background()
	gh := newGitHub(t)
	api, c := appGitHub(t, gh)
	ch := &codehost.GitHubCheck{API: api}
	p := post("github", repo, "c3", 3, channel.Started)
	r, err := ch.Send(ctx, p, channel.Receipt{})
	if err != nil {
		t.Fatal(err)
	}
	fs, counts := findings(120)
	if _, err := ch.Send(ctx, finished(p, fs, counts), r); err != nil {
		t.Fatal(err)
	}
	if n := c.count(http.MethodPatch, "/check-runs/"); n != 3 {
		t.Errorf("%d updates; want 3 (50, 50, 20 annotations)", n)
	}
	runs := gh.Checks.CheckRuns("c3")
	if len(runs) != 1 || len(runs[0].Annotations) != 120 || runs[0].Output.AnnotationsCount != 120 {
		t.Fatalf("runs: %d, annotations %d; want one with 120", len(runs), len(runs[0].Annotations))
	}
	for i, a := range runs[0].Annotations {
		if a.StartLine != i+1 {
			t.Fatalf("annotation %d at line %d; want %d (each once, in order)", i, a.StartLine, i+1)
		}
	}
}

// The create's answer is lost after GitHub stored the check run: Find
// finds it by its external_id, and the Finished post completes that one
// (R-CHANNEL-14).
// Rules: R-CHANNEL-14.
func TestGitHubCheck_CreateAnswerLost_FoundNotCreatedAgain(t *testing.T) {
	ctx := context.Background()
	gh := newGitHub(t)
	api, _ := appGitHub(t, gh)
	ch := &codehost.GitHubCheck{API: api}
	p := post("github", repo, "c3", 3, channel.Started)
	gh.Loss.Lose(http.MethodPost, "/check-runs", 1)
	if _, err := ch.Send(ctx, p, channel.Receipt{}); err == nil {
		t.Fatal("the lost answer was not an error")
	} else if e := retry.Classify(err); !e.Retryable() {
		t.Fatalf("a lost answer is %s; want retryable", e.Class)
	}
	if gh.Loss.Lost() != 1 || len(gh.Checks.CheckRuns("c3")) != 1 {
		t.Fatalf("lost %d, runs %d: the stand-in did not store the run", gh.Loss.Lost(), len(gh.Checks.CheckRuns("c3")))
	}
	r, ok, err := ch.Find(ctx, p)
	if err != nil || !ok || r.Ref == "" {
		t.Fatalf("Find: %+v %v %v; want the stored run", r, ok, err)
	}
	f := finished(p, nil, channel.Counts{})
	if _, ok, _ := ch.Find(ctx, f); ok {
		t.Fatal("Find(Finished) found an in_progress run")
	}
	// The Finished post has no receipt (its Started row's was lost):
	// it finds the run by external_id rather than creating another.
	if _, err := ch.Send(ctx, f, channel.Receipt{}); err != nil {
		t.Fatal(err)
	}
	runs := gh.Checks.CheckRuns("c3")
	if len(runs) != 1 || runs[0].Status != "completed" {
		t.Fatalf("runs %+v; want the one run, completed", runs)
	}
	if _, ok, _ := ch.Find(ctx, f); !ok {
		t.Fatal("Find(Finished) did not find the completed run")
	}
	// A Started post sent again (a redelivery) creates nothing either.
	if _, err := ch.Send(ctx, p, channel.Receipt{}); err != nil || len(gh.Checks.CheckRuns("c3")) != 1 {
		t.Fatalf("Started again: %v, %d runs; want 1", err, len(gh.Checks.CheckRuns("c3")))
	}
}

// A follow-up update's answer is lost: Find does not call the run
// finished while annotations are missing, and the resend posts only
// those GitHub does not hold (R-CHANNEL-14).
// Rules: R-CHANNEL-13, R-CHANNEL-14.
func TestGitHubCheck_AnnotationPageLost_ResumedWithoutDuplicates(t *testing.T) {
	ctx := context.Background()
	gh := newGitHub(t)
	api, _ := appGitHub(t, gh)
	ch := &codehost.GitHubCheck{API: api}
	p := post("github", repo, "c3", 3, channel.Started)
	r, err := ch.Send(ctx, p, channel.Receipt{})
	if err != nil {
		t.Fatal(err)
	}
	fs, counts := findings(120)
	f := finished(p, fs, counts)
	// The second update (annotations 51-100) is applied, its answer lost.
	gh.Loss.LoseAfter(http.MethodPatch, "/check-runs/", 1, 1)
	if _, err := ch.Send(ctx, f, r); err == nil {
		t.Fatal("the lost answer was not an error")
	}
	if got := len(gh.Checks.CheckRuns("c3")[0].Annotations); got != 100 {
		t.Fatalf("%d annotations held after the loss; want 100", got)
	}
	if _, ok, _ := ch.Find(ctx, f); ok {
		t.Fatal("Find(Finished) found a run missing 20 annotations")
	}
	if _, err := ch.Send(ctx, f, r); err != nil {
		t.Fatal(err)
	}
	run := gh.Checks.CheckRuns("c3")[0]
	if len(run.Annotations) != 120 {
		t.Fatalf("%d annotations; want 120, none twice", len(run.Annotations))
	}
	for i, a := range run.Annotations {
		if a.StartLine != i+1 {
			t.Fatalf("annotation %d at line %d; want %d", i, a.StartLine, i+1)
		}
	}
	if _, ok, _ := ch.Find(ctx, f); !ok {
		t.Fatal("Find(Finished) did not find the complete run")
	}
}

// A token cannot create check runs: GitHub refuses it, and the refusal
// is permanent (the deployment wants github-status) (R-CHANNEL-10).
// Rules: R-CHANNEL-10.
func TestGitHubCheck_TokenRefused(t *testing.T) {
	gh := newGitHub(t)
	api, _ := tokenGitHub(gh)
	ch := &codehost.GitHubCheck{API: api}
	_, err := ch.Send(context.Background(), post("github", repo, "c3", 3, channel.Started), channel.Receipt{})
	if e := retry.Classify(err); e == nil || e.Class != retry.AuthDenied {
		t.Fatalf("err %v; want AUTH_DENIED", err)
	}
	if len(gh.Checks.CheckRuns("")) != 0 {
		t.Fatal("a check run was created with a token")
	}
}

// Another source's post, or one without a head, is not this channel's.
func TestGitHubCheck_OtherSourceNotApplicable(t *testing.T) {
	gh := newGitHub(t)
	api, _ := appGitHub(t, gh)
	ch := &codehost.GitHubCheck{API: api}
	for _, p := range []channel.Post{post("gitlab", repo, "c3", 3, channel.Started), post("github", repo, "", 3, channel.Started)} {
		if _, err := ch.Send(context.Background(), p, channel.Receipt{}); !errors.Is(err, channel.ErrNotApplicable) {
			t.Errorf("%s %q: %v; want ErrNotApplicable", p.Source, p.Head, err)
		}
	}
}

// A repository that turned its status off gets no check run; one its
// Started post made before the setting was read is still completed,
// never left in progress (R-CHANNEL-10).
// Rules: R-CHANNEL-10.
func TestGitHubCheck_StatusOff_NothingNew_InProgressCompleted(t *testing.T) {
	ctx := context.Background()
	gh := newGitHub(t)
	api, _ := appGitHub(t, gh)
	ch := &codehost.GitHubCheck{API: api}
	off := post("github", repo, "c3", 3, channel.Started)
	off.StatusOff = true
	if _, err := ch.Send(ctx, off, channel.Receipt{}); !errors.Is(err, channel.ErrNotApplicable) {
		t.Fatalf("Started, off: %v; want ErrNotApplicable", err)
	}
	if _, err := ch.Send(ctx, finished(off, nil, channel.Counts{}), channel.Receipt{}); !errors.Is(err, channel.ErrNotApplicable) {
		t.Fatalf("Finished, off: %v; want ErrNotApplicable", err)
	}
	if n := len(gh.Checks.CheckRuns("")); n != 0 {
		t.Fatalf("%d check runs; want none", n)
	}
	on := post("github", repo, "c5", 5, channel.Started)
	r, err := ch.Send(ctx, on, channel.Receipt{})
	if err != nil {
		t.Fatal(err)
	}
	late := finished(on, nil, channel.Counts{})
	late.StatusOff = true
	if _, err := ch.Send(ctx, late, r); err != nil {
		t.Fatal(err)
	}
	if runs := gh.Checks.CheckRuns("c5"); len(runs) != 1 || runs[0].Status != "completed" {
		t.Fatalf("%+v; want the run completed", runs)
	}
}
