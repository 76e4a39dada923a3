package mail

import (
	"bytes"
	htmltemplate "html/template"
	"strings"
	"testing"
	texttemplate "text/template"

	"github.com/criticizer/criticizer/internal/critic"
)

// writerCases are Data the writer and the former templates must render
// alike: offline and model critiques, with and without findings, cut,
// with and without an unsubscribe link, hostile text in every field, a
// URL with a scheme html/template refuses, non-ASCII.
func writerCases() []Data { return append(firstCases(), rerunCases()...) }

// testVotes mints vote links with characters html/template escapes.
func testVotes(f critic.Finding) (string, string) {
	return "https://api.example.com/vote/u." + f.Rule + "?a=1&b='2'", "https://api.example.com/vote/w." + f.Rule + " x"
}

// firstCases are critiques with nothing to compare with (critique/v3).
func firstCases() []Data {
	base := func() Data {
		return Data{ChangelistID: "billing-1042", ReviewVersion: 3, Title: "Add refunds to invoices", URL: "https://review.example.com/c/billing/+/1042",
			Author: "ana", Source: "gerrit", UnsubscribeURL: "https://api.example.com/unsubscribe/tok+en?x=1&y='2'",
			Critique: critic.Critique{Critic: "offline/v1", Summary: "Two debugging leftovers and a TODO.", Files: 2, Additions: 14, Deletions: 1,
				Findings: []critic.Finding{
					{File: "internal/billing/invoice.go", Line: 15, Severity: critic.SeverityInfo, Rule: "todo-added", Message: "A TODO was added."},
					{File: "internal/billing/invoice.go", Line: 19, Severity: critic.SeverityWarning, Rule: "debug-print", Message: "fmt.Println left in."},
					{File: "internal/billing/refund.go", Line: 0, Severity: critic.SeverityError, Rule: "no-tests", Message: "New code without tests."},
				}}}
	}
	var out []Data
	out = append(out, base())
	d := base()
	d.UnsubscribeURL, d.Critique.Truncated, d.Critique.Files = "", true, 1
	out = append(out, d)
	d = base()
	d.Critique.Findings, d.Critique.Summary = nil, "No issues were found."
	out = append(out, d)
	d = base()
	d.Critique.Critic = "openai/gpt-4.1"
	d.Title = `<script>alert("x")</script> & 'quotes' + plus ` + "\x00nul é 漢字"
	d.Author = `"><img src=x onerror=alert(1)>`
	d.ChangelistID = "acme/store#42 <b>"
	d.Critique.Summary = "Visit https://evil.example/x?a=1&b=<2> now + 'then'"
	d.Critique.Findings = append(d.Critique.Findings, critic.Finding{File: `dir/<file>&"x".go`, Line: 7, Severity: critic.SeverityError, Rule: "r<1>", Message: "m & <m> 'q' \"dq\" +"})
	out = append(out, d)
	d = base()
	d.URL = "javascript:alert(1)"
	d.Source = "github"
	d.UnsubscribeURL = "https://api.example.com/u/%41%zz space\tand\x7f"
	out = append(out, d)
	d = base()
	d.Source = "generic"
	d.Critique.Findings = []critic.Finding{{File: "a b/ü.go", Line: 3, Severity: critic.SeverityWarning, Rule: "x", Message: "y"}}
	out = append(out, d)
	// A generic caller's repository (R-INTAKE-7), with characters to
	// escape.
	d = base()
	d.Source, d.Repository = "generic", "acme/<billing>&'x'"
	out = append(out, d)
	// Vote links (R-VOTE-1), with characters to escape.
	d = base()
	d.Votes = testVotes
	out = append(out, d)
	for _, reason := range []string{ReasonAuthor, ReasonAdded, ReasonReviewer} {
		d = base()
		d.Reason = reason
		out = append(out, d)
	}
	// Findings the reader marked wrong, hidden (R-VOTE-3): one, several,
	// and all of them with a partial review.
	for _, n := range []int{1, 3} {
		d = base()
		d.Hidden = n
		out = append(out, d)
	}
	d = base()
	d.Critique.Findings, d.Critique.Truncated, d.Hidden = nil, true, 2
	out = append(out, d)
	// The reader's own minimum severity left findings out (R-PREF-3),
	// and the footer's preference link, with characters to escape
	// (R-PREF-2); without an unsubscribe link too.
	for _, n := range []int{1, 4} {
		d = base()
		d.LeftOut, d.LeftOutBelow, d.Hidden = n, "warning", n-1
		d.PreferencesURL = "https://api.example.com/preferences/p+r.ef?a=1&b='2' x"
		out = append(out, d)
	}
	d = base()
	d.UnsubscribeURL, d.PreferencesURL = "", "https://api.example.com/preferences/tok"
	out = append(out, d)
	// A reply address (R-REPLY-1): numbered findings and the reply line,
	// with links, with a changelist id to escape, and with no finding.
	d = base()
	d.ReplyTo, d.Votes = "reply+abc@replies.example.org", testVotes
	out = append(out, d)
	d = base()
	d.ReplyTo, d.ChangelistID = "reply+abc@replies.example.org", "acme/store#42 <b>&'x'"
	out = append(out, d)
	d = base()
	d.ReplyTo, d.Critique.Findings = "reply+abc@replies.example.org", nil
	out = append(out, d)
	// The code at each finding (R-MAIL-5): added, removed and context
	// lines, the flagged one marked, hostile text, a link to defang, a
	// finding whose code a bound cut; one cut, several cut.
	for _, cut := range []int{0, 1, 2} {
		d = base()
		d.ReplyTo, d.Votes = "reply+abc@replies.example.org", testVotes
		withCode(&d.Critique, cut)
		out = append(out, d)
	}
	return out
}

