package source

import (
	"context"
	"net/http"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/criticizer/criticizer/internal/retry"
)

const (
	ghToken = "ghs_16C7e42F292c6912E7710c838347Ae178B4a"
	ghBase  = "f95f852bd8fca8fcc58a9a2d6c842781e32a215e"
	ghHead  = "ec26c3e57ca3a959ca5aad62de7213c562f8c821"
	ghPull  = "GET /api/v3/repos/Codertocat/Hello-World/pulls/2"
	// ghDiff is the comparison of the event's base and head commits
	// (R-SOURCE-5), as a diff or, with ?per_page=1, as JSON.
	ghDiff  = "GET /api/v3/repos/Codertocat/Hello-World/compare/" + ghBase + "..." + ghHead
	ghFiles = ghDiff + "?per_page=1"
	ghRevs  = "GET /api/v3/repos/Codertocat/Hello-World/pulls/2/requested_reviewers"
	ghRevws = "GET /api/v3/repos/Codertocat/Hello-World/pulls/2/reviews?per_page=100&page=1"
	ghTeam  = "GET /api/v3/orgs/Codertocat/teams/justice-league/members?per_page=100&page=1"
)

var ghRef = Ref{Source: "github", Repo: "Codertocat/Hello-World", Number: 2, HeadSHA: ghHead, BaseSHA: ghBase}

// ghServer serves the recorded pull request, GitHub Enterprise style
// (API under /api/v3).
func ghServer(t *testing.T) (*fakeAPI, *GitHub) {
	f := newFakeAPI(t)
	f.on(ghDiff, reply(200, fixture(t, "github/pull.diff"), "Content-Type", "text/plain; charset=utf-8"))
	f.on(ghRevs, reply(200, fixture(t, "github/requested_reviewers.json"), "Content-Type", "application/json; charset=utf-8"))
	f.on(ghTeam, reply(200, fixture(t, "github/team_members.json"), "Content-Type", "application/json; charset=utf-8"))
	f.on(ghRevws, reply(200, fixture(t, "github/reviews.json"), "Content-Type", "application/json; charset=utf-8"))
	return f, &GitHub{BaseURL: f.srv.URL + "/api/v3/", Token: ghToken, Now: testClock}
}

func TestGitHubFetch(t *testing.T) {
	f, gh := ghServer(t)
	cl, err := gh.Fetch(context.Background(), ghRef)
	if err != nil {
		t.Fatal(err)
	}
	if cl.Diff != string(fixture(t, "github/pull.diff")) || cl.Truncated || cl.BaseSHA != ghBase {
		t.Fatalf("diff (truncated %v, base %q):\n%s", cl.Truncated, cl.BaseSHA, cl.Diff)
	}
	if paths := mustParseDiff(t, cl.Diff); !reflect.DeepEqual(paths, []string{"README.md", "docs/usage.md", "hello.go"}) {
		t.Fatalf("files %v", paths)
	}
	// The users, then the team's members (octocat once).
	want := []Reviewer{{Username: "octocat"}, {Username: "hubot"}, {Username: "wonderwoman", Team: "justice-league"}}
	if !reflect.DeepEqual(cl.Reviewers.Requested, want) {
		t.Fatalf("requested %+v", cl.Reviewers.Requested)
	}
	// Submitted reviews, with their times; the pending one does not count.
	wantReviewed := []Reviewer{
		{Username: "monalisa", Reviewed: time.Date(2019, 11, 17, 17, 43, 43, 0, time.UTC)},
		{Username: "Codertocat", Reviewed: time.Date(2019, 11, 17, 18, 1, 2, 0, time.UTC)},
	}
	if !reflect.DeepEqual(cl.Reviewers.Reviewed, wantReviewed) || len(cl.Reviewers.UnexpandedTeams) != 0 {
		t.Fatalf("reviewed %+v, unexpanded %v", cl.Reviewers.Reviewed, cl.Reviewers.UnexpandedTeams)
	}
	reqs := f.requests()
	if len(reqs) != 4 {
		t.Fatalf("%d requests", len(reqs))
	}
	for _, r := range reqs {
		if got := r.Header.Get("Authorization"); got != "Bearer "+ghToken {
			t.Errorf("%s: Authorization %q", r.URL.Path, got)
		}
		if got := r.Header.Get("X-GitHub-Api-Version"); got != GitHubAPIVersion {
			t.Errorf("%s: X-GitHub-Api-Version %q", r.URL.Path, got)
		}
		if r.Header.Get("User-Agent") == "" {
			t.Errorf("%s: no User-Agent (GitHub refuses requests without one)", r.URL.Path)
		}
	}
	if got := reqs[0].Header.Get("Accept"); got != "application/vnd.github.diff" {
		t.Errorf("diff Accept %q", got)
	}
	if got := reqs[1].Header.Get("Accept"); got != "application/vnd.github+json" {
		t.Errorf("reviewers Accept %q", got)
	}
}

