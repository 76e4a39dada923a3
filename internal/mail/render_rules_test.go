package mail_test

import (
	"fmt"
	"regexp"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/criticizer/criticizer/internal/critic"
	"github.com/criticizer/criticizer/internal/mail"
)

func renderer(t testing.TB) *mail.Renderer {
	t.Helper()
	r, err := mail.NewRenderer()
	if err != nil {
		t.Fatalf("NewRenderer: %v", err)
	}
	return r
}

func render(t testing.TB, d mail.Data) (subject, html, text, sum string) {
	t.Helper()
	m, err := renderer(t).Render(d)
	if err != nil {
		t.Fatalf("Render: %v", err)
	}
	return m.Subject, m.HTML, m.Text, m.ContentSHA256
}

// sampleData is a typical critique: three findings in two files, given in
// the critic's order (by file, then line).
func sampleData() mail.Data {
	return mail.Data{
		ChangelistID:  "billing-1042",
		ReviewVersion: 3,
		Title:         "Add refunds to invoices",
		URL:           "https://review.example.com/c/billing/+/1042",
		Author:        "ana",
		Critique: critic.Critique{
			Critic:    "offline/v1",
			Summary:   "Two debugging leftovers and a TODO.",
			Files:     2,
			Additions: 14,
			Deletions: 1,
			Findings: []critic.Finding{
				{File: "internal/billing/invoice.go", Line: 15, Severity: critic.SeverityInfo, Rule: "todo-added", Message: "A TODO was added."},
				{File: "internal/billing/invoice.go", Line: 19, Severity: critic.SeverityWarning, Rule: "debug-print", Message: "fmt.Println left in."},
				{File: "internal/billing/refund.go", Line: 0, Severity: critic.SeverityError, Rule: "no-tests", Message: "New code without tests."},
			},
		},
	}
}

// The subject names the changelist and its title, never the version: it
// is the same for every version, so a client that groups by subject keeps
// them in one conversation. The bodies name the version instead (the
// preview line too, which an inbox shows beside the subject).
// Rules: R-THREAD-1, R-MAIL-1.
func TestSubject_SameForEveryVersion_BodyNamesVersion(t *testing.T) {
	tests := []struct {
		name  string
		cl    string
		v     int
		title string
	}{
		{"typical", "billing-1042", 3, "Add refunds to invoices"},
		{"first version", "cl-1", 1, "Initial import"},
		{"large version", "acme/api#77", 2147483647, "Bump deps"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := sampleData()
			d.ChangelistID, d.ReviewVersion, d.Title = tt.cl, tt.v, tt.title
			subject, html, text, _ := render(t, d)
			if want := "[Criticizer] " + tt.cl + ": " + tt.title; subject != want {
				t.Errorf("subject %q; want %q", subject, want)
			}
			if strings.Contains(subject, fmt.Sprintf("v%d", tt.v)) || strings.Contains(subject, "version") {
				t.Errorf("subject %q names version %d", subject, tt.v)
			}
			first, _, _ := strings.Cut(text, "\n")
			if want := fmt.Sprintf("Criticizer review: %s version %d", tt.cl, tt.v); first != want {
				t.Errorf("text body begins %q; want %q", first, want)
			}
			if !strings.Contains(html, fmt.Sprintf("&middot; version %d</div>", tt.v)) || !strings.Contains(html, fmt.Sprintf(" version %d</div>\n<table", tt.v)) {
				t.Errorf("HTML header or preview line does not name version %d", tt.v)
			}
			if mail.Subject(d) != subject {
				t.Errorf("Render subject %q differs from Subject() %q", subject, mail.Subject(d))
			}
		})
	}
	a, b := sampleData(), sampleData()
	b.ReviewVersion = a.ReviewVersion + 1
	if mail.Subject(a) != mail.Subject(b) {
		t.Errorf("v%d and v%d have different subjects %q and %q", a.ReviewVersion, b.ReviewVersion, mail.Subject(a), mail.Subject(b))
	}
}

