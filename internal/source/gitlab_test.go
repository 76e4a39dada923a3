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
	glToken = "glpat-xK9vQ2mN8pL4rT6wY1zA"
	glHead  = "da1560886d4f094c3e6c9ef40349f7d38b5d27d7"
	glBase  = "ae73cb07c9eeaf35924a10f713b364d32b2dd34f"
	// The merge request's versions, newest first, and the version whose
	// head is the event's (R-SOURCE-5); the newest is a later push.
	glVersions = "GET /api/v4/projects/gitlabhq%2Fgitlab-test/merge_requests/1/versions?per_page=100&page=1"
	glVersion  = "GET /api/v4/projects/gitlabhq%2Fgitlab-test/merge_requests/1/versions/110"
	glRevs     = "GET /api/v4/projects/gitlabhq%2Fgitlab-test/merge_requests/1/reviewers?per_page=100"
	glMR       = "GET /api/v4/projects/gitlabhq%2Fgitlab-test/merge_requests/1"
)

var glRef = Ref{Source: "gitlab", Repo: "gitlabhq/gitlab-test", Number: 1, HeadSHA: glHead}

// glServer serves a merge request of two versions, as GitLab lists them.
func glServer(t *testing.T) (*fakeAPI, *GitLab) {
	f := newFakeAPI(t)
	f.on(glVersions, reply(200, fixture(t, "gitlab/versions.json"), "Content-Type", "application/json",
		"X-Page", "1", "X-Per-Page", "100", "X-Next-Page", "", "X-Total", "2", "X-Total-Pages", "1"))
	f.on(glVersion, reply(200, fixture(t, "gitlab/version.json"), "Content-Type", "application/json"))
	f.on(glRevs, reply(200, fixture(t, "gitlab/reviewers.json"), "Content-Type", "application/json",
		"X-Page", "1", "X-Total", "2"))
	f.on(glMR, reply(200, fixture(t, "gitlab/merge_request.json"), "Content-Type", "application/json"))
	return f, &GitLab{BaseURL: f.srv.URL + "/api/v4", Token: glToken, Now: testClock}
}

const glWantDiff = "diff --git a/VERSION b/VERSION\n" +
	"--- a/VERSION\n+++ b/VERSION\n" +
	"@@ -1 +1 @@\n-1.9.7\n+1.9.8\n" +
	"diff --git a/app/models/user.rb b/app/models/user.rb\n" +
	"--- a/app/models/user.rb\n+++ b/app/models/user.rb\n" +
	"@@ -10,6 +10,8 @@ class User < ApplicationRecord\n   has_many :projects\n   has_many :merge_requests\n \n" +
	"+  validates :username, presence: true, uniqueness: true\n+\n   def admin?\n     role == 'admin'\n   end\n" +
	"diff --git a/lib/viewport.js b/lib/viewport.js\nnew file mode 100644\n" +
	"--- /dev/null\n+++ b/lib/viewport.js\n" +
	"@@ -0,0 +1,4 @@\n+export function viewport() {\n+  // TODO: handle high-DPI screens\n" +
	"+  return { width: window.innerWidth, height: window.innerHeight };\n+}\n" +
	"diff --git a/doc/old.md b/doc/viewport.md\nrename from doc/old.md\nrename to doc/viewport.md\n"

func TestGitLabFetch(t *testing.T) {
	f, gl := glServer(t)
	cl, err := gl.Fetch(context.Background(), glRef)
	if err != nil {
		t.Fatal(err)
	}
	if cl.Diff != glWantDiff || cl.BaseSHA != glBase {
		t.Fatalf("diff (base %q):\n%s\nwant:\n%s", cl.BaseSHA, cl.Diff, glWantDiff)
	}
	if !cl.Truncated {
		t.Error("GitLab withheld a too_large file, but Truncated is false")
	}
	if paths := mustParseDiff(t, cl.Diff); !reflect.DeepEqual(paths, []string{"VERSION", "app/models/user.rb", "lib/viewport.js", "doc/viewport.md"}) {
		t.Fatalf("files %v", paths)
	}
	if want := []Reviewer{{Username: "user1"}, {Username: "user2"}}; !reflect.DeepEqual(cl.Reviewers.Requested, want) || cl.Reviewers.Author != "root" {
		t.Fatalf("reviewers %+v", cl.Reviewers)
	}
	reqs := f.requests()
	if len(reqs) != 4 {
		t.Fatalf("%d requests", len(reqs))
	}
	for _, r := range reqs {
		if got := r.Header.Get("PRIVATE-TOKEN"); got != glToken {
			t.Errorf("%s: PRIVATE-TOKEN %q", r.RequestURI, got)
		}
		if r.Header.Get("Authorization") != "" {
			t.Errorf("%s: unexpected Authorization", r.RequestURI)
		}
	}
}

