package source

import (
	"context"
	"encoding/base64"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/criticizer/criticizer/internal/retry"
)

const settingsYAML = "ignore:\n  - \"gen/**\"\n"

// Each source reads .criticizer.yaml at code already merged, never at the
// version's head (R-REPO-1, R-REPO-6): the request each API documents, at
// the base commit (the destination branch's tip on Gerrit, as
// Changelist.BaseSHA named it), with the fetcher's credentials.
func TestBaseFile_ReadsAtTheBase(t *testing.T) {
	glBaseRef := glRef
	glBaseRef.BaseSHA = glBase
	grBaseRef := grRef
	grBaseRef.BaseSHA = grTip
	for _, tc := range []struct {
		name, route string
		reply       http.HandlerFunc
		fetcher     func(*fakeAPI) FileFetcher
		ref         Ref
		auth        func(*http.Request) bool
	}{
		{"github", "GET /api/v3/repos/Codertocat/Hello-World/contents/.criticizer.yaml?ref=" + ghBase,
			reply(200, []byte(settingsYAML), "Content-Type", "application/vnd.github.raw+json"),
			func(f *fakeAPI) FileFetcher {
				return &GitHub{BaseURL: f.srv.URL + "/api/v3", Token: ghToken, Now: testClock}
			}, ghRef,
			func(r *http.Request) bool {
				return r.Header.Get("Authorization") == "Bearer "+ghToken && r.Header.Get("Accept") == "application/vnd.github.raw+json"
			}},
		{"gitlab", "GET /api/v4/projects/gitlabhq%2Fgitlab-test/repository/files/.criticizer.yaml/raw?ref=" + glBase,
			reply(200, []byte(settingsYAML), "Content-Type", "text/plain"),
			func(f *fakeAPI) FileFetcher {
				return &GitLab{BaseURL: f.srv.URL + "/api/v4", Token: glToken, Now: testClock}
			}, glBaseRef,
			func(r *http.Request) bool { return r.Header.Get("PRIVATE-TOKEN") == glToken }},
		{"gerrit", "GET /a/projects/TestRepo1/commits/" + grTip + "/files/.criticizer.yaml/content",
			reply(200, []byte(base64.StdEncoding.EncodeToString([]byte(settingsYAML))), "Content-Type", "text/plain; charset=ISO-8859-1"),
			func(f *fakeAPI) FileFetcher {
				return &Gerrit{BaseURL: f.srv.URL, Username: grUser, Password: grPassword, Now: testClock}
			}, grBaseRef,
			func(r *http.Request) bool { u, p, ok := r.BasicAuth(); return ok && u == grUser && p == grPassword }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFakeAPI(t)
			f.on(tc.route, tc.reply)
			got, err := tc.fetcher(f).BaseFile(context.Background(), tc.ref, ".criticizer.yaml", 1024)
			if err != nil {
				t.Fatal(err)
			}
			if !got.Found || got.Denied || string(got.Content) != settingsYAML {
				t.Fatalf("got %+v", got)
			}
			if reqs := f.requests(); len(reqs) != 1 || !tc.auth(reqs[0]) {
				t.Fatalf("requests %d, credentials or Accept missing", len(reqs))
			}
			// Through the router too.
			got, err = Router{tc.ref.Source: tc.fetcher(f).(Fetcher)}.BaseFile(context.Background(), tc.ref, ".criticizer.yaml", 1024)
			if err != nil || string(got.Content) != settingsYAML {
				t.Fatalf("router: %+v %v", got, err)
			}
		})
	}
}