// testCode is an excerpt with everything the email must escape and
// defang: markup, quotes, a plus, a link, indentation.
var testCode = critic.Excerpt{Lines: " func Total(sum int) int {\n-    log.Print(\"<b>\" + sum)\n+    fmt.Println(\"<script>alert('x')</script>\", \"https://evil.example/p?a=1&b=2\")\n     return sum", At: 3}

// withCode gives c's findings on a line code, and the last cut of them
// the cut mark instead.
func withCode(c *critic.Critique, cut int) {
	fs := append([]critic.Finding(nil), c.Findings...)
	for i := len(fs) - 1; i >= 0; i-- {
		if fs[i].Line == 0 {
			continue
		}
		fs[i].Excerpt = testCode
		if cut > 0 {
			fs[i].Excerpt, cut = critic.Excerpt{Cut: true}, cut-1
		}
	}
	c.Findings = fs
}

// rerunCases are critiques compared with an earlier version (critique/v4):
// new, unchanged and resolved findings, more resolved than listed, nothing
// new, nothing carried over, nothing changed, hostile model text in a
// resolved finding, and a partial review.
func rerunCases() []Data {
	base := func() Data {
		d := firstCases()[0]
		d.ReviewVersion = 5
		d.Critique.Findings[0].New = true
		d.Critique.Changes = &critic.Changes{Since: 4, Reviewed: 2, Carried: 18, New: 1, Unchanged: 2, ResolvedCount: 2, Resolved: []critic.Finding{
			{File: "internal/billing/invoice.go", Line: 12, Severity: critic.SeverityWarning, Rule: "debug-print", Message: "fmt.Printf left in."},
			{File: "internal/billing/old.go", Line: 0, Severity: critic.SeverityError, Rule: "no-tests", Message: "Old code without tests."},
		}}
		return d
	}
	var out []Data
	out = append(out, base())
	d := base()
	d.Critique.Changes.ResolvedCount = 25
	d.Critique.Findings[0].New = false
	out = append(out, d)
	d = base()
	d.Critique.Changes.Carried, d.Critique.Changes.Reviewed = 0, 20
	d.Critique.Changes.Resolved, d.Critique.Changes.ResolvedCount = nil, 0
	d.Critique.Truncated, d.UnsubscribeURL = true, ""
	out = append(out, d)
	d = base()
	d.Critique.Changes.Reviewed, d.Critique.Changes.Carried = 0, 20
	d.Critique.Findings = nil
	d.Critique.Changes.ResolvedCount = 26
	out = append(out, d)
	d = base()
	d.Critique.Critic, d.Source = "openai/gpt-4.1", "github"
	d.Critique.Changes.Resolved[0].Message = "Visit https://evil.example/x?a=1&b=<2> + 'q' \"dq\""
	d.Critique.Changes.Resolved[1].File = `dir/<file>&"x".go`
	d.Critique.Changes.ResolvedCount = 3
	out = append(out, d)
	d = base()
	d.Votes = testVotes
	d.Reason = ReasonAuthor
	out = append(out, d)
	d = base()
	d.Critique.Findings[0].New = false
	d.Critique.Changes.New, d.Hidden = 0, 1
	out = append(out, d)
	d = base()
	d.LeftOut, d.LeftOutBelow = 2, "error"
	d.PreferencesURL = "https://api.example.com/preferences/p+r.ef?a=1&b='2' x"
	out = append(out, d)
	d = base()
	d.ReplyTo, d.Votes = "reply+abc@replies.example.org", testVotes
	out = append(out, d)
	d = base()
	d.Repository = "acme/billing"
	out = append(out, d)
	// Code under new and unchanged findings, none under resolved ones.
	d = base()
	withCode(&d.Critique, 1)
	d.Critique.Changes.Resolved[0].Excerpt = testCode
	out = append(out, d)
	return out
}

