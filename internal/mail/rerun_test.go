package mail_test

import (
	"regexp"
	"strings"
	"testing"

	"github.com/criticizer/criticizer/internal/critic"
	"github.com/criticizer/criticizer/internal/mail"
)

// rerunData is version 5 of a GitHub pull request reviewed by a model,
// compared with version 4: one finding new, one unchanged, two resolved
// listed of three, a resolved one with a link in the model's words.
func rerunData() mail.Data {
	return mail.Data{
		ChangelistID: "acme/store#42", ReviewVersion: 5, Title: "Look items up by id", URL: "https://github.com/acme/store/pull/42",
		Author: "octocat", Source: mail.SourceGitHub,
		Critique: critic.Critique{Critic: "openai/gpt-4.1", Summary: "The lookup hides scan errors.", Files: 20, Additions: 90, Deletions: 12,
			Findings: []critic.Finding{
				{File: "store/get.go", Line: 13, Severity: critic.SeverityError, Rule: "ignored-error", Message: "NEWFINDING: Scan's error is dropped.", New: true},
				{File: "store/put.go", Line: 7, Severity: critic.SeverityWarning, Rule: "race", Message: "OLDFINDING: the cache is written unlocked."},
			},
			Changes: &critic.Changes{Since: 4, Reviewed: 2, Carried: 18, New: 1, Unchanged: 1, ResolvedCount: 3, Resolved: []critic.Finding{
				{File: "store/get.go", Line: 11, Severity: critic.SeverityError, Rule: "sql-injection", Message: "GONEFINDING: see https://evil.example/x for the exploit."},
				{File: "store/legacy.go", Line: 3, Severity: critic.SeverityWarning, Rule: "nil-dereference", Message: "GONEFILE: it is nil on a miss."},
			}},
		},
	}
}

// A rerun's email (critique/v4) says what changed since the version it
// was compared with: the new findings, the unchanged ones and the resolved
// ones each in their own section, the resolved ones with the line they
// had and no link (their lines are another version's), model text in them
// defanged like all model text; a first review's email is critique/v3.
// Rules: R-MAIL-3, R-MAIL-2.
func TestRender_RerunSaysWhatIsNewUnchangedResolved(t *testing.T) {
	m, err := renderer(t).Render(rerunData())
	if err != nil {
		t.Fatal(err)
	}
	if m.TemplateVersion != mail.RerunTemplateVersion {
		t.Fatalf("template %q; want %q", m.TemplateVersion, mail.RerunTemplateVersion)
	}
	section := func(body, start, end string) string {
		i := strings.Index(body, start)
		if i < 0 {
			t.Fatalf("no %q in:\n%s", start, body)
		}
		rest := body[i+len(start):]
		if j := strings.Index(rest, end); j >= 0 {
			return rest[:j]
		}
		return rest
	}
	for part, body := range map[string]string{"text": m.Text, "html": m.HTML} {
		if !strings.Contains(body, "Since version 4: ") || !strings.Contains(body, "1 unchanged, ") ||
			!strings.Contains(body, "2 of 20 files changed and were reviewed again; the findings on the other 18 are carried over.") {
			t.Errorf("%s: no line saying what changed since version 4", part)
		}
		added := section(body, "New since version 4", "Unchanged since version 4")
		same := section(body, "Unchanged since version 4", "Resolved since version 4")
		gone := section(body, "Resolved since version 4", "Reviewed by")
		if !strings.Contains(added, "NEWFINDING") || strings.Contains(added, "OLDFINDING") || strings.Contains(added, "GONE") {
			t.Errorf("%s: new section %q", part, added)
		}
		if !strings.Contains(same, "OLDFINDING") || strings.Contains(same, "NEWFINDING") || strings.Contains(same, "GONE") {
			t.Errorf("%s: unchanged section %q", part, same)
		}
		if !strings.Contains(gone, "GONEFINDING") || !strings.Contains(gone, "GONEFILE") || !strings.Contains(gone, "was line 11") ||
			!strings.Contains(gone, "And 1 more resolved finding.") || strings.Contains(gone, "NEWFINDING") {
			t.Errorf("%s: resolved section %q", part, gone)
		}
		if strings.Contains(gone, "https://evil.example") || !strings.Contains(gone, "hxxps[:]//evil[.]example") {
			t.Errorf("%s: a resolved finding's link is not defanged: %q", part, gone)
		}
		if strings.Contains(gone, "#diff-") || strings.Contains(gone, "href") {
			t.Errorf("%s: a resolved finding links into the diff: %q", part, gone)
		}
	}
	if !regexp.MustCompile(`href="https://github.com/acme/store/pull/42/files#diff-[0-9a-f]+R13"`).MatchString(m.HTML) {
		t.Error("the new finding does not link to its line")
	}
	if !strings.Contains(m.HTML, "display:none") || !strings.Contains(m.HTML, ">1 new, 1 unchanged, 3 resolved since version 4 on acme/store#42 version 5</div>") {
		t.Error("the preview line does not say what changed")
	}

	first := rerunData()
	first.Critique.Changes = nil
	m, err = renderer(t).Render(first)
	if err != nil {
		t.Fatal(err)
	}
	if m.TemplateVersion != mail.TemplateVersion || strings.Contains(m.Text, "since version") || strings.Contains(m.HTML, "since version") {
		t.Errorf("a critique with nothing to compare with: template %q, or it speaks of changes", m.TemplateVersion)
	}
}

// Nothing new is said, not left to be guessed; nothing carried over says
// every file was reviewed again (an operator's rerun).
func TestRender_RerunNothingNewEverythingReviewed(t *testing.T) {
	d := rerunData()
	d.Critique.Findings = d.Critique.Findings[1:]
	d.Critique.Changes.Reviewed, d.Critique.Changes.Carried = 20, 0
	_, html, text, _ := render(t, d)
	for part, body := range map[string]string{"text": text, "html": html} {
		if !strings.Contains(body, "Nothing new since version 4.") || !strings.Contains(body, "Every file was reviewed again.") {
			t.Errorf("%s part does not say nothing is new and every file was reviewed", part)
		}
	}
}
