package source

import (
	"context"
	"encoding/base64"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/criticizer/criticizer/internal/diff"
	"github.com/criticizer/criticizer/internal/retry"
)

// fuzzUpstream is one local HTTP server standing in for all three code
// review systems; each fuzz input sets what it answers.
type fuzzUpstream struct {
	mu                 sync.Mutex
	diff, reviewers    []byte
	githubNoDiff       bool // GitHub answers 406 to the diff: the comparison's files are used
	gerritRawNotBase64 bool
}

func (u *fuzzUpstream) set(diff, reviewers []byte, githubNoDiff, gerritRaw bool) {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.diff, u.reviewers, u.githubNoDiff, u.gerritRawNotBase64 = diff, reviewers, githubNoDiff, gerritRaw
}

func (u *fuzzUpstream) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	u.mu.Lock()
	d, revs, noDiff, raw := u.diff, u.reviewers, u.githubNoDiff, u.gerritRawNotBase64
	u.mu.Unlock()
	p := r.URL.EscapedPath()
	switch {
	case strings.HasSuffix(p, "/requested_reviewers"), strings.HasSuffix(p, "/reviewers"), strings.HasSuffix(p, "/reviewers/"):
		w.Write(revs)
	case strings.HasSuffix(p, "/reviews"), strings.HasSuffix(p, "/members"):
		w.Write([]byte("[]"))
	case strings.HasSuffix(p, "/a/changes/r~2"):
		w.Write([]byte(")]}'\n{\"project\":\"r\",\"branch\":\"main\",\"_number\":2}"))
	case strings.HasSuffix(p, "/a/changes/r~2/revisions/2/commit"):
		w.Write([]byte(")]}'\n{\"parents\":[{\"commit\":\"" + fuzzBase + "\"}]}"))
	case strings.HasSuffix(p, "/a/projects/r/branches/main"):
		w.Write([]byte(")]}'\n{\"ref\":\"refs/heads/main\",\"revision\":\"" + fuzzBase + "\"}"))
	case strings.HasSuffix(p, "/merge_requests/2"):
		w.Write([]byte(`{"author":{"username":"author"}}`))
	case strings.Contains(p, "/compare/") && r.Header.Get("Accept") == "application/vnd.github.diff":
		if noDiff {
			http.Error(w, `{"message":"Sorry, the diff exceeded the maximum number of files (300)."}`, http.StatusNotAcceptable)
			return
		}
		w.Write(d)
	case strings.Contains(p, "/compare/"):
		// The comparison as JSON: the served body is its files.
		w.Write([]byte(`{"status":"ahead","commits":[{"sha":"x"}],"files":`))
		w.Write(d)
		w.Write([]byte(`}`))
	case strings.HasSuffix(p, "/versions"):
		w.Write([]byte(`[{"id":7,"head_commit_sha":"` + fuzzHead + `","base_commit_sha":"` + fuzzBase + `"}]`))
	case strings.HasSuffix(p, "/versions/7"):
		// The merge request version: the served body is its diffs.
		w.Write([]byte(`{"id":7,"commits":[],"diffs":`))
		w.Write(d)
		w.Write([]byte(`}`))
	case strings.HasSuffix(p, "/patch"):
		if raw {
			w.Write(d)
			return
		}
		w.Write([]byte(base64.StdEncoding.EncodeToString(d)))
	default:
		http.NotFound(w, r)
	}
}

const (
	fuzzToken = "tok-9f8e7d6c5b4a39281706"
	fuzzHead  = "ec26c3e57ca3a959ca5aad62de7213c562f8c821"
	fuzzBase  = "f95f852bd8fca8fcc58a9a2d6c842781e32a215e"
)

