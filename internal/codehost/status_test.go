package codehost_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/criticizer/criticizer/internal/channel"
	"github.com/criticizer/criticizer/internal/codehost"
	"github.com/criticizer/criticizer/internal/devstack"
	"github.com/criticizer/criticizer/internal/source"
)

// With a token, a commit status per head commit: pending, then success
// with the counts in its description and the job as its target
// (R-CHANNEL-10, R-CHANNEL-11).
// Rules: R-CHANNEL-10, R-CHANNEL-11.
func TestGitHubStatus_PendingThenSuccessPerHead(t *testing.T) {
	ctx := context.Background()
	gh := newGitHub(t)
	api, _ := tokenGitHub(gh)
	ch := &codehost.GitHubStatus{API: api}
	fs, counts := findings(3)
	for v, head := range map[int]string{3: "c3", 5: "c5"} {
		p := post("github", repo, head, v, channel.Started)
		if _, err := ch.Send(ctx, p, channel.Receipt{}); err != nil {
			t.Fatal(err)
		}
		if _, err := ch.Send(ctx, finished(p, fs, counts), channel.Receipt{}); err != nil {
			t.Fatal(err)
		}
		st := gh.Checks.Statuses(head)
		if len(st) != 2 || st[0].State != "pending" || st[1].State != "success" {
			t.Fatalf("%s: %+v; want pending then success", head, st)
		}
		last := st[1]
		if last.Context != "criticizer" || last.TargetURL != p.JobURL || last.Description != "3 findings: 1 error, 1 warning, 1 info" {
			t.Errorf("%s: %+v", head, last)
		}
	}
}

// An error-severity finding fails the status only with the opt-in.
// Rules: R-CHANNEL-11.
func TestGitHubStatus_FailureOnlyWithOptIn(t *testing.T) {
	ctx := context.Background()
	fs, counts := findings(1)
	for opt, want := range map[bool]string{false: "success", true: "failure"} {
		gh := newGitHub(t)
		api, _ := tokenGitHub(gh)
		ch := &codehost.GitHubStatus{API: api, Options: codehost.Options{FailOnError: opt}}
		if _, err := ch.Send(ctx, finished(post("github", repo, "c3", 3, channel.Started), fs, counts), channel.Receipt{}); err != nil {
			t.Fatal(err)
		}
		if st := gh.Checks.Statuses("c3"); len(st) != 1 || st[0].State != want {
			t.Errorf("opt-in %v: %+v; want %s", opt, st, want)
		}
	}
}

// A status whose answer was lost is found in its phase's state; a
// Started post after its version finished never sets it back to
// pending (R-CHANNEL-14).
// Rules: R-CHANNEL-14.
func TestGitHubStatus_LostAnswerFound_NeverBackToPending(t *testing.T) {
	ctx := context.Background()
	gh := newGitHub(t)
	api, _ := tokenGitHub(gh)
	ch := &codehost.GitHubStatus{API: api}
	p := post("github", repo, "c3", 3, channel.Started)
	f := finished(p, nil, channel.Counts{})
	gh.Loss.Lose(http.MethodPost, "/statuses/", 1)
	if _, err := ch.Send(ctx, f, channel.Receipt{}); err == nil {
		t.Fatal("the lost answer was not an error")
	}
	if _, ok, err := ch.Find(ctx, f); err != nil || !ok {
		t.Fatalf("Find(Finished): %v %v; want found", ok, err)
	}
	if _, err := ch.Send(ctx, p, channel.Receipt{}); err != nil {
		t.Fatal(err)
	}
	st := gh.Checks.Statuses("c3")
	if len(st) != 1 || st[0].State != "success" {
		t.Fatalf("%+v; want the one success status", st)
	}
	// Another job on the same commit (a rerun) is not this one's.
	other := f
	other.JobURL = "https://criticizer.example.com/jobs/other"
	if _, ok, _ := ch.Find(ctx, other); ok {
		t.Fatal("Find found another job's status")
	}
}

// GitLab: running, then success, on the merge request version's head;
// the resend after a lost answer meets GitLab's 400 for a state the
// status already has, and is found, not failed (R-CHANNEL-14).
// Rules: R-CHANNEL-10, R-CHANNEL-14.
func TestGitLabStatus_RunningThenSuccess_LostAnswer400IsFound(t *testing.T) {
	ctx := context.Background()
	gl := devstack.NewGitLabStandIn("group/project")
	t.Cleanup(gl.Close)
	api := &source.GitLab{BaseURL: gl.URL(), Token: "glpat"}
	ch := &codehost.GitLabStatus{API: api}
	p := post("gitlab", "group/project", "c3", 3, channel.Started)
	if _, err := ch.Send(ctx, p, channel.Receipt{}); err != nil {
		t.Fatal(err)
	}
	if _, ok, err := ch.Find(ctx, p); err != nil || !ok {
		t.Fatalf("Find(Started): %v %v", ok, err)
	}
	fs, counts := findings(2)
	f := finished(p, fs, counts)
	if _, ok, _ := ch.Find(ctx, f); ok {
		t.Fatal("Find(Finished) found a running status")
	}
	gl.Loss.Lose(http.MethodPost, "/statuses/", 1)
	if _, err := ch.Send(ctx, f, channel.Receipt{}); err == nil {
		t.Fatal("the lost answer was not an error")
	}
	r, err := ch.Send(ctx, f, channel.Receipt{}) // the protocol's resend, had Find not run
	if err != nil || r.Ref == "" {
		t.Fatalf("resend: %+v %v; want the status found after GitLab's 400", r, err)
	}
	st := gl.Statuses("c3")
	if len(st) != 1 || st[0].Status != "success" || st[0].Name != "criticizer" || st[0].TargetURL != p.JobURL ||
		!strings.Contains(st[0].Description, "2 findings") {
		t.Fatalf("%+v; want one success status", st)
	}
	if _, ok, _ := ch.Find(ctx, f); !ok {
		t.Fatal("Find(Finished) did not find it")
	}
}

