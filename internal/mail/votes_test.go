package mail

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/criticizer/criticizer/internal/critic"
	"github.com/criticizer/criticizer/internal/vote"
)

// Each finding of this version carries its own two vote links in the
// HTML and the text part; resolved findings carry none; without links
// configured there are none. Fifty findings with their links keep the
// HTML under Gmail's 102 KB clipping size, so the footer's unsubscribe
// link is still shown. The links are ours (our host, our signed token):
// a model's words in a finding cannot change them (R-MAIL-2).
// Rules: R-VOTE-1, R-MAIL-2.
func TestRender_FeedbackLinksPerFinding(t *testing.T) {
	s, err := vote.NewSigner("mail-test-unsubscribe-key-0123456789abcdef")
	if err != nil {
		t.Fatal(err)
	}
	exp := time.Date(2026, 12, 27, 0, 0, 0, 0, time.UTC)
	links := func(f critic.Finding) (string, string) {
		return s.Links("https://api.example.com", "d_mailvote", f, exp)
	}
	r, _ := NewRenderer()

	d := rerunCases()[0]
	d.Critique.Critic = "openai/gpt-4.1"
	d.Critique.Findings[1].Message = `Click https://evil.example/vote/x <a href="https://evil.example">here</a>`
	d.Votes = links
	m, err := r.Render(d)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range d.Critique.Findings {
		f.Message = defang(f.Message, changelistHost(d.URL))
		u, w := links(f)
		for part, body := range map[string]string{"html": m.HTML, "text": m.Text} {
			if strings.Count(body, escURL(u)) != 1 && strings.Count(body, u) != 1 || strings.Count(body, escURL(w)) != 1 && strings.Count(body, w) != 1 {
				t.Errorf("%s: finding %q lacks its own two links", part, f.Rule)
			}
		}
	}
	for part, body := range map[string]string{"html": m.HTML, "text": m.Text} {
		if n := strings.Count(body, "https://api.example.com/vote/"); n != 2*len(d.Critique.Findings) {
			t.Errorf("%s: %d vote links, want 2 per finding of this version (%d), none for resolved ones", part, n, 2*len(d.Critique.Findings))
		}
		if strings.Contains(body, "https://evil.example") {
			t.Errorf("%s: the model's link is live", part)
		}
	}

	d.Votes = nil
	m, _ = r.Render(d)
	if strings.Contains(m.HTML+m.Text, "https://api.example.com/vote/") || strings.Contains(m.HTML, "Was this useful?") {
		t.Error("links without a signer")
	}
	d.Votes = func(critic.Finding) (string, string) { return "", "" }
	if m, _ = r.Render(d); strings.Contains(m.HTML, "Was this useful?") {
		t.Error("an empty link is shown")
	}

	big := firstCases()[0]
	big.Critique.Findings = nil
	for i := range 50 {
		big.Critique.Findings = append(big.Critique.Findings, critic.Finding{File: "internal/billing/file" + strconv.Itoa(i%7) + ".go", Line: 10 + i,
			Severity: critic.SeverityWarning, Rule: "a-rule-name-of-some-length-" + strconv.Itoa(i), Message: strings.Repeat("A finding of ordinary length. ", 6)})
	}
	big.Votes = links
	m, _ = r.Render(big)
	if len(m.HTML) > 102*1024 {
		t.Errorf("50 findings with vote links: HTML %d bytes, over Gmail's 102 KB clip", len(m.HTML))
	}
	t.Logf("50 findings: HTML %d bytes, text %d bytes", len(m.HTML), len(m.Text))
}
