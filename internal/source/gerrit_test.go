package source

import (
	"context"
	"encoding/base64"
	"net/http"
	"reflect"
	"strings"
	"testing"

	"github.com/criticizer/criticizer/internal/retry"
)

const (
	grUser     = "criticizer"
	grPassword = "Q7nV2kR9tW4xZ1pL"
	grPatch    = "GET /a/changes/TestRepo1~2/revisions/2/patch"
	grRevs     = "GET /a/changes/TestRepo1~2/reviewers/"
	grChange   = "GET /a/changes/TestRepo1~2"
	grBranch   = "GET /a/projects/TestRepo1/branches/patch_create"
	grCommit   = "GET /a/changes/TestRepo1~2/revisions/2/commit"
	// grIn asks whether the branch includes the patch set's parent.
	grIn = "GET /a/projects/TestRepo1/commits/b8112960b06810405b3e8ce6c8560ee93694700f/in"
	// grTip is the destination branch's tip (testdata/gerrit/branch.json):
	// the recorded patch set's parent is b8112960…, which a stacked
	// change's parent would be.
	grTip = "7d3b1e0a2f4c6b8d9e1f3a5c7b9d0e2f4a6c8b1d"
)

var grRef = Ref{Source: "gerrit", Repo: "TestRepo1", Number: 2, Patchset: 2, HeadSHA: "66e097f59116e761f5473b66b351f7eba63aed50"}

// grPatchReply answers like Gerrit's Get Patch: the format-patch output in
// base64, as text/plain.
func grPatchReply(mbox []byte) http.HandlerFunc {
	return reply(200, []byte(base64.StdEncoding.EncodeToString(mbox)),
		"Content-Type", "text/plain; charset=ISO-8859-1",
		"Content-Disposition", `attachment; filename="66e097f5.diff.base64"`,
		"X-FYI-Content-Encoding", "base64", "X-FYI-Content-Type", "application/mbox")
}

func grServer(t *testing.T) (*fakeAPI, *Gerrit) {
	f := newFakeAPI(t)
	f.on(grPatch, grPatchReply(fixture(t, "gerrit/patch.mbox")))
	f.on(grRevs, reply(200, fixture(t, "gerrit/reviewers.json"), "Content-Type", "application/json; charset=UTF-8"))
	f.on(grChange, reply(200, fixture(t, "gerrit/change.json"), "Content-Type", "application/json; charset=UTF-8"))
	f.on(grBranch, reply(200, fixture(t, "gerrit/branch.json"), "Content-Type", "application/json; charset=UTF-8"))
	f.on(grCommit, reply(200, fixture(t, "gerrit/commit.json"), "Content-Type", "application/json; charset=UTF-8"))
	f.on(grIn, reply(200, fixture(t, "gerrit/included_in.json"), "Content-Type", "application/json; charset=UTF-8"))
	return f, &Gerrit{BaseURL: f.srv.URL + "/", Username: grUser, Password: grPassword, Now: testClock}
}

func TestGerritFetch(t *testing.T) {
	f, gr := grServer(t)
	cl, err := gr.Fetch(context.Background(), grRef)
	if err != nil {
		t.Fatal(err)
	}
	mbox := string(fixture(t, "gerrit/patch.mbox"))
	want := mbox[strings.Index(mbox, "diff --git"):strings.Index(mbox, "-- \n2.39.2")]
	if cl.Diff != want || cl.Truncated {
		t.Fatalf("truncated %v, diff:\n%q\nwant:\n%q", cl.Truncated, cl.Diff, want)
	}
	if strings.Contains(cl.Diff, "admin@example.com") || strings.Contains(cl.Diff, "Subject:") {
		t.Fatal("the mail header reached the diff")
	}
	if paths := mustParseDiff(t, cl.Diff); !reflect.DeepEqual(paths, []string{"src/main/java/com/example/Greeter.java", "test.file"}) {
		t.Fatalf("files %v", paths)
	}
	wantRevs := []Reviewer{{Username: "jdoe", Email: "john.doe@example.com"}, {Email: "jane.roe@example.com"}}
	if !reflect.DeepEqual(cl.Reviewers.Requested, wantRevs) {
		t.Fatalf("reviewers %+v", cl.Reviewers)
	}
	for _, r := range f.requests() {
		u, p, ok := r.BasicAuth()
		if !ok || u != grUser || p != grPassword {
			t.Errorf("%s: basic auth %q %v", r.RequestURI, u, ok)
		}
	}
}