func TestGitLabFetchNumericProjectID(t *testing.T) {
	f := newFakeAPI(t)
	f.on("GET /api/v4/projects/14/merge_requests/1/versions?per_page=100&page=1", reply(200, fixture(t, "gitlab/versions.json")))
	f.on("GET /api/v4/projects/14/merge_requests/1/versions/110", reply(200, fixture(t, "gitlab/version.json")))
	f.on("GET /api/v4/projects/14/merge_requests/1/reviewers?per_page=100", reply(200, []byte(`[]`)))
	f.on("GET /api/v4/projects/14/merge_requests/1", reply(200, []byte(`{"author":{"username":"root"}}`)))
	gl := &GitLab{BaseURL: f.srv.URL + "/api/v4", Token: glToken}
	cl, err := gl.Fetch(context.Background(), Ref{Source: "gitlab", Repo: "14", Number: 1, HeadSHA: glHead})
	if err != nil {
		t.Fatal(err)
	}
	if !cl.Truncated || len(mustParseDiff(t, cl.Diff)) != 4 || cl.Reviewers.Requested == nil || len(cl.Reviewers.Requested) != 0 {
		t.Fatalf("%+v", cl)
	}
}

// The version's diffs are read as a stream: past the limit, no more of
// the answer is decoded.
func TestGitLabFetchStopsReadingPastTheLimit(t *testing.T) {
	f, gl := glServer(t)
	gl.MaxDiffBytes = 200 // inside the second file
	// The files after the limit are garbled: never decoded.
	body := string(fixture(t, "gitlab/version.json"))
	i := strings.Index(body, `"new_path": "lib/viewport.js"`)
	f.on(glVersion, reply(200, []byte(body[:i]+`"new_path": `)))
	cl, err := gl.Fetch(context.Background(), glRef)
	if err != nil {
		t.Fatal(err)
	}
	want := "diff --git a/VERSION b/VERSION\n--- a/VERSION\n+++ b/VERSION\n@@ -1 +1 @@\n-1.9.7\n+1.9.8\n"
	if !cl.Truncated || cl.Diff != want {
		t.Fatalf("truncated %v, diff:\n%s", cl.Truncated, cl.Diff)
	}
}

func TestGitLabFetchErrors(t *testing.T) {
	reset := strconv.FormatInt(testNow.Add(45*time.Second).Unix(), 10)
	tests := []struct {
		name      string
		route     string
		handler   http.HandlerFunc
		class     retry.Class
		retryable bool
		after     time.Duration
	}{
		// GitLab's rate limiter: 429, Retry-After and RateLimit-* headers.
		{"rate limited", glVersions, reply(429, fixture(t, "gitlab/rate_limited.txt"),
			"Retry-After", "45", "RateLimit-Limit", "600", "RateLimit-Observed", "601", "RateLimit-Remaining", "0",
			"RateLimit-Reset", reset, "RateLimit-ResetTime", testNow.Add(45*time.Second).Format(http.TimeFormat)),
			retry.RateLimited, true, 45 * time.Second},
		{"rate limited, Retry-After only", glRevs, reply(429, fixture(t, "gitlab/rate_limited.txt"), "Retry-After", "7"),
			retry.RateLimited, true, 7 * time.Second},
		{"not found", glVersions, reply(404, fixture(t, "gitlab/not_found.json")), retry.NotFound, false, 0},
		{"unauthorized", glVersion, reply(401, fixture(t, "gitlab/unauthorized.json")), retry.AuthDenied, false, 0},
		{"forbidden", glRevs, reply(403, []byte(`{"message":"403 Forbidden"}`)), retry.AuthDenied, false, 0},
		{"server error on the version", glVersion, reply(500, fixture(t, "gitlab/server_error.json")), retry.Upstream5xx, true, 0},
		{"bad gateway", glRevs, reply(502, []byte("<html>502 Bad Gateway</html>")), retry.Upstream5xx, true, 0},
		{"garbled versions", glVersions, reply(200, []byte(`[{"id":`)), retry.Upstream5xx, true, 0},
		{"garbled diffs", glVersion, reply(200, []byte(`{"id":110,"diffs":[{"old_path":`)), retry.Upstream5xx, true, 0},
		// GitLab writes a push's version as it refreshes the merge
		// request: not listed yet is retried.
		{"version not listed yet", glVersions, reply(200, []byte(`[]`)), retry.NotFound, true, 0},
		{"reviewer without user", glRevs, reply(200, []byte(`[{"state":"unreviewed"}]`)), retry.Upstream5xx, true, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, gl := glServer(t)
			f.on(tt.route, tt.handler)
			_, err := gl.Fetch(context.Background(), glRef)
			wantClass(t, err, tt.class, tt.retryable, tt.after)
			wantClean(t, err, glToken, "Retry later", `"message"`, "<html>")
		})
	}
}

func TestGitLabFetchCanceled(t *testing.T) {
	_, gl := glServer(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := gl.Fetch(ctx, glRef)
	wantClass(t, err, retry.NetworkTimeout, true, 0)
}
