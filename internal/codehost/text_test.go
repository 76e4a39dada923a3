package codehost_test

import (
	"bytes"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/extension"

	"github.com/criticizer/criticizer/internal/channel"
	"github.com/criticizer/criticizer/internal/codehost"
	"github.com/criticizer/criticizer/internal/critic"
)

// hostile is model text that tries every way Markdown has to become
// more than text.
const hostile = "Click [here](https://evil.example/x) or ![pixel](https://evil.example/p.png) " +
	"<img src=x onerror=alert(1)> <script>alert(1)</script> <a href=\"https://evil.example\">a</a> " +
	"https://evil.example/auto www.evil.example <https://evil.example/angle> cc @octocat and #12 " +
	"mail evil@evil.example &lt;b&gt; **bold** `code` | table | \n# Heading\n> quote\n[ref]: https://evil.example\n" +
	"\u202egnp.exe"

// render is GitHub-flavoured Markdown as HTML (CommonMark with GFM's
// autolinks, tables and strikethrough): what a reader of the check run
// sees, modulo GitHub's mentions.
func render(t *testing.T, md string) string {
	t.Helper()
	var b bytes.Buffer
	if err := goldmark.New(goldmark.WithExtensions(extension.GFM)).Convert([]byte(md), &b); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// A hostile finding message renders as text: no link, image, HTML tag,
// heading or quote, no mention or issue reference, and reads as it was
// written (R-CHANNEL-12).
// Rules: R-CHANNEL-12.
func TestMarkdown_HostileMessageIsOnlyText(t *testing.T) {
	md, _ := codehost.Markdown(hostile, 10_000)
	html := render(t, md)
	for _, bad := range []string{"<a ", "<img", "<script", "<h1", "<blockquote", "<table", "<strong", "<code", "\u202e"} {
		if strings.Contains(html, bad) {
			t.Errorf("rendered %q contains %q", html, bad)
		}
	}
	for _, mention := range []string{"@octocat", "#12", "evil@evil"} {
		if strings.Contains(html, mention) {
			t.Errorf("rendered text keeps %q, which GitHub links", mention)
		}
	}
	// It still reads as written (zero-width spaces aside).
	text := strings.ReplaceAll(html, "\u200b", "")
	for _, s := range []string{"Click [here](https://evil.example/x)", "cc @octocat and #12", "&lt;script&gt;"} {
		if !strings.Contains(text, s) {
			t.Errorf("rendered %q lost %q", text, s)
		}
	}
}

// The summary of a check run with a hostile finding (its file name
// too) renders with one link only: the job's status page.
// Rules: R-CHANNEL-12.
func TestSummary_HostileFindingOneLinkTheJobs(t *testing.T) {
	p := channel.Post{Source: "github", Phase: channel.Finished, Outcome: channel.Reviewed, Version: 2,
		Summary: hostile, Counts: channel.Counts{Error: 1}, JobURL: "https://criticizer.example.com/jobs/j1",
		Findings: []critic.Finding{{File: "[x](https://evil.example).go", Line: 3, Severity: critic.SeverityError, Rule: "r", Message: hostile}}}
	s, _ := codehost.Summary(p)
	html := render(t, s)
	if n := strings.Count(html, "<a "); n != 1 || !strings.Contains(html, `<a href="https://criticizer.example.com/jobs/j1">`) {
		t.Fatalf("summary renders %d links; want the job's only:\n%s", n, html)
	}
	if strings.Contains(html, "<img") || strings.Contains(html, "<script") {
		t.Fatalf("summary renders markup:\n%s", html)
	}
}

// A summary of many long findings stays under GitHub's limit and says
// how many it left out (R-CHANNEL-13).
// Rules: R-CHANNEL-13.
func TestSummary_BoundedAndCounted(t *testing.T) {
	fs := make([]critic.Finding, 500)
	for i := range fs {
		fs[i] = critic.Finding{File: "a.go", Line: i + 1, Severity: critic.SeverityWarning, Message: strings.Repeat("long text ", 200)}
	}
	p := channel.Post{Phase: channel.Finished, Outcome: channel.Reviewed, Counts: channel.Counts{Warning: 500}, Findings: fs,
		JobURL: "https://criticizer.example.com/jobs/j1"}
	s, cut := codehost.Summary(p)
	if utf8.RuneCountInString(s) > 65535 || len(s) > codehost.MaxSummaryBytes {
		t.Fatalf("summary is %d bytes", len(s))
	}
	listed := strings.Count(s, "\n- ")
	if listed == 0 || listed == 500 || cut < 500-listed {
		t.Fatalf("%d listed, %d cut; want some listed and the rest counted", listed, cut)
	}
	if !strings.Contains(s, " more findings are not listed") || !strings.Contains(s, "jobs/j1") {
		t.Fatalf("summary does not count the rest or lost its link:\n%s", s[len(s)-300:])
	}
}