// Gerrit: nothing when the version starts; one tagged review message on
// its patch set when it finishes, found by its post id after a lost
// answer, and no vote unless a label is named (R-CHANNEL-10).
// Rules: R-CHANNEL-10, R-CHANNEL-14.
func TestGerritMessage_OneTaggedMessage_FoundAfterLostAnswer(t *testing.T) {
	ctx := context.Background()
	g := devstack.NewGerritStandIn("proj")
	t.Cleanup(g.Close)
	g.Commit("b0", "", nil, "", "")
	g.Commit("c3", "b0", nil, "s", "")
	g.Change(7, "main", 1, "c3")
	api := &source.Gerrit{BaseURL: g.URL(), Username: "criticizer", Password: "pw"}
	ch := &codehost.GerritMessage{API: api}
	p := post("gerrit", "proj", "c3", 1, channel.Started)
	if _, err := ch.Send(ctx, p, channel.Receipt{}); !errors.Is(err, channel.ErrNotApplicable) {
		t.Fatalf("Started: %v; want ErrNotApplicable", err)
	}
	fs, counts := findings(2)
	f := finished(p, fs, counts)
	g.Loss.Lose(http.MethodPost, "/review", 1)
	if _, err := ch.Send(ctx, f, channel.Receipt{}); err == nil {
		t.Fatal("the lost answer was not an error")
	}
	r, ok, err := ch.Find(ctx, f)
	if err != nil || !ok || r.Ref == "" {
		t.Fatalf("Find: %+v %v %v; want the message", r, ok, err)
	}
	msgs := g.Messages(7)
	if len(msgs) != 1 {
		t.Fatalf("%d messages; want 1", len(msgs))
	}
	m := msgs[0]
	if m.Tag != "autogenerated:criticizer" || m.RevisionNumber != 1 || len(m.Labels) != 0 || m.Notify != "NONE" ||
		!strings.Contains(m.Message, "2 findings") || !strings.Contains(m.Message, "a.go line 1") {
		t.Fatalf("message %+v", m)
	}
	// Another version's post is not found in it.
	other := f
	other.ID = "another"
	if _, ok, _ := ch.Find(ctx, other); ok {
		t.Fatal("Find found another post's message")
	}
}

// A named label is voted on: +1 without findings, 0 with, -1 only with
// the opt-in and an error.
// Rules: R-CHANNEL-11.
func TestGerritMessage_LabelVote(t *testing.T) {
	ctx := context.Background()
	fs, counts := findings(1)
	none, zero := findings(0)
	for _, tt := range []struct {
		name string
		opt  bool
		f    func(channel.Post) channel.Post
		want int
	}{
		{"clean", false, func(p channel.Post) channel.Post { return finished(p, none, zero) }, 1},
		{"findings", false, func(p channel.Post) channel.Post { return finished(p, fs, counts) }, 0},
		{"error opt-in", true, func(p channel.Post) channel.Post { return finished(p, fs, counts) }, -1},
		{"not reviewed", true, func(p channel.Post) channel.Post {
			p = finished(p, nil, zero)
			p.Outcome = channel.NotReviewed
			return p
		}, 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			g := devstack.NewGerritStandIn("proj")
			t.Cleanup(g.Close)
			g.Labels("Code-Review", "Criticizer")
			g.Commit("c3", "", nil, "s", "")
			g.Change(7, "main", 1, "c3")
			ch := &codehost.GerritMessage{API: &source.Gerrit{BaseURL: g.URL()},
				Options: codehost.Options{GerritLabel: "Criticizer", FailOnError: tt.opt}}
			if _, err := ch.Send(ctx, tt.f(post("gerrit", "proj", "c3", 1, channel.Started)), channel.Receipt{}); err != nil {
				t.Fatal(err)
			}
			msgs := g.Messages(7)
			if len(msgs) != 1 || msgs[0].Labels["Criticizer"] != tt.want {
				t.Fatalf("%+v; want a vote of %d", msgs, tt.want)
			}
		})
	}
}