// The hand-written email is byte for byte what critique/v3's and
// critique/v4's templates render (html/template's escaping included), for
// every case.
// Rules: R-MAIL-1, R-MAIL-3, R-WIRE-1.
func TestWriter_SameBytesAsTheTemplates(t *testing.T) {
	// Helpers critique/v4's templates call; they compute nothing the
	// writer shows differently.
	funcs := map[string]any{
		"add": func(a, b int) int { return a + b },
		"heading": func(title string, since, n int) any {
			return struct {
				Title    string
				Since, N int
			}{title, since, n}
		},
		"files": func(fs []FileFindings, url string) any {
			return struct {
				Files []FileFindings
				URL   string
			}{fs, url}
		},
	}
	htmls, texts := map[string]*htmltemplate.Template{}, map[string]*texttemplate.Template{}
	for _, version := range []string{TemplateVersion, RerunTemplateVersion} {
		base := strings.ReplaceAll(version, "/", "-")
		html, err := htmltemplate.New(base + ".html.tmpl").Funcs(funcs).ParseFiles("testdata/" + base + ".html.tmpl")
		if err != nil {
			t.Fatal(err)
		}
		text, err := texttemplate.New(base + ".txt.tmpl").Funcs(funcs).ParseFiles("testdata/" + base + ".txt.tmpl")
		if err != nil {
			t.Fatal(err)
		}
		htmls[version], texts[version] = html, text
	}
	seen := map[string]int{}
	for i, d := range writerCases() {
		v := newView(d)
		seen[v.TemplateVersion]++
		var hb, tb bytes.Buffer
		if err := htmls[v.TemplateVersion].Execute(&hb, v); err != nil {
			t.Fatal(err)
		}
		if err := texts[v.TemplateVersion].Execute(&tb, v); err != nil {
			t.Fatal(err)
		}
		if got := critiqueHTML(v); got != hb.String() {
			t.Errorf("case %d: HTML differs at byte %d:\n got  %q\n want %q", i, diffAt(got, hb.String()), around(got, diffAt(got, hb.String())), around(hb.String(), diffAt(got, hb.String())))
		}
		if got := critiqueText(v); got != tb.String() {
			t.Errorf("case %d: text differs at byte %d:\n got  %q\n want %q", i, diffAt(got, tb.String()), around(got, diffAt(got, tb.String())), around(tb.String(), diffAt(got, tb.String())))
		}
	}
	if seen[TemplateVersion] < 5 || seen[RerunTemplateVersion] < 5 {
		t.Errorf("cases per template %v; want several of each", seen)
	}
	for _, tc := range []struct {
		file string
		got  string
		data any
	}{
		{"testdata/unsubscribe-v1.html.tmpl", unsubscribePage("https://api.example.com/unsubscribe/t+k?a=1&b=2"), struct{ Action string }{"https://api.example.com/unsubscribe/t+k?a=1&b=2"}},
		{"testdata/unsubscribed-v1.html.tmpl", unsubscribedPage(true), struct{ All bool }{true}},
		{"testdata/unsubscribed-v1.html.tmpl", unsubscribedPage(false), struct{ All bool }{false}},
	} {
		tm, err := htmltemplate.ParseFiles(tc.file)
		if err != nil {
			t.Fatal(err)
		}
		var b bytes.Buffer
		if err := tm.Execute(&b, tc.data); err != nil {
			t.Fatal(err)
		}
		if tc.got != b.String() {
			at := diffAt(tc.got, b.String())
			t.Errorf("%s differs at byte %d:\n got  %q\n want %q", tc.file, at, around(tc.got, at), around(b.String(), at))
		}
	}
}

func diffAt(a, b string) int {
	i := 0
	for i < len(a) && i < len(b) && a[i] == b[i] {
		i++
	}
	return i
}

func around(s string, i int) string {
	lo, hi := max(0, i-40), min(len(s), i+60)
	return s[lo:hi]
}