func TestGitHubFetchWithoutToken(t *testing.T) {
	f, gh := ghServer(t)
	gh.Token = ""
	if _, err := gh.Fetch(context.Background(), ghRef); err != nil {
		t.Fatal(err)
	}
	for _, r := range f.requests() {
		if r.Header.Get("Authorization") != "" {
			t.Fatal("Authorization sent without a token")
		}
	}
}

func TestGitHubFetchTruncatesAtFileBoundary(t *testing.T) {
	full := string(fixture(t, "github/pull.diff"))
	third := strings.Index(full, "diff --git a/hello.go")
	for _, limit := range []int{third, third + 10, len(full) - 1} {
		t.Run(strconv.Itoa(limit), func(t *testing.T) {
			_, gh := ghServer(t)
			gh.MaxDiffBytes = limit
			cl, err := gh.Fetch(context.Background(), ghRef)
			if err != nil {
				t.Fatal(err)
			}
			if !cl.Truncated || cl.Diff != full[:third] {
				t.Fatalf("truncated %v, diff:\n%s", cl.Truncated, cl.Diff)
			}
			if paths := mustParseDiff(t, cl.Diff); len(paths) != 2 {
				t.Fatalf("files %v", paths)
			}
		})
	}
}

// compareJSON is the comparison as JSON (GET .../compare/{base}...{head}),
// its files those of testdata/github/files.json.
func compareJSON(t *testing.T) []byte {
	return []byte(`{"url":"https://api.github.com/repos/Codertocat/Hello-World/compare/` + ghBase + `...` + ghHead + `",` +
		`"status":"ahead","ahead_by":1,"behind_by":0,"total_commits":1,` +
		`"merge_base_commit":{"sha":"` + ghBase + `","parents":[]},` +
		`"commits":[{"sha":"` + ghHead + `","commit":{"message":"Update README.md"}}],` +
		`"files":` + string(fixture(t, "github/files.json")) + `}`)
}

// GitHub refuses to render diffs over 20,000 lines or 300 files (406); the
// comparison as JSON still lists each file's patch.
func TestGitHubFetchFallsBackToFiles(t *testing.T) {
	f, gh := ghServer(t)
	f.on(ghDiff, reply(406, fixture(t, "github/diff_too_large.json"), "Content-Type", "application/json; charset=utf-8"))
	f.on(ghFiles, reply(200, compareJSON(t), "Content-Type", "application/json; charset=utf-8"))
	cl, err := gh.Fetch(context.Background(), ghRef)
	if err != nil {
		t.Fatal(err)
	}
	if !cl.Truncated {
		t.Error("the image GitHub served without a patch is missing, but Truncated is false")
	}
	want := "diff --git a/README.md b/README.md\n" +
		"--- a/README.md\n+++ b/README.md\n" +
		"@@ -1 +1,3 @@\n-\n+# Hello-World\n+\n+This is a pretty simple change that we need to pull into master.\n" +
		"diff --git a/docs/usage.md b/docs/usage.md\nnew file mode 100644\n" +
		"--- /dev/null\n+++ b/docs/usage.md\n" +
		"@@ -0,0 +1,6 @@\n+# Usage\n+\n+Run the greeter:\n+\n+    ./hello --name World\n+\n" +
		"diff --git a/hello.go b/cmd/hello/main.go\nrename from hello.go\nrename to cmd/hello/main.go\n"
	if cl.Diff != want {
		t.Fatalf("diff:\n%s\nwant:\n%s", cl.Diff, want)
	}
	if paths := mustParseDiff(t, cl.Diff); !reflect.DeepEqual(paths, []string{"README.md", "docs/usage.md", "cmd/hello/main.go"}) {
		t.Fatalf("files %v", paths)
	}
	if len(cl.Reviewers.Requested) != 3 {
		t.Fatalf("reviewers %+v", cl.Reviewers)
	}
}

