package mail_test

import (
	"strings"
	"testing"

	"github.com/criticizer/criticizer/internal/critic"
	"github.com/criticizer/criticizer/internal/mail"
)

// A finding links into the review tool's diff view, in the form each tool
// uses: GitHub's files view anchors a file by the SHA-256 of its path and a
// new-side line with R<n>; GitLab's diffs view anchors a file by the SHA-1
// of its path; Gerrit shows a file of a patch set at <change>/<ps>/<path>
// with the line as the hash. The hashes below were computed independently
// (Python hashlib), not with the code under test.
func TestLineURL_LinksIntoEachSourcesDiffView(t *testing.T) {
	const (
		path   = "internal/billing/invoice.go"
		sha256 = "dd1508382c726e7277962863ac3c60e2f0457febdfda80e60f0945c0c47e94a0"
		sha1   = "c46d1b698a6a8067c0ab0e52b2e3f70adb641fcf"
		odd    = "docs/ä ö.md"
	)
	tests := []struct {
		name, source, url string
		version           int
		path              string
		line              int
		want              string
	}{
		{"github line", "github", "https://github.com/acme/billing/pull/1042", 3, path, 15,
			"https://github.com/acme/billing/pull/1042/files#diff-" + sha256 + "R15"},
		{"github whole file", "github", "https://github.com/acme/billing/pull/1042", 3, path, 0,
			"https://github.com/acme/billing/pull/1042/files#diff-" + sha256},
		{"github trailing slash", "github", "https://github.com/acme/billing/pull/1042/", 3, path, 7,
			"https://github.com/acme/billing/pull/1042/files#diff-" + sha256 + "R7"},
		{"github non-ASCII path hashes its UTF-8 bytes", "github", "https://github.com/a/b/pull/1", 1, odd, 2,
			"https://github.com/a/b/pull/1/files#diff-bc88b99112ece8ccd25e7b79c1f20235dab9513cf4a2ac2ffbb0badca8ecda9a" + "R2"},
		{"gitlab links the file", "gitlab", "https://gitlab.com/acme/billing/-/merge_requests/7", 2, path, 15,
			"https://gitlab.com/acme/billing/-/merge_requests/7/diffs#" + sha1},
		{"gitlab non-ASCII path", "gitlab", "https://gitlab.com/a/b/-/merge_requests/1", 1, odd, 0,
			"https://gitlab.com/a/b/-/merge_requests/1/diffs#9a9f06b2dd549128d2a84f62c06e0023f19da550"},
		{"gerrit line in the patch set", "gerrit", "https://review.example.com/c/billing/+/1042", 3, path, 15,
			"https://review.example.com/c/billing/+/1042/3/internal/billing/invoice.go#15"},
		{"gerrit whole file", "gerrit", "https://review.example.com/c/billing/+/1042", 3, path, 0,
			"https://review.example.com/c/billing/+/1042/3/internal/billing/invoice.go"},
		{"gerrit escapes path segments", "gerrit", "https://review.example.com/c/b/+/1", 2, odd, 4,
			"https://review.example.com/c/b/+/1/2/docs/%C3%A4%20%C3%B6.md#4"},
		{"gerrit without a patch set", "gerrit", "https://review.example.com/c/b/+/1", 0, path, 4,
			"https://review.example.com/c/b/+/1"},
		{"generic", "generic", "https://ci.example.com/review/9", 1, path, 15, "https://ci.example.com/review/9"},
		{"unknown source", "svn", "https://ci.example.com/review/9", 1, path, 15, "https://ci.example.com/review/9"},
		{"empty source", "", "https://ci.example.com/review/9", 1, path, 15, "https://ci.example.com/review/9"},
		{"not http", "github", "javascript:alert(1)", 1, path, 15, "javascript:alert(1)"},
		{"query in the URL", "github", "https://github.com/a/b/pull/1?x=1", 1, path, 15, "https://github.com/a/b/pull/1?x=1"},
		{"empty URL", "github", "", 1, path, 15, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := mail.LineURL(tt.source, tt.url, tt.version, tt.path, tt.line); got != tt.want {
				t.Errorf("LineURL(%q, %q, %d, %q, %d)\n got %s\nwant %s", tt.source, tt.url, tt.version, tt.path, tt.line, got, tt.want)
			}
		})
	}
}

// The email uses those links: each finding's line and each file heading
// point into the diff view of the changelist's source.
func TestRender_FindingsLinkIntoTheDiffBySource(t *testing.T) {
	d := sampleData()
	d.Source = mail.SourceGitHub
	d.URL = "https://github.com/acme/billing/pull/1042"
	_, html, text, _ := render(t, d)
	line := mail.LineURL("github", d.URL, d.ReviewVersion, "internal/billing/invoice.go", 19)
	file := mail.LineURL("github", d.URL, d.ReviewVersion, "internal/billing/invoice.go", 0)
	if !strings.Contains(html, `href="`+line+`"`) {
		t.Errorf("HTML has no link to line 19: %s", line)
	}
	if !strings.Contains(html, `href="`+file+`"`) {
		t.Errorf("HTML has no link to the file: %s", file)
	}
	if !strings.Contains(text, "\n  "+file+"\n") {
		t.Errorf("text body does not give the file's link under its heading:\n%s", text)
	}

	d.Source = mail.SourceGeneric
	_, html, text, _ = render(t, d)
	if strings.Contains(html, "#diff-") || strings.Contains(text, "#diff-") {
		t.Errorf("a generic changelist got GitHub anchors")
	}
}

// The header counts findings by severity, as the reader sees them below.
func TestRender_SeverityCounts(t *testing.T) {
	d := sampleData() // 1 error, 1 warning, 1 info
	d.Critique.Findings = append(d.Critique.Findings,
		critic.Finding{File: "x.go", Line: 1, Severity: critic.SeverityError, Rule: "r", Message: "m"})
	_, html, text, _ := render(t, d)
	if !strings.Contains(text, "Findings: 2 errors, 1 warning, 1 info") {
		t.Errorf("text body does not count the findings:\n%s", text)
	}
	for _, want := range []string{">2 errors<", ">1 warning<", ">1 info<"} {
		if !strings.Contains(html, want) {
			t.Errorf("HTML does not show %q", want)
		}
	}
	d.Critique.Findings = []critic.Finding{}
	_, html, text, _ = render(t, d)
	if !strings.Contains(text, "No issues found.") || !strings.Contains(html, "No issues found") {
		t.Errorf("an empty critique does not say no issues were found")
	}
}