// Without a base commit, GitHub reads the default branch and GitLab and
// Gerrit read nothing: never the head, nor the patch set's parent
// (R-REPO-6).
func TestBaseFile_WithoutABaseNeverTheHead(t *testing.T) {
	f := newFakeAPI(t)
	f.on("GET /api/v3/repos/Codertocat/Hello-World/contents/.criticizer.yaml", reply(200, []byte(settingsYAML)))
	gh := &GitHub{BaseURL: f.srv.URL + "/api/v3", Token: ghToken, Now: testClock}
	ref := ghRef
	ref.BaseSHA = ""
	if got, err := gh.BaseFile(context.Background(), ref, ".criticizer.yaml", 1024); err != nil || !got.Found {
		t.Fatalf("github: %+v %v", got, err)
	}
	gl := &GitLab{BaseURL: f.srv.URL + "/api/v4", Token: glToken, Now: testClock}
	if got, err := gl.BaseFile(context.Background(), glRef, ".criticizer.yaml", 1024); err != nil || got.Found {
		t.Fatalf("gitlab: %+v %v", got, err)
	}
	gr := &Gerrit{BaseURL: f.srv.URL, Username: grUser, Password: grPassword, Now: testClock}
	if got, err := gr.BaseFile(context.Background(), grRef, ".criticizer.yaml", 1024); err != nil || got.Found {
		t.Fatalf("gerrit: %+v %v", got, err)
	}
	if n := len(f.requests()); n != 1 {
		t.Fatalf("%d requests, want GitHub's one", n)
	}
}

// A missing file is defaults, a file the token may not read is reported
// Denied (and reviewed with defaults), and every other failure is the
// diff's: classified and retried.
func TestFile_MissingDeniedAndFailing(t *testing.T) {
	const route = "GET /api/v3/repos/Codertocat/Hello-World/contents/.criticizer.yaml?ref=" + ghBase
	for _, tc := range []struct {
		name       string
		reply      http.HandlerFunc
		want       RepoFile
		class      retry.Class
		retryAfter time.Duration
	}{
		{"missing", reply(404, []byte(`{"message":"Not Found"}`)), RepoFile{}, "", 0},
		{"denied", reply(403, []byte(`{"message":"Resource not accessible by integration"}`)), RepoFile{Denied: true}, "", 0},
		{"unauthorized", reply(401, []byte(`{"message":"Bad credentials"}`)), RepoFile{Denied: true}, "", 0},
		{"rate limited", reply(403, nil, "X-RateLimit-Remaining", "0", "X-RateLimit-Reset", "1741965026"), RepoFile{}, retry.RateLimited, 60 * time.Second},
		{"5xx", reply(502, []byte("bad gateway")), RepoFile{}, retry.Upstream5xx, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFakeAPI(t)
			f.on(route, tc.reply)
			gh := &GitHub{BaseURL: f.srv.URL + "/api/v3", Token: ghToken, Now: testClock}
			got, err := gh.BaseFile(context.Background(), ghRef, ".criticizer.yaml", 1024)
			if tc.class != "" {
				wantClass(t, err, tc.class, true, tc.retryAfter)
				wantClean(t, err, ghToken)
				return
			}
			if err != nil || got.Found != tc.want.Found || got.Denied != tc.want.Denied {
				t.Fatalf("got %+v %v, want %+v", got, err, tc.want)
			}
		})
	}
}

// At most limit+1 bytes are read: enough to tell that the file is over
// the limit, never the whole of a huge file.
func TestFile_ReadsAtMostTheLimit(t *testing.T) {
	const route = "GET /api/v4/projects/gitlabhq%2Fgitlab-test/repository/files/.criticizer.yaml/raw?ref=" + glBase
	f := newFakeAPI(t)
	f.on(route, reply(200, []byte(strings.Repeat("#", 1<<20))))
	gl := &GitLab{BaseURL: f.srv.URL + "/api/v4", Token: glToken, Now: testClock}
	ref := glRef
	ref.BaseSHA = glBase
	got, err := gl.BaseFile(context.Background(), ref, ".criticizer.yaml", 100)
	if err != nil || !got.Found || len(got.Content) != 101 {
		t.Fatalf("got %d bytes, found %v, %v", len(got.Content), got.Found, err)
	}
}