func TestGitHubFetchErrors(t *testing.T) {
	reset := strconv.FormatInt(testNow.Add(2*time.Minute).Unix(), 10)
	tests := []struct {
		name      string
		route     string
		handler   http.HandlerFunc
		class     retry.Class
		retryable bool
		after     time.Duration
	}{
		{"primary rate limit spent", ghDiff, reply(403, fixture(t, "github/rate_limited.json"),
			"X-RateLimit-Limit", "5000", "X-RateLimit-Remaining", "0", "X-RateLimit-Used", "5000",
			"X-RateLimit-Reset", reset, "X-RateLimit-Resource", "core"),
			retry.RateLimited, true, 2 * time.Minute},
		{"rate limit spent, 429", ghRevs, reply(429, fixture(t, "github/rate_limited.json"),
			"x-ratelimit-remaining", "0", "x-ratelimit-reset", reset),
			retry.RateLimited, true, 2 * time.Minute},
		{"reset already past", ghDiff, reply(403, fixture(t, "github/rate_limited.json"),
			"X-RateLimit-Remaining", "0", "X-RateLimit-Reset", strconv.FormatInt(testNow.Add(-time.Hour).Unix(), 10)),
			retry.RateLimited, true, time.Second},
		{"secondary rate limit", ghDiff, reply(403, fixture(t, "github/secondary_rate_limit.json"), "Retry-After", "60"),
			retry.RateLimited, true, time.Minute},
		{"429 with Retry-After", ghDiff, reply(429, nil, "Retry-After", "30"),
			retry.RateLimited, true, 30 * time.Second},
		{"not found", ghDiff, reply(404, fixture(t, "github/not_found.json")), retry.NotFound, false, 0},
		{"bad credentials", ghDiff, reply(401, fixture(t, "github/bad_credentials.json")), retry.AuthDenied, false, 0},
		{"forbidden", ghRevs, reply(403, []byte(`{"message":"Resource not accessible by integration"}`), "X-RateLimit-Remaining", "4999"),
			retry.AuthDenied, false, 0},
		{"unicorn", ghDiff, reply(503, fixture(t, "github/server_error.html"), "Content-Type", "text/html"), retry.Upstream5xx, true, 0},
		{"garbled reviewers", ghRevs, reply(200, []byte(`{"users":[{"login":`)), retry.Upstream5xx, true, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, gh := ghServer(t)
			f.on(tt.route, tt.handler)
			_, err := gh.Fetch(context.Background(), ghRef)
			wantClass(t, err, tt.class, tt.retryable, tt.after)
			wantClean(t, err, ghToken, "exceeded", "Bad credentials", "Unicorn")
		})
	}
}

func TestGitHubFetchNetworkError(t *testing.T) {
	f, gh := ghServer(t)
	f.srv.Close()
	gh.BaseURL = "http://x-access-token:" + ghToken + "@" + strings.TrimPrefix(f.srv.URL, "http://") + "/api/v3?debug=" + ghToken
	_, err := gh.Fetch(context.Background(), ghRef)
	wantClass(t, err, retry.NetworkError, true, 0)
	wantClean(t, err, ghToken)
}

func TestGitHubFetchBadRefs(t *testing.T) {
	gh := &GitHub{Token: ghToken}
	for _, ref := range []Ref{
		{Source: "gitlab", Repo: "a/b", Number: 1},
		{Source: "github", Repo: "no-slash", Number: 1},
		{Source: "github", Repo: "a/b/c", Number: 1},
		{Source: "github", Repo: "a/b", Number: 0},
	} {
		_, err := gh.Fetch(context.Background(), ref)
		if c := retry.Classify(err); c == nil || c.Retryable() {
			t.Errorf("%+v: err %v, want a permanent error", ref, err)
		}
	}
}

// A requested team whose members the token may not read (403, or the 404
// GitHub answers for a team it hides) is reported as unexpanded, and the
// other reviewers still come; a failing reviews list fails the fetch (the
// stage retries), because leaving out who reviewed would drop them from
// the version.
// Rules: R-REVIEWERS-2.
func TestGitHubReviewers_UnreadableTeamReportedReviewsFailureFails(t *testing.T) {
	for _, status := range []int{403, 404} {
		f, gh := ghServer(t)
		f.on(ghTeam, reply(status, fixture(t, "github/not_found.json"), "Content-Type", "application/json; charset=utf-8"))
		got, err := gh.Reviewers(context.Background(), ghRef)
		if err != nil {
			t.Fatalf("%d on the team: %v", status, err)
		}
		if !reflect.DeepEqual(got.UnexpandedTeams, []string{"Codertocat/justice-league"}) || len(got.Requested) != 2 || len(got.Reviewed) != 2 {
			t.Fatalf("%d on the team: %+v", status, got)
		}
		for _, r := range f.requests() {
			if strings.Contains(r.URL.Path, "/compare/") {
				t.Fatal("Reviewers fetched the diff")
			}
		}
	}
	f, gh := ghServer(t)
	f.on(ghRevws, reply(502, fixture(t, "github/server_error.html"), "Content-Type", "text/html"))
	_, err := gh.Reviewers(context.Background(), ghRef)
	if c := retry.Classify(err); c == nil || c.Class != retry.Upstream5xx || !c.Retryable() {
		t.Fatalf("reviews 502: %v", err)
	}
}