// A title edited after the first email: the subject keeps the title the
// conversation is named by, so subject-grouping clients keep one thread;
// the body, HTML and text, shows the version's current title, the HTML
// escaping it as it escapes any title.
// Rules: R-THREAD-1.
func TestSubject_KeepsTheConversationsTitle_BodyShowsTheCurrent(t *testing.T) {
	d := sampleData()
	d.ThreadTitle, d.Title = "Add refunds to invoices", `Refunds <b>& credits</b>`
	subject, html, text, _ := render(t, d)
	if want := "[Criticizer] billing-1042: Add refunds to invoices"; subject != want {
		t.Errorf("subject %q; want the conversation's %q", subject, want)
	}
	if !strings.Contains(html, ">Refunds &lt;b&gt;&amp; credits&lt;/b&gt;</a></h1>") {
		t.Error("the HTML heading does not show the current title, escaped")
	}
	if strings.Contains(html, "Add refunds to invoices") || strings.Contains(html, "<b>&") {
		t.Error("the HTML body shows the first title, or the current one unescaped")
	}
	if _, rest, _ := strings.Cut(text, "\n"); !strings.HasPrefix(rest, "Refunds <b>& credits</b>\nby ana") {
		t.Errorf("the text body's second line is not the current title: %q", rest[:min(len(rest), 60)])
	}
	long := sampleData()
	long.ThreadTitle, long.Title = strings.Repeat("é", 70), "short"
	if s := mail.Subject(long); !strings.HasSuffix(s, "...") || !utf8.ValidString(s) {
		t.Errorf("a long thread title is not cut as a long title is: %q", s)
	}
	d.ThreadTitle = ""
	if subject, _, _, _ := render(t, d); subject != "[Criticizer] billing-1042: Refunds <b>& credits</b>" {
		t.Errorf("without a thread title, subject %q; want the version's title", subject)
	}
}

// A subject is one line: line breaks and runs of spaces in a title collapse
// to single spaces.
func TestSubject_IsOneLine(t *testing.T) {
	d := sampleData()
	d.Title = "Fix\r\nBcc: attacker@example.com\n\tand   more"
	s := mail.Subject(d)
	if strings.ContainsAny(s, "\r\n\t") {
		t.Errorf("subject %q contains a line break or tab", s)
	}
	if !strings.HasSuffix(s, "Fix Bcc: attacker@example.com and more") {
		t.Errorf("subject %q; want the title's whitespace collapsed", s)
	}
}

// A long title is shortened in the subject (with an ellipsis) while the
// bodies keep it whole.
func TestSubject_LongTitleIsShortened(t *testing.T) {
	tests := []struct {
		name      string
		title     string
		shortened bool
	}{
		{"short", "Add refunds", false},
		{"exactly 120 bytes", strings.Repeat("a", 120), false},
		{"121 bytes", strings.Repeat("a", 121), true},
		{"very long", strings.Repeat("Refactor the billing module. ", 40), true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := sampleData()
			d.Title = tt.title
			subject, html, text, _ := render(t, d)
			prefix := fmt.Sprintf("[Criticizer] %s: ", d.ChangelistID)
			if !strings.HasPrefix(subject, prefix) {
				t.Fatalf("subject %q; want prefix %q", subject, prefix)
			}
			shown := strings.TrimPrefix(subject, prefix)
			if tt.shortened {
				if !strings.HasSuffix(shown, "...") || len(shown) > 120 || len(shown) >= len(tt.title) {
					t.Errorf("subject title %q (%d bytes) not shortened with an ellipsis to at most 120 bytes", shown, len(shown))
				}
				if !strings.HasPrefix(strings.TrimSpace(tt.title), strings.TrimSuffix(shown, "...")[:20]) {
					t.Errorf("shortened title %q does not start like the title", shown)
				}
			} else if shown != tt.title {
				t.Errorf("subject title %q; want %q unchanged", shown, tt.title)
			}
			if !strings.Contains(text, strings.TrimSpace(tt.title)) {
				t.Errorf("text body lost the full title")
			}
			if !strings.Contains(html, strings.TrimSpace(tt.title)) {
				t.Errorf("HTML body lost the full title")
			}
		})
	}
}