func TestGerritFetchRevisionAndProjectEscaping(t *testing.T) {
	tests := []struct {
		ref   Ref
		route string
	}{
		{Ref{Source: "gerrit", Repo: "platform/build", Number: 42}, "/a/changes/platform%2Fbuild~42/revisions/current/patch"},
		{Ref{Source: "gerrit", Repo: "platform/build", Number: 42, HeadSHA: "66e097f59116e761f5473b66b351f7eba63aed50"},
			"/a/changes/platform%2Fbuild~42/revisions/66e097f59116e761f5473b66b351f7eba63aed50/patch"},
		{Ref{Source: "gerrit", Repo: "platform/build", Number: 42, Patchset: 3, HeadSHA: "66e097f5"}, "/a/changes/platform%2Fbuild~42/revisions/3/patch"},
	}
	for _, tt := range tests {
		f := newFakeAPI(t)
		f.on("GET "+tt.route, grPatchReply(fixture(t, "gerrit/patch.mbox")))
		f.on("GET /a/changes/platform%2Fbuild~42/reviewers/", reply(200, []byte(")]}'\n[]")))
		f.on("GET /a/changes/platform%2Fbuild~42", reply(200, []byte(")]}'\n{\"project\":\"platform/build\",\"branch\":\"release/1.x\",\"_number\":42}")))
		f.on("GET /a/projects/platform%2Fbuild/branches/release%2F1.x", reply(200, []byte(")]}'\n{\"ref\":\"refs/heads/release/1.x\",\"revision\":\""+grTip+"\"}")))
		f.on("GET "+strings.TrimSuffix(tt.route, "/patch")+"/commit", reply(200, []byte(")]}'\n{\"parents\":[{\"commit\":\""+grTip+"\"}]}")))
		gr := &Gerrit{BaseURL: f.srv.URL, Username: grUser, Password: grPassword}
		if _, err := gr.Fetch(context.Background(), tt.ref); err != nil {
			t.Fatalf("%+v: %v", tt.ref, err)
		}
	}
}

func TestGerritFetchLineWrappedBase64AndNoXSSIPrefix(t *testing.T) {
	f, gr := grServer(t)
	enc := base64.StdEncoding.EncodeToString(fixture(t, "gerrit/patch.mbox"))
	var wrapped strings.Builder
	for len(enc) > 76 {
		wrapped.WriteString(enc[:76] + "\r\n")
		enc = enc[76:]
	}
	wrapped.WriteString(enc + "\n")
	f.on(grPatch, reply(200, []byte(wrapped.String()), "Content-Type", "text/plain; charset=ISO-8859-1"))
	f.on(grRevs, reply(200, []byte(`[{"_account_id":1000096,"name":"John Doe","email":"john.doe@example.com","username":"jdoe"}]`)))
	cl, err := gr.Fetch(context.Background(), grRef)
	if err != nil {
		t.Fatal(err)
	}
	if len(mustParseDiff(t, cl.Diff)) != 2 || len(cl.Reviewers.Requested) != 1 {
		t.Fatalf("%+v", cl)
	}
}

func TestGerritFetchTruncates(t *testing.T) {
	mbox := string(fixture(t, "gerrit/patch.mbox"))
	d := mbox[strings.Index(mbox, "diff --git"):]
	second := strings.Index(d, "diff --git a/test.file")
	_, gr := grServer(t)
	gr.MaxDiffBytes = second + 5
	cl, err := gr.Fetch(context.Background(), grRef)
	if err != nil {
		t.Fatal(err)
	}
	if !cl.Truncated || cl.Diff != d[:second] {
		t.Fatalf("truncated %v, diff:\n%s", cl.Truncated, cl.Diff)
	}
	// The first file alone is over the limit: nothing fits.
	gr.MaxDiffBytes = 100
	if cl, err = gr.Fetch(context.Background(), grRef); err != nil || !cl.Truncated || cl.Diff != "" {
		t.Fatalf("tiny limit: %+v, %v", cl, err)
	}
}

func TestGerritFetchErrors(t *testing.T) {
	tests := []struct {
		name      string
		route     string
		handler   http.HandlerFunc
		class     retry.Class
		retryable bool
	}{
		{"not found", grPatch, reply(404, fixture(t, "gerrit/not_found.txt")), retry.NotFound, false},
		{"unauthorized", grPatch, reply(401, fixture(t, "gerrit/unauthorized.txt")), retry.AuthDenied, false},
		{"server error", grRevs, reply(500, []byte("Internal server error")), retry.Upstream5xx, true},
		{"corrupt base64", grPatch, reply(200, []byte("not base64 at all!")), retry.Upstream5xx, true},
		{"garbled reviewers", grRevs, reply(200, []byte(")]}'\n[{")), retry.Upstream5xx, true},
		{"branch unreadable", grBranch, reply(401, fixture(t, "gerrit/unauthorized.txt")), retry.AuthDenied, false},
		{"branch names no commit", grBranch, reply(200, []byte(")]}'\n{\"ref\":\"refs/heads/patch_create\",\"revision\":\"patch_create\"}")), retry.Upstream5xx, true},
		{"change names no branch", grChange, reply(200, []byte(")]}'\n{\"_number\":2}")), retry.Upstream5xx, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, gr := grServer(t)
			f.on(tt.route, tt.handler)
			_, err := gr.Fetch(context.Background(), grRef)
			wantClass(t, err, tt.class, tt.retryable, 0)
			wantClean(t, err, grPassword, "Not found: TestRepo1", "Internal server error")
		})
	}
}