// FuzzFetch serves arbitrary upstream answers (seeded with the recorded
// GitHub, GitLab and Gerrit responses in testdata/) to the three fetchers.
// Properties: no panic; every failure is classified for the stage runner
// (a *retry.Error) and does not carry the credentials; a fetched diff is at
// most MaxDiffBytes; reviewers are unique and addressable; the base is the
// version's; a diff served
// whole (GitHub's diff, Gerrit's patch) comes back as a prefix of it, cut
// exactly when it was over the limit; and when the served diff parses, the
// fetched (possibly truncated) diff parses too: truncation keeps a
// well-formed diff (TruncateDiff's promise).
func FuzzFetch(f *testing.F) {
	seed := func(kind uint8, diffPath, revsPath string, limit uint16) {
		f.Add(kind, fixture(f, diffPath), fixture(f, revsPath), limit)
	}
	for _, limit := range []uint16{0, 300, 900} {
		seed(0, "github/pull.diff", "github/requested_reviewers.json", limit)
		seed(1, "github/files.json", "github/requested_reviewers.json", limit)
		seed(2, "gitlab/diffs.page1.json", "gitlab/reviewers.json", limit)
		seed(2, "gitlab/diffs.page2.json", "gitlab/reviewers.json", limit)
		seed(3, "gerrit/patch.mbox", "gerrit/reviewers.json", limit)
	}
	seed(0, "github/server_error.html", "github/not_found.json", 0)
	seed(1, "github/diff_too_large.json", "github/bad_credentials.json", 0)
	seed(2, "gitlab/server_error.json", "gitlab/unauthorized.json", 0)
	seed(3+4, "gerrit/not_found.txt", "gerrit/unauthorized.txt", 0)

	up := &fuzzUpstream{}
	srv := httptest.NewServer(up)
	f.Cleanup(srv.Close)
	ctx := context.Background()

	f.Fuzz(func(t *testing.T, kind uint8, served, reviewers []byte, limit uint16) {
		max := int(limit) + 1
		which := kind % 4
		up.set(served, reviewers, which == 1, kind&4 != 0)
		var cl Changelist
		var err error
		switch which {
		case 0, 1:
			g := &GitHub{BaseURL: srv.URL + "/api/v3", Token: fuzzToken, MaxDiffBytes: max, Now: testClock}
			cl, err = g.Fetch(ctx, Ref{Source: "github", Repo: "o/r", Number: 2, HeadSHA: fuzzHead, BaseSHA: fuzzBase})
		case 2:
			g := &GitLab{BaseURL: srv.URL + "/api/v4", Token: fuzzToken, MaxDiffBytes: max, Now: testClock}
			cl, err = g.Fetch(ctx, Ref{Source: "gitlab", Repo: "o/r", Number: 2, HeadSHA: fuzzHead})
		case 3:
			g := &Gerrit{BaseURL: srv.URL, Username: "criticizer", Password: fuzzToken, MaxDiffBytes: max, Now: testClock}
			cl, err = g.Fetch(ctx, Ref{Source: "gerrit", Repo: "r", Number: 2, Patchset: 2})
		}
		if err != nil {
			if _, ok := errors.AsType[*retry.Error](err); !ok {
				t.Fatalf("unclassified error %T: %v", err, err)
			}
			if strings.Contains(err.Error(), fuzzToken) {
				t.Fatalf("error carries the credentials: %v", err)
			}
			return
		}
		if len(cl.Diff) > max {
			t.Fatalf("diff of %d bytes, limit %d", len(cl.Diff), max)
		}
		if cl.Reviewers.Requested == nil {
			t.Fatal("nil reviewers")
		}
		if cl.BaseSHA != fuzzBase {
			t.Fatalf("base %q, want the version's %q (R-SOURCE-5; Gerrit's destination branch's tip)", cl.BaseSHA, fuzzBase)
		}
		seen := map[string]bool{}
		for _, r := range cl.Reviewers.Requested {
			k := strings.ToLower(r.Email) + "\x00" + strings.ToLower(r.Username)
			if (r.Username == "" && r.Email == "") || seen[k] {
				t.Fatalf("reviewer %+v empty or repeated in %+v", r, cl.Reviewers)
			}
			seen[k] = true
		}

		var whole string // the diff as served, when it is served whole
		switch which {
		case 0:
			whole = string(served)
			if !strings.HasPrefix(whole, cl.Diff) || cl.Truncated != (len(whole) > max) || (!cl.Truncated && cl.Diff != whole) {
				t.Fatalf("served %d bytes, limit %d: fetched %d bytes, truncated %v", len(whole), max, len(cl.Diff), cl.Truncated)
			}
		case 3:
			if kind&4 == 0 {
				whole = string(served)
				if i := firstLineStart(whole, "diff --git "); i >= 0 {
					whole = whole[i:]
				}
				if !strings.HasPrefix(whole, cl.Diff) {
					t.Fatalf("fetched diff is not a prefix of the patch's diff")
				}
			}
		}
		if whole == "" {
			return
		}
		if _, err := diff.ParseString(whole); err != nil {
			return
		}
		if _, err := diff.ParseString(cl.Diff); err != nil {
			t.Fatalf("served diff parses, fetched one (%d of %d bytes, truncated %v) does not: %v", len(cl.Diff), len(whole), cl.Truncated, err)
		}
	})
}
