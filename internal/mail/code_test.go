package mail

import (
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/criticizer/criticizer/internal/critic"
)

// Under each finding on a line, the HTML and the text part show its code:
// the flagged line and the lines around it, marked +/-, the flagged one
// marked; escaped (a diff line holding <script> is text), defanged (a URL
// in the code is no link), cleaned of control and bidi characters. A
// whole-file finding and a resolved one show none.
// Rules: R-MAIL-5, R-MAIL-2.
func TestRender_CodeUnderEachLineFinding_EscapedDefanged(t *testing.T) {
	r, _ := NewRenderer()
	d := rerunCases()[0]
	d.Source = "github"
	d.Critique.Findings[0].Excerpt = critic.Excerpt{Lines: " func Total(sum int) int {\n-    log.Print(sum)\n+    // TODO: <script>alert(1)</script> see https://evil.example/x\n     return sum", At: 3}
	d.Critique.Findings[1].Excerpt = critic.Excerpt{Lines: "+    fmt.Println(\"total\", sum)\u202e", At: 1}
	d.Critique.Changes.Resolved[0].Excerpt = critic.Excerpt{Lines: "+resolved code", At: 1}
	m, err := r.Render(d)
	if err != nil {
		t.Fatal(err)
	}
	html, text := m.HTML, m.Text
	if strings.Contains(html, "<script>") || !strings.Contains(html, "&lt;script&gt;alert(1)&lt;/script&gt;") {
		t.Errorf("HTML: the <script> line is not escaped text")
	}
	if !strings.Contains(text, "    > +    // TODO: <script>alert(1)</script> see hxxps[:]//evil[.]example/x") {
		t.Errorf("text part lacks the flagged line, marked, defanged:\n%s", text)
	}
	if !strings.Contains(text, "      -    log.Print(sum)\n") || !strings.Contains(text, "       func Total(sum int) int {\n") {
		t.Errorf("text part lacks the lines around it:\n%s", text)
	}
	for part, body := range map[string]string{"html": html, "text": text} {
		if strings.Contains(body, "https://evil.example") || strings.Contains(body, "\u202e") {
			t.Errorf("%s: the code's link is live, or a bidi override is shown", part)
		}
		if !strings.Contains(body, "fmt.Println(") || strings.Contains(body, "resolved code") {
			t.Errorf("%s: a finding's code missing, or a resolved finding's shown", part)
		}
	}
	for _, a := range regexp.MustCompile(`href="([^"]*)"`).FindAllStringSubmatch(html, -1) {
		if strings.Contains(a[1], "evil") {
			t.Errorf("anchor to %s", a[1])
		}
	}
	// The flagged line: bold, with the bar; the removed line red.
	if !regexp.MustCompile(`border-left:3px solid #0969da;font-weight:600;background:#e6ffec;">&#43;    // TODO: &lt;script&gt;`).MatchString(html) ||
		!strings.Contains(html, `background:#ffebe9;">-    log.Print(sum)</div>`) {
		t.Errorf("HTML: the flagged or the removed line is not marked")
	}
	// The whole-file finding (no-tests) has no code block after it.
	i := strings.Index(html, "no-tests</span>")
	if i < 0 || strings.HasPrefix(html[i+len("no-tests</span>"):], "<div style=\"margin:6px 0 2px;border") {
		t.Error("the whole-file finding shows code")
	}
	if strings.Contains(html+text, "is left out to keep this email short") {
		t.Error("a small email says code was left out")
	}
}

// An email that would pass its size bound with its code leaves the code
// out first, the least severe findings' first, and says how much; one
// whose findings fit keeps it all. A finding whose code the critique's
// own bound cut is counted too.
// Rules: R-MAIL-5, R-BOUND-2.
func TestRender_CodeIsTheFirstThingCut_EmailSaysSo(t *testing.T) {
	r, _ := NewRenderer()
	code := critic.Excerpt{At: 3, Lines: strings.Join([]string{
		" " + strings.Repeat("context <&> ", 13),
		"-" + strings.Repeat("removed <&> ", 13),
		"+" + strings.Repeat("added <&>  ", 13),
		" " + strings.Repeat("context <&> ", 13),
		" " + strings.Repeat("context <&> ", 13),
	}, "\n")}
	d := firstCases()[0]
	d.Votes, d.ReplyTo = testVotes, "reply+abc@replies.example.org"
	d.Critique.Findings = nil
	for i := range 40 {
		sev := critic.SeverityWarning
		if i%8 == 0 {
			sev = critic.SeverityError
		}
		d.Critique.Findings = append(d.Critique.Findings, critic.Finding{File: "internal/billing/file" + strconv.Itoa(i%5) + ".go", Line: 10 + i,
			Severity: sev, Rule: "rule-" + strconv.Itoa(i), Message: "A finding of ordinary length.", Excerpt: code})
	}
	d.Critique.Findings[1].Excerpt = critic.Excerpt{Cut: true}
	whole := newView(d)
	if n := len(critiqueHTML(whole)); n <= MaxHTMLBytes {
		t.Fatalf("the case's HTML is %d bytes with all its code; want it over %d", n, MaxHTMLBytes)
	}
	m, err := r.Render(d)
	if err != nil {
		t.Fatal(err)
	}
	if len(m.HTML) > MaxHTMLBytes {
		t.Errorf("HTML %d bytes, over the bound %d", len(m.HTML), MaxHTMLBytes)
	}
	shown := strings.Count(m.HTML, "border-left:3px solid #0969da")
	cut := 40 - shown
	if shown == 0 || cut < 2 {
		t.Fatalf("%d findings show their code; want some, not all", shown)
	}
	say := "The code at " + strconv.Itoa(cut) + " findings is left out to keep this email short"
	if !strings.Contains(m.HTML, say) || !strings.Contains(m.Text, say) {
		t.Errorf("the email does not say %q", say)
	}
	if strings.Count(m.Text, "\n    > +") != shown {
		t.Errorf("the text part shows %d findings' code, the HTML %d", strings.Count(m.Text, "\n    > +"), shown)
	}
	v := newView(d)
	fitCode(v.listedFindings(), func() int { v.countCut(); return len(critiqueHTML(v)) })
	for _, fv := range v.listedFindings() {
		if fv.Severity == critic.SeverityError && fv.Code == nil {
			t.Errorf("an error's code (line %d) was cut while warnings' were kept", fv.Line)
		}
	}

	// Few findings: all their code, nothing said.
	d.Critique.Findings = d.Critique.Findings[:5]
	d.Critique.Findings[1].Excerpt = code
	m, _ = r.Render(d)
	if strings.Count(m.HTML, "border-left:3px solid #0969da") != 5 || strings.Contains(m.HTML, "is left out to keep") {
		t.Error("a small email cut its code")
	}
}