func TestGerritFetchNeedsBaseURL(t *testing.T) {
	_, err := (&Gerrit{}).Fetch(context.Background(), grRef)
	if c := retry.Classify(err); c == nil || c.Retryable() {
		t.Fatalf("err %v", err)
	}
}

// The commit a Gerrit version's files are read at is its destination
// branch's tip, asked of Gerrit (the change's branch, then the branch's
// revision), never the patch set or its parent: in a stack of changes the
// parent is the author's own unmerged change. A Ref that names a base (an
// earlier attempt pinned it) keeps it and asks for no tip; a branch Gerrit
// does not know leaves none, so no file is read.
// Rules: R-REPO-6, R-SOURCE-5.
func TestGerritFetch_BaseIsTheDestinationBranchsTip(t *testing.T) {
	f, gr := grServer(t)
	cl, err := gr.Fetch(context.Background(), grRef)
	if err != nil {
		t.Fatal(err)
	}
	if cl.BaseSHA != grTip || !f.requested(grChange) || !f.requested(grBranch) {
		t.Fatalf("base %q, want the branch's tip %s", cl.BaseSHA, grTip)
	}
	for _, r := range f.requests() {
		if strings.Contains(r.RequestURI, "parent=") || strings.Contains(r.RequestURI, "/files/") {
			t.Fatalf("read the patch set's parent: %s", r.RequestURI)
		}
	}

	pinned := grRef
	pinned.BaseSHA = "1111111111111111111111111111111111111111"
	f, gr = grServer(t)
	if cl, err = gr.Fetch(context.Background(), pinned); err != nil || cl.BaseSHA != pinned.BaseSHA {
		t.Fatalf("pinned: base %q, %v", cl.BaseSHA, err)
	}
	if f.requested(grBranch) {
		t.Fatal("asked for the branch's tip of a version whose base is pinned")
	}

	f, gr = grServer(t)
	f.on(grBranch, reply(404, []byte("Not found: patch_create")))
	if cl, err = gr.Fetch(context.Background(), grRef); err != nil || cl.BaseSHA != "" {
		t.Fatalf("unknown branch: base %q, %v; want none", cl.BaseSHA, err)
	}
}

// Whether a Gerrit patch set's diff is against merged code: its parent is
// the branch's tip, or a commit the branch includes; in a stack (the
// parent is another open change, which no branch includes) it is not, and
// what the diff shows of the parent proves nothing. A parent Gerrit
// cannot place is not merged either.
// Rules: R-CRITIC-7.
func TestGerritFetch_BaseUnmergedInAStack(t *testing.T) {
	for _, tc := range []struct {
		name     string
		in       http.HandlerFunc
		unmerged bool
	}{
		{"the branch includes the parent", reply(200, fixture(t, "gerrit/included_in.json")), false},
		{"stacked on an open change", reply(200, []byte(")]}'\n{\"branches\":[],\"tags\":[]}")), true},
		{"another branch includes it", reply(200, []byte(")]}'\n{\"branches\":[\"stable\"],\"tags\":[]}")), true},
		{"unknown to Gerrit", reply(404, []byte("Not found: b8112960")), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, gr := grServer(t)
			f.on(grIn, tc.in)
			cl, err := gr.Fetch(context.Background(), grRef)
			if err != nil || cl.BaseUnmerged != tc.unmerged {
				t.Fatalf("unmerged %v, %v; want %v", cl.BaseUnmerged, err, tc.unmerged)
			}
		})
	}
	// The parent is the tip: nothing more to ask.
	f, gr := grServer(t)
	f.on(grCommit, reply(200, []byte(")]}'\n{\"parents\":[{\"commit\":\""+grTip+"\"}]}")))
	if cl, err := gr.Fetch(context.Background(), grRef); err != nil || cl.BaseUnmerged || f.requested(grIn) {
		t.Fatalf("parent at the tip: unmerged %v, %v, asked included-in %v", cl.BaseUnmerged, err, f.requested(grIn))
	}
}
