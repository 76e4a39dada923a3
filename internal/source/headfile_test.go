package source

import (
	"context"
	"encoding/base64"
	"net/http"
	"testing"
)

const headGo = "package svc\n\nfunc Handle() {}\n"

// Each source reads a changed file at the version's head commit, the one
// the event named, with the request each API documents: GitHub's contents
// API at ?ref={head sha}, raw; GitLab's repository files raw at
// ?ref={head sha}; Gerrit's file content of the revision whose patch was
// read, base64. A path's slashes are kept (GitHub) or encoded (GitLab,
// Gerrit) as each API asks.
// Rules: R-CONTEXT-1.
func TestHeadFile_ReadsAtTheHeadCommit(t *testing.T) {
	for _, tc := range []struct {
		name, route string
		reply       http.HandlerFunc
		fetcher     func(*fakeAPI) HeadFileFetcher
		ref         Ref
	}{
		{"github", "GET /api/v3/repos/Codertocat/Hello-World/contents/svc/handle.go?ref=" + ghHead,
			reply(200, []byte(headGo), "Content-Type", "application/vnd.github.raw+json"),
			func(f *fakeAPI) HeadFileFetcher {
				return &GitHub{BaseURL: f.srv.URL + "/api/v3", Token: ghToken, Now: testClock}
			}, ghRef},
		{"gitlab", "GET /api/v4/projects/gitlabhq%2Fgitlab-test/repository/files/svc%2Fhandle.go/raw?ref=" + glHead,
			reply(200, []byte(headGo), "Content-Type", "text/plain"),
			func(f *fakeAPI) HeadFileFetcher {
				return &GitLab{BaseURL: f.srv.URL + "/api/v4", Token: glToken, Now: testClock}
			}, glRef},
		{"gerrit", "GET /a/changes/TestRepo1~2/revisions/2/files/svc%2Fhandle.go/content",
			reply(200, []byte(base64.StdEncoding.EncodeToString([]byte(headGo))), "Content-Type", "text/plain; charset=ISO-8859-1"),
			func(f *fakeAPI) HeadFileFetcher {
				return &Gerrit{BaseURL: f.srv.URL, Username: grUser, Password: grPassword, Now: testClock}
			}, grRef},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFakeAPI(t)
			f.on(tc.route, tc.reply)
			got, err := tc.fetcher(f).HeadFile(context.Background(), tc.ref, "svc/handle.go", 1024)
			if err != nil || !got.Found || string(got.Content) != headGo {
				t.Fatalf("got %+v %v", got, err)
			}
			got, err = Router{tc.ref.Source: tc.fetcher(f).(Fetcher)}.HeadFile(context.Background(), tc.ref, "svc/handle.go", 1024)
			if err != nil || string(got.Content) != headGo {
				t.Fatalf("router: %+v %v", got, err)
			}
		})
	}
}

// Without a head commit GitHub and GitLab read nothing: never a branch.
// A missing file and one the token may not read are no file, not an
// error (the hunks are reviewed alone).
// Rules: R-CONTEXT-1.
func TestHeadFile_NoHeadNoReadMissingIsNoFile(t *testing.T) {
	f := newFakeAPI(t)
	f.on("GET /api/v3/repos/Codertocat/Hello-World/contents/gone.go?ref="+ghHead, reply(404, []byte(`{"message":"Not Found"}`)))
	f.on("GET /api/v3/repos/Codertocat/Hello-World/contents/secret.go?ref="+ghHead, reply(403, []byte(`{"message":"Resource not accessible by integration"}`)))
	gh := &GitHub{BaseURL: f.srv.URL + "/api/v3", Token: ghToken, Now: testClock}
	gl := &GitLab{BaseURL: f.srv.URL + "/api/v4", Token: glToken, Now: testClock}
	noHead := ghRef
	noHead.HeadSHA = ""
	glNoHead := glRef
	glNoHead.HeadSHA = ""
	if got, err := gh.HeadFile(context.Background(), noHead, "a.go", 1024); err != nil || got.Found {
		t.Fatalf("github without a head: %+v %v", got, err)
	}
	if got, err := gl.HeadFile(context.Background(), glNoHead, "a.go", 1024); err != nil || got.Found {
		t.Fatalf("gitlab without a head: %+v %v", got, err)
	}
	if n := len(f.requests()); n != 0 {
		t.Fatalf("%d requests without a head", n)
	}
	if got, err := gh.HeadFile(context.Background(), ghRef, "gone.go", 1024); err != nil || got.Found {
		t.Fatalf("missing: %+v %v", got, err)
	}
	if got, err := gh.HeadFile(context.Background(), ghRef, "secret.go", 1024); err != nil || got.Found || !got.Denied {
		t.Fatalf("denied: %+v %v", got, err)
	}
}
