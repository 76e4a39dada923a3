package source

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/criticizer/criticizer/internal/retry"
)

func TestStaticDirectory(t *testing.T) {
	d, err := ParseStaticDirectory([]byte(`{
		"github": {"octocat": "Octo@Example.com", "Hubot": "hubot@example.com"},
		"gitlab": {"user1": "user1@example.com"}
	}`))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		source, user, want string
		ok                 bool
	}{
		{"github", "octocat", "octo@example.com", true},
		{"github", "OctoCat", "octo@example.com", true}, // logins are case-insensitive
		{"github", "hubot", "hubot@example.com", true},
		{"gitlab", "user1", "user1@example.com", true},
		{"github", "user1", "", false}, // per source
		{"github", "nobody", "", false},
		{"gerrit", "octocat", "", false},
	}
	for _, tt := range tests {
		got, ok, err := d.Lookup(context.Background(), tt.source, tt.user)
		if err != nil || ok != tt.ok || got != tt.want {
			t.Errorf("Lookup(%s, %s) = %q, %v, %v; want %q, %v", tt.source, tt.user, got, ok, err, tt.want, tt.ok)
		}
	}
	var nilDir *StaticDirectory
	if _, ok, err := nilDir.Lookup(context.Background(), "github", "octocat"); ok || err != nil {
		t.Fatal("nil directory answered")
	}
}

func TestStaticDirectoryRejectsBadConfig(t *testing.T) {
	for _, cfg := range []string{
		`{"github": {"octocat": "not an address"}}`,
		`{"github": {"octocat": "Octo Cat <octo@example.com>"}}`,
		`{"github": {"octocat": "octo@localhost"}}`,
		`{"github": {"octocat": "octo@example.com", "OCTOCAT": "other@example.com"}}`,
		`{"github": {"": "octo@example.com"}}`,
		`{"": {"octocat": "octo@example.com"}}`,
		`{"github": ["octocat"]}`,
		`{"github": {}} {}`,
		`[]`,
	} {
		_, err := ParseStaticDirectory([]byte(cfg))
		if err == nil {
			t.Errorf("%s: accepted", cfg)
			continue
		}
		if strings.Contains(err.Error(), "octo@") || strings.Contains(err.Error(), "Octo Cat") {
			t.Errorf("%s: error leaks an address: %v", cfg, err)
		}
	}
}

type failingDirectory struct{}

func (failingDirectory) Lookup(context.Context, string, string) (string, bool, error) {
	return "", false, errors.New("directory unavailable")
}

func TestResolveReviewers(t *testing.T) {
	d, err := NewStaticDirectory(map[string]map[string]string{"github": {"octocat": "octo@example.com", "octo2": "OCTO@example.com"}})
	if err != nil {
		t.Fatal(err)
	}
	in := []Reviewer{
		{Username: "octocat"},
		{Username: "stranger"},                              // unknown: stays without an address, no guess
		{Username: "jdoe", Email: " John.Doe@Example.com "}, // disclosed by the source: kept, normalized
		{Username: "octo2"},                                 // same address as octocat: merged
		{Username: "", Email: ""},                           // nothing to go on
	}
	got, err := ResolveReviewers(context.Background(), d, "github", in)
	if err != nil {
		t.Fatal(err)
	}
	want := []Reviewer{
		{Username: "octocat", Email: "octo@example.com"},
		{Username: "stranger"},
		{Username: "jdoe", Email: "john.doe@example.com"},
		{},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %+v\nwant %+v", got, want)
	}
	if _, err := ResolveReviewers(context.Background(), failingDirectory{}, "github", in); err == nil {
		t.Fatal("directory failure swallowed")
	}
	if got, err := ResolveReviewers(context.Background(), nil, "github", in[:2]); err != nil || len(got) != 2 || got[0].Email != "" {
		t.Fatalf("nil directory: %+v, %v", got, err)
	}
}

type stubFetcher struct{ cl Changelist }

func (s stubFetcher) Fetch(context.Context, Ref) (Changelist, error) { return s.cl, nil }

func TestRouter(t *testing.T) {
	r := Router{"github": stubFetcher{Changelist{Diff: "d"}}}
	if cl, err := r.Fetch(context.Background(), Ref{Source: "github"}); err != nil || cl.Diff != "d" {
		t.Fatalf("%+v, %v", cl, err)
	}
	_, err := r.Fetch(context.Background(), Ref{Source: "svn"})
	if c := retry.Classify(err); c == nil || c.Class != retry.RuntimeBug || c.Retryable() {
		t.Fatalf("unknown source: %v", err)
	}
}

func TestTruncateDiff(t *testing.T) {
	f1 := "diff --git a/a b/a\n--- a/a\n+++ b/a\n@@ -1 +1 @@\n-x\n+y\n"
	f2h1 := "diff --git a/b b/b\n--- a/b\n+++ b/b\n@@ -1 +1 @@\n-x\n+y\n"
	h2 := "@@ -10 +10 @@\n-x\n+y\n"
	d := f1 + f2h1 + h2
	tests := []struct {
		max       int
		want      string
		truncated bool
	}{
		{0, d, false},
		{len(d), d, false},
		{len(d) - 1, f1, true},          // a file boundary is preferred to a hunk boundary
		{len(f1) + len(f2h1), f1, true}, // even when the hunk would fit
		{len(f1) + 3, f1, true},         // file boundary
		{len(f1), f1, true},             // the boundary exactly at the limit
		{len(f1) - 1, "", true},         // nothing fits whole
		{5, "", true},
	}
	for _, tt := range tests {
		got, cut := TruncateDiff(d, tt.max)
		if got != tt.want || cut != tt.truncated {
			t.Errorf("TruncateDiff(max %d) = %q, %v; want %q, %v", tt.max, got, cut, tt.want, tt.truncated)
		}
		if len(got) > tt.max && tt.max > 0 {
			t.Errorf("max %d: %d bytes kept", tt.max, len(got))
		}
	}
}

func TestTruncateDiffSingleFileCutsAtHunk(t *testing.T) {
	d := "diff --git a/b b/b\n--- a/b\n+++ b/b\n@@ -1 +1 @@\n-x\n+y\n@@ -10 +10 @@\n-x\n+y\n"
	want := d[:strings.LastIndex(d, "@@ -10")]
	if got, cut := TruncateDiff(d, len(d)-1); got != want || !cut {
		t.Fatalf("got %q, %v", got, cut)
	}
	mustParseDiff(t, want)
}

func FuzzTruncateDiff(f *testing.F) {
	f.Add("diff --git a/a b/a\n--- a/a\n+++ b/a\n@@ -1 +1 @@\n-x\n+y\n", 10)
	f.Add("@@ -1 +1 @@\n-x\n+y\n@@ -5 +5 @@\n-x\n+y\n", 20)
	f.Fuzz(func(t *testing.T, d string, max int) {
		got, cut := TruncateDiff(d, max)
		if max > 0 && len(got) > max {
			t.Fatalf("kept %d bytes, max %d", len(got), max)
		}
		if !strings.HasPrefix(d, got) {
			t.Fatal("not a prefix")
		}
		if cut != (got != d) {
			t.Fatalf("cut %v but got == d is %v", cut, got == d)
		}
	})
}
