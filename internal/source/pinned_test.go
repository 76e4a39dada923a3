package source

import (
	"context"
	"strings"
	"testing"
)

// movedDiff is what the pull or merge request's own diff serves once its
// head moved on past the event's commit: never what the event's version
// reviews.
const movedDiff = "diff --git a/later.go b/later.go\n--- a/later.go\n+++ b/later.go\n@@ -1 +1 @@\n-a\n+pushed after the event\n"

// The diff is the event's commit's, whatever the pull request's head is
// now: GitHub's comparison of the base and head commits the event named,
// never the pull request's diff (R-SOURCE-5).
// Rules: R-SOURCE-5.
func TestGitHub_DiffPinnedToTheEventsCommits(t *testing.T) {
	f, gh := ghServer(t)
	f.on(ghPull, reply(200, []byte(movedDiff), "Content-Type", "text/plain; charset=utf-8"))
	cl, err := gh.Fetch(context.Background(), ghRef)
	if err != nil {
		t.Fatal(err)
	}
	if cl.Diff != string(fixture(t, "github/pull.diff")) || cl.BaseSHA != ghBase {
		t.Fatalf("base %q, diff:\n%s", cl.BaseSHA, cl.Diff)
	}
	if f.requested(ghPull) {
		t.Fatal("the pull request's own diff was read: it is of its head now, not the event's")
	}
	if !f.requested(ghDiff) {
		t.Fatal("the comparison of the event's commits was not read")
	}
}

// A reference recorded before events carried their base takes the pull
// request's base, and keeps the event's head (R-SOURCE-5).
// Rules: R-SOURCE-5.
func TestGitHub_RefWithoutABaseTakesThePullRequestsBaseKeepsTheEventsHead(t *testing.T) {
	f, gh := ghServer(t)
	f.on(ghPull, reply(200, []byte(`{"number":2,"head":{"sha":"0a1b2c3d4e5f60718293a4b5c6d7e8f901234567"},"base":{"sha":"`+ghBase+`"}}`),
		"Content-Type", "application/json; charset=utf-8"))
	ref := ghRef
	ref.BaseSHA = ""
	cl, err := gh.Fetch(context.Background(), ref)
	if err != nil {
		t.Fatal(err)
	}
	if cl.BaseSHA != ghBase || cl.Diff != string(fixture(t, "github/pull.diff")) {
		t.Fatalf("base %q, diff:\n%s", cl.BaseSHA, cl.Diff)
	}
	if got := f.requests()[0].Header.Get("Accept"); got != "application/vnd.github+json" {
		t.Fatalf("the pull request was asked for as %q, want its JSON (its base), never its diff", got)
	}
}

// The diff is the merge request version whose head is the event's, not
// the newest version (a later push) nor the merge request's diffs
// (R-SOURCE-5); its base is the version's.
// Rules: R-SOURCE-5.
func TestGitLab_DiffPinnedToTheEventsVersion(t *testing.T) {
	f, gl := glServer(t)
	f.on("GET /api/v4/projects/gitlabhq%2Fgitlab-test/merge_requests/1/versions/111",
		reply(200, []byte(`{"id":111,"diffs":[{"old_path":"later.go","new_path":"later.go","diff":"@@ -1 +1 @@\n-a\n+b\n"}]}`)))
	f.on("GET /api/v4/projects/gitlabhq%2Fgitlab-test/merge_requests/1/diffs?per_page=100&page=1",
		reply(200, []byte(`[{"old_path":"later.go","new_path":"later.go","diff":"@@ -1 +1 @@\n-a\n+b\n"}]`)))
	cl, err := gl.Fetch(context.Background(), glRef)
	if err != nil {
		t.Fatal(err)
	}
	if cl.Diff != glWantDiff || cl.BaseSHA != glBase || strings.Contains(cl.Diff, "later.go") {
		t.Fatalf("base %q, diff:\n%s", cl.BaseSHA, cl.Diff)
	}
	for _, r := range f.requests() {
		if strings.HasSuffix(r.URL.Path, "/versions/111") || strings.HasSuffix(r.URL.Path, "/diffs") {
			t.Fatalf("read %s: the merge request's head now, not the event's version", r.URL.Path)
		}
	}
	// Another event's head is its own version.
	ref := glRef
	ref.HeadSHA = "0a1b2c3d4e5f60718293a4b5c6d7e8f901234567"
	if cl, err = gl.Fetch(context.Background(), ref); err != nil || !strings.Contains(cl.Diff, "later.go") {
		t.Fatalf("the later version: %v\n%s", err, cl.Diff)
	}
}

// Gerrit's diff is the event's patch set's, never the change's current
// revision (R-SOURCE-5).
// Rules: R-SOURCE-5.
func TestGerrit_DiffPinnedToTheEventsPatchSet(t *testing.T) {
	f, gr := grServer(t)
	f.on("GET /a/changes/TestRepo1~2/revisions/current/patch", reply(200, []byte(movedDiff)))
	f.on("GET /a/changes/TestRepo1~2/revisions/3/patch", reply(200, []byte(movedDiff)))
	cl, err := gr.Fetch(context.Background(), grRef)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(cl.Diff, "later.go") || !f.requested(grPatch) {
		t.Fatalf("diff:\n%s", cl.Diff)
	}
}