// Shortening a long non-ASCII title must not cut a character in half: the
// subject is sent as UTF-8 and an invalid byte sequence shows as mojibake
// or makes the provider reject the message.
func TestSubject_LongNonASCIITitleStaysValidUTF8(t *testing.T) {
	for _, title := range []string{
		strings.Repeat("é", 100),       // 2-byte runes: byte 117 is mid-rune
		strings.Repeat("日本語のタイトル", 10), // 3-byte runes
		strings.Repeat("🚀", 40),        // 4-byte runes
	} {
		d := sampleData()
		d.Title = title
		s := mail.Subject(d)
		if !utf8.ValidString(s) {
			t.Errorf("Subject for a %d-byte title is not valid UTF-8: %q", len(title), s)
		}
		if !strings.HasSuffix(s, "...") {
			t.Errorf("Subject %q not shortened", s)
		}
	}
}

// Titles, messages, file names, summaries and authors come from the change
// under review, i.e. from its author: the HTML body must escape them, and a
// javascript: link must never become clickable.
func TestRender_HTMLEscapesHostileContent(t *testing.T) {
	const hostile = `<script>alert("x")</script>`
	d := sampleData()
	d.Title = hostile + ` & <b>bold</b>`
	d.Author = `<img src=x onerror=alert(1)>`
	d.ChangelistID = `cl-<svg onload=alert(1)>`
	d.URL = `javascript:alert(document.cookie)`
	d.Source = mail.SourceGitHub
	d.UnsubscribeURL = `javascript:alert(2)`
	d.Critique.Summary = hostile
	d.Critique.Critic = `<iframe src="https://evil.example">`
	d.Critique.Findings = []critic.Finding{
		{File: `<script>file.go</script>`, Line: 1, Severity: critic.SeverityWarning, Rule: `<rule onclick=x>`, Message: hostile},
		{File: `a.go`, Line: 2, Severity: critic.Severity(`"><script>alert(2)</script>`), Rule: "r", Message: "m"},
	}
	_, html, _, _ := render(t, d)
	for _, raw := range []string{"<script", "</script>", "<img", "<svg", "<iframe", "<b>bold</b>", "<rule", "javascript:"} {
		if strings.Contains(strings.ToLower(html), raw) {
			t.Errorf("HTML contains raw %q", raw)
		}
	}
	// Every tag in the output is one the template itself writes, and no tag
	// carries an event-handler attribute.
	allowed := map[string]bool{"!doctype": true, "html": true, "head": true, "meta": true, "title": true, "body": true,
		"table": true, "tr": true, "td": true, "div": true, "h1": true, "a": true, "p": true, "span": true}
	for _, m := range regexp.MustCompile(`<\s*/?\s*([!a-zA-Z][a-zA-Z0-9]*)`).FindAllStringSubmatch(html, -1) {
		if !allowed[strings.ToLower(m[1])] {
			t.Errorf("HTML contains a <%s> tag the template does not write", m[1])
		}
	}
	if m := regexp.MustCompile(`(?i)<[^>]*\son[a-z]+\s*=`).FindString(html); m != "" {
		t.Errorf("HTML contains an event-handler attribute: %q", m)
	}
	if !strings.Contains(html, "&lt;script&gt;") {
		t.Errorf("HTML does not show the escaped title text")
	}
	if !strings.Contains(html, "&amp;") {
		t.Errorf("HTML does not escape &")
	}
}

// Findings are grouped by file: each file is named once, in path order (as
// in the diff), and its findings follow it most severe first (error,
// warning, info), then by line.
func TestRender_FindingsGroupedByFileMostSevereFirst(t *testing.T) {
	d := sampleData()
	// Interleaved input: the grouping must not depend on input order.
	d.Critique.Findings = []critic.Finding{
		{File: "b.go", Line: 1, Severity: critic.SeverityWarning, Rule: "r1", Message: "b first"},
		{File: "a.go", Line: 5, Severity: critic.SeverityInfo, Rule: "r2", Message: "a first"},
		{File: "b.go", Line: 9, Severity: critic.SeverityError, Rule: "r3", Message: "b second"},
		{File: "c/d.go", Line: 0, Severity: critic.SeverityInfo, Rule: "r4", Message: "cd only"},
		{File: "a.go", Line: 7, Severity: critic.SeverityWarning, Rule: "r5", Message: "a second"},
		{File: "b.go", Line: 3, Severity: critic.SeverityInfo, Rule: "r6", Message: "b third"},
		{File: "b.go", Line: 2, Severity: critic.SeverityError, Rule: "r7", Message: "b fourth"},
	}
	_, html, text, _ := render(t, d)

	wantOrder := []string{
		"a.go", "a second", "a first", // warning, info
		"b.go", "b fourth", "b second", "b first", "b third", // error line 2, error line 9, warning, info
		"c/d.go", "cd only"}
	for name, body := range map[string]string{"text": text, "html": html} {
		t.Run(name, func(t *testing.T) {
			pos := -1
			for _, w := range wantOrder {
				i := strings.Index(body[pos+1:], w)
				if i < 0 {
					t.Fatalf("%q missing or out of order (after byte %d)", w, pos)
				}
				pos += 1 + i
			}
		})
	}
	// Each file heading appears once in the text body.
	for _, file := range []string{"a.go", "b.go", "c/d.go"} {
		n := 0
		for _, line := range strings.Split(text, "\n") {
			if line == file {
				n++
			}
		}
		if n != 1 {
			t.Errorf("text body has %d heading lines for %s; want 1\n%s", n, file, text)
		}
	}
}

// The text body lists every finding with its severity, line (when it has
// one), message and rule.
func TestRender_TextListsEachFinding(t *testing.T) {
	d := sampleData()
	_, _, text, _ := render(t, d)
	lines := strings.Split(text, "\n")
	for _, f := range d.Critique.Findings {
		want := fmt.Sprintf("[%s] line %d: %s (%s)", f.Severity, f.Line, f.Message, f.Rule)
		if f.Line == 0 {
			want = fmt.Sprintf("[%s] %s (%s)", f.Severity, f.Message, f.Rule)
		}
		found := false
		for _, l := range lines {
			if strings.TrimSpace(l) == want {
				found = true
			}
		}
		if !found {
			t.Errorf("text body has no line %q:\n%s", want, text)
		}
	}
	for _, want := range []string{d.Title, d.URL, d.Author, d.Critique.Summary, d.Critique.Critic, "+14", "-1"} {
		if !strings.Contains(text, want) {
			t.Errorf("text body does not contain %q", want)
		}
	}
	if strings.Contains(text, "line 0") {
		t.Errorf("text body shows a line 0 for a whole-file finding")
	}
}

// No findings still renders a useful message, and a truncated critique says
// so.
func TestRender_NoFindingsAndTruncation(t *testing.T) {
	d := sampleData()
	d.Critique.Findings = []critic.Finding{}
	d.Critique.Summary = "Nothing to report."
	_, html, text, _ := render(t, d)
	for _, body := range []string{html, text} {
		if !strings.Contains(body, "Nothing to report.") || strings.Contains(body, "This review is partial") {
			t.Errorf("empty critique rendered unexpectedly:\n%s", body)
		}
	}

	d = sampleData()
	d.Critique.Truncated = true
	_, html, text, _ = render(t, d)
	for name, body := range map[string]string{"html": html, "text": text} {
		if !strings.Contains(body, "This review is partial (3 findings shown)") {
			t.Errorf("%s body does not say the findings were truncated", name)
		}
	}
}

// R-OUTBOX-3: "Call provider send API using deterministic message
// payload". Rendering the same input twice — in the same renderer, in a new
// one, or after other renders — gives byte-identical output and the same
// ContentSHA256, so a retry sends exactly what the first attempt sent.
// Rules: R-OUTBOX-2, R-MAIL-1.
func TestRender_DeterministicPayload(t *testing.T) {
	// Many files, so any dependence on map iteration order would show.
	d := sampleData()
	d.Critique.Findings = nil
	for i := 30; i > 0; i-- {
		d.Critique.Findings = append(d.Critique.Findings,
			critic.Finding{File: fmt.Sprintf("pkg%02d/file.go", i), Line: i, Severity: critic.SeverityWarning, Rule: "r", Message: fmt.Sprintf("finding %d", i)},
			critic.Finding{File: fmt.Sprintf("pkg%02d/file.go", i), Line: i + 100, Severity: critic.SeverityInfo, Rule: "s", Message: fmt.Sprintf("second %d", i)},
		)
	}
	r := renderer(t)
	first, err := r.Render(d)
	if err != nil {
		t.Fatalf("Render: %v", err)
	}
	for i := 0; i < 20; i++ {
		rr := r
		if i%2 == 1 {
			rr = renderer(t)
		}
		if _, err := rr.Render(sampleData()); err != nil { // unrelated render in between
			t.Fatal(err)
		}
		again, err := rr.Render(d)
		if err != nil {
			t.Fatalf("Render: %v", err)
		}
		if again != first {
			t.Fatalf("render %d differs from the first:\nsubject %q vs %q\nsha %s vs %s", i, again.Subject, first.Subject, again.ContentSHA256, first.ContentSHA256)
		}
	}
	if !regexp.MustCompile(`^[0-9a-f]{64}$`).MatchString(first.ContentSHA256) {
		t.Errorf("ContentSHA256 = %q; want 64 lower-case hex digits", first.ContentSHA256)
	}
	if first.TemplateVersion != mail.TemplateVersion || first.TemplateVersion == "" {
		t.Errorf("TemplateVersion = %q; want %q", first.TemplateVersion, mail.TemplateVersion)
	}
}

// The content hash identifies the content: any visible change gives a
// different hash, so an operator can tell two payloads apart.
func TestRender_ContentSHA256ChangesWithContent(t *testing.T) {
	_, _, _, base := render(t, sampleData())
	changes := map[string]func(*mail.Data){
		"title":           func(d *mail.Data) { d.Title += "!" },
		"version":         func(d *mail.Data) { d.ReviewVersion++ },
		"changelist":      func(d *mail.Data) { d.ChangelistID = "billing-1043" },
		"url":             func(d *mail.Data) { d.URL += "?x" },
		"author":          func(d *mail.Data) { d.Author = "bo" },
		"summary":         func(d *mail.Data) { d.Critique.Summary = "Other." },
		"finding msg":     func(d *mail.Data) { d.Critique.Findings[0].Message = "Other." },
		"finding line":    func(d *mail.Data) { d.Critique.Findings[0].Line++ },
		"unsubscribe url": func(d *mail.Data) { d.UnsubscribeURL = "https://criticizer.example.com/unsubscribe?token=other" },
		"finding dropped": func(d *mail.Data) {
			d.Critique.Findings = d.Critique.Findings[1:]
		},
	}
	for name, change := range changes {
		t.Run(name, func(t *testing.T) {
			d := sampleData()
			change(&d)
			if _, _, _, sum := render(t, d); sum == base {
				t.Errorf("changing %s left ContentSHA256 unchanged", name)
			}
		})
	}
}

// The unsubscribe URL is the recipient's: the message carries it (for the
// List-Unsubscribe header) and both bodies show it in the footer. Without
// one, the footer still says how to stop the emails.
func TestRender_FooterUnsubscribe(t *testing.T) {
	d := sampleData()
	d.UnsubscribeURL = "https://criticizer.example.com/unsubscribe?token=abc_DEF-123"
	m, err := renderer(t).Render(d)
	if err != nil {
		t.Fatal(err)
	}
	if m.UnsubscribeURL != d.UnsubscribeURL {
		t.Errorf("Message.UnsubscribeURL = %q; want %q", m.UnsubscribeURL, d.UnsubscribeURL)
	}
	if !strings.Contains(m.Text, "Unsubscribe: "+d.UnsubscribeURL) {
		t.Errorf("text footer has no unsubscribe link:\n%s", m.Text)
	}
	if !regexp.MustCompile(`<a href="` + regexp.QuoteMeta(d.UnsubscribeURL) + `"[^>]*>Unsubscribe</a>`).MatchString(m.HTML) {
		t.Errorf("HTML footer has no unsubscribe link")
	}

	d.UnsubscribeURL = ""
	m, err = renderer(t).Render(d)
	if err != nil {
		t.Fatal(err)
	}
	if m.UnsubscribeURL != "" || strings.Contains(m.HTML, ">Unsubscribe<") || strings.Contains(m.Text, "Unsubscribe:") {
		t.Errorf("no unsubscribe URL, yet the message has an unsubscribe link")
	}
	for name, body := range map[string]string{"html": m.HTML, "text": m.Text} {
		if !strings.Contains(body, "To stop these emails") {
			t.Errorf("%s footer does not say how to stop the emails", name)
		}
	}
}
