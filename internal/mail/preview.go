package mail

import (
	"fmt"
	"strings"

	"github.com/criticizer/criticizer/internal/critic"
	"github.com/criticizer/criticizer/internal/prefs"
)

// Content types of the previews.
const (
	ContentTypeHTML = "text/html; charset=utf-8"
	ContentTypeText = "text/plain; charset=utf-8"
)

// PreviewNames lists every template that can be previewed: the critique's
// HTML and text forms, a rerun's, the unsubscribe endpoint's two pages,
// the vote endpoint's two, the preference page, the daily digest's HTML
// and text, and a reply's confirmation.
func (r *Renderer) PreviewNames() []string {
	return []string{TemplateVersion + ".html", TemplateVersion + ".txt", RerunTemplateVersion + ".html", RerunTemplateVersion + ".txt",
		UnsubscribeVersion + ".html", UnsubscribedVersion + ".html", VoteVersion + ".html", VotedVersion + ".html",
		PreferencesVersion + ".html", DigestVersion + ".html", DigestVersion + ".txt",
		ConfirmationVersion + ".html", ConfirmationVersion + ".txt"}
}

// Preview renders a template with built-in sample data (SampleData), so an
// operator can look at a layout without a review in flight. An unknown name
// is ErrUnknownTemplate.
func (r *Renderer) Preview(name string) (contentType string, body []byte, err error) {
	switch name {
	case TemplateVersion + ".html":
		return ContentTypeHTML, []byte(critiqueHTML(newView(SampleData()))), nil
	case TemplateVersion + ".txt":
		return ContentTypeText, []byte(critiqueText(newView(SampleData()))), nil
	case RerunTemplateVersion + ".html":
		return ContentTypeHTML, []byte(critiqueHTML(newView(SampleRerunData()))), nil
	case RerunTemplateVersion + ".txt":
		return ContentTypeText, []byte(critiqueText(newView(SampleRerunData()))), nil
	case UnsubscribeVersion + ".html":
		b, err := r.UnsubscribePage("/unsubscribe/sample-token")
		if err != nil {
			return "", nil, err
		}
		return ContentTypeHTML, b, nil
	case UnsubscribedVersion + ".html":
		b, err := r.UnsubscribedPage(false)
		if err != nil {
			return "", nil, err
		}
		return ContentTypeHTML, b, nil
	case VoteVersion + ".html":
		b, err := r.VotePage("/vote/sample-token", "useful")
		return ContentTypeHTML, b, err
	case VotedVersion + ".html":
		b, err := r.VotedPage("useful")
		return ContentTypeHTML, b, err
	case PreferencesVersion + ".html":
		b, err := r.PreferencesHTML(SamplePreferencesPage())
		return ContentTypeHTML, b, err
	case DigestVersion + ".html", DigestVersion + ".txt":
		m, err := r.RenderDigest(SampleDigestData())
		if err != nil {
			return "", nil, err
		}
		if strings.HasSuffix(name, ".txt") {
			return ContentTypeText, []byte(m.Text), nil
		}
		return ContentTypeHTML, []byte(m.HTML), nil
	case ConfirmationVersion + ".html", ConfirmationVersion + ".txt":
		m, err := r.RenderConfirmation(SampleConfirmation())
		if strings.HasSuffix(name, ".txt") {
			return ContentTypeText, []byte(m.Text), err
		}
		return ContentTypeHTML, []byte(m.HTML), err
	}
	return "", nil, fmt.Errorf("%w: %q", ErrUnknownTemplate, name)
}

// SampleData is a realistic critique for previews and screenshots: several
// files, every severity, a whole-file finding, a partial review (the diff was
// cut and the findings capped), long unbreakable lines and a non-ASCII
// title. It is a GitHub pull request, so findings link to lines.
func SampleData() Data {
	return Data{
		ChangelistID:   "acme/billing#1042",
		ReviewVersion:  3,
		Title:          "Rückerstattungen: add refunds to invoices — 請求書の返金",
		URL:            "https://github.com/acme/billing/pull/1042",
		Author:         "ana.lópez",
		Source:         SourceGitHub,
		UnsubscribeURL: "https://criticizer.example.com/unsubscribe?token=sample-token",
		PreferencesURL: "https://criticizer.example.com/preferences/" + strings.Repeat("sample-token-", 9),
		Votes:          sampleVotes,
		ReplyTo:        "reply+" + strings.Repeat("k", 58) + "@replies.criticizer.example.com",
		Critique: critic.Critique{
			Critic: "offline/v1",
			Summary: "This change touches 5 files, adding 214 lines and removing 37 lines. " +
				"Found 9 issues: 2 errors, 4 warnings and 3 informational notes. Only the 8 most severe are listed. " +
				"The diff was larger than the size limit: only its first files were reviewed.",
			Files:     5,
			Additions: 214,
			Deletions: 37,
			Truncated: true,
			Findings: []critic.Finding{
				{File: "config/production.env", Line: 4, Severity: critic.SeverityError, Rule: "secret-added",
					Message: "A value that looks like an AWS secret access key was added; rotate it and load it from the secret store.",
					Excerpt: sampleCode(3, " REGION=eu-central-1", " BUCKET=acme-billing-prod", "+AWS_SECRET_ACCESS_KEY=[REDACTED:aws_secret]")},
				{File: "internal/billing/invoice.go", Line: 15, Severity: critic.SeverityInfo, Rule: "todo-added",
					Message: "A TODO was added: \"handle partial refunds\".",
					Excerpt: sampleCode(3, " func (inv *Invoice) Refund(amount Money) error {", "     if amount > inv.Paid {",
						"+        // TODO: handle partial refunds", "         return ErrRefundTooLarge", "     }")},
				{File: "internal/billing/invoice.go", Line: 19, Severity: critic.SeverityWarning, Rule: "debug-print",
					Message: "fmt.Println left in; use the structured logger.",
					Excerpt: sampleCode(3, "     }", "-    log.Printf(\"refund %d of %s\", amount, inv.ID)", "+    fmt.Println(\"refund\", amount, inv.ID)",
						"     inv.Refunded += amount", "     return inv.save()")},
				{File: "internal/billing/invoice.go", Line: 88, Severity: critic.SeverityError, Rule: "conflict-marker",
					Message: "A merge-conflict marker (<<<<<<<) was committed.",
					Excerpt: sampleCode(2, " func (inv *Invoice) Total() Money {", "+<<<<<<< HEAD", "+    return inv.Subtotal + inv.Tax", "+=======")},
				{File: "internal/billing/invoice.go", Line: 131, Severity: critic.SeverityWarning, Rule: "long-line",
					Message: "Line is 212 characters long: " + strings.Repeat("refundAmountInMinorUnits", 4) + ".",
					Excerpt: sampleCode(1, "+    "+strings.Repeat("refundAmountInMinorUnits := ", 5)+"…")},
				{File: "internal/billing/refund.go", Line: 0, Severity: critic.SeverityWarning, Rule: "no-tests",
					Message: "New code without tests."},
				{File: "internal/billing/refund.go", Line: 42, Severity: critic.SeverityInfo, Rule: "trailing-whitespace",
					Message: "Trailing whitespace.",
					Excerpt: sampleCode(2, " // Refund returns the amount to the card it was paid with. ", "+func Refund(ctx context.Context, id InvoiceID) error {   ",
						"     inv, err := load(ctx, id)")},
				{File: "web/static/vendor/very/deeply/nested/directory/structure/for/generated_client_bindings_v2.min.js", Line: 1,
					Severity: critic.SeverityWarning, Rule: "binary-or-generated", Message: "A minified file was committed; build it in CI instead."},
			},
		},
	}
}

// sampleCode is an excerpt of the previews' findings: the flagged line
// at (from 1) and the lines around it, each its marker and text.
func sampleCode(at int, lines ...string) critic.Excerpt {
	return critic.Excerpt{Lines: strings.Join(lines, "\n"), At: at}
}

// sampleVotes are the previews' vote links, as long as real ones
// (a real token is about 150 characters).
func sampleVotes(f critic.Finding) (string, string) {
	token := strings.Repeat("sample-token-", 11) + f.Rule
	return "https://criticizer.example.com/vote/" + token + ".u", "https://criticizer.example.com/vote/" + token + ".w"
}

// SampleRerunData is SampleData's next version, compared with it: two files
// changed and reviewed again, three carried over; one finding new, the
// others unchanged (one on a line an edit above moved), two resolved, one
// of them in a file that left the change.
func SampleRerunData() Data {
	d := SampleData()
	d.ReviewVersion = 4
	c := &d.Critique
	c.Summary = "This change touches 5 files, adding 221 lines and removing 40 lines. " +
		"Found 8 issues: 3 errors, 3 warnings and 2 informational notes."
	c.Additions, c.Deletions, c.Truncated = 221, 40, false
	fs := append([]critic.Finding(nil), c.Findings...)
	fs[2].Line = 22 // moved by an edit above it
	fs = append(fs[:4], fs[5:]...)
	fs = append(fs, critic.Finding{File: "internal/billing/refund.go", Line: 57, Severity: critic.SeverityError, Rule: "ignored-error",
		Message: "The error of tx.Commit is dropped, so a refund that failed to commit is reported as done.", New: true,
		Excerpt: sampleCode(3, "     if err := tx.Insert(refund); err != nil {", "         return err", "+    tx.Commit()", "+    return nil", " }")})
	c.Findings = fs
	c.Changes = &critic.Changes{Since: 3, Reviewed: 2, Carried: 3, New: 1, Unchanged: 7, ResolvedCount: 2, Resolved: []critic.Finding{
		{File: "internal/billing/invoice.go", Line: 131, Severity: critic.SeverityWarning, Rule: "long-line",
			Message: "Line is 212 characters long: " + strings.Repeat("refundAmountInMinorUnits", 4) + "."},
		{File: "internal/billing/legacy_refunds.go", Line: 0, Severity: critic.SeverityWarning, Rule: "no-tests",
			Message: "Old code without tests."},
	}}
	return d
}

// SamplePreferencesPage is the preference page of a reader who chose a
// daily digest and errors only, muted one repository and opened the link
// of an email about another, with long repository names.
func SamplePreferencesPage() PreferencesPage {
	p := prefs.Preferences{Mode: prefs.Mixed, DigestHour: 8, TimeZone: "Europe/Berlin", MinSeverity: prefs.SeverityWarning,
		Muted: []string{"gitlab:platform/infrastructure/terraform-modules-for-every-environment-we-run"}, Rev: 4}
	link := "github:acme/billing"
	return PreferencesPage{Action: "/preferences/sample-token", Preferences: p, Offered: prefs.Offered(p, link), LinkRepository: link,
		Zones: prefs.Zones(p.TimeZone), Saved: true}
}

// SampleDigestData is a day's digest for previews and screenshots: the
// sample critique, a model's review of another changelist gathered over
// three versions (its summary naming a foreign link, defanged), a
// changelist with nothing found, and two more past the cap.
func SampleDigestData() DigestData {
	first := SampleData()
	model := SampleRerunData()
	model.Critique.Critic = "bedrock/anthropic.claude-sonnet-4-5"
	model.Critique.Summary = "The refund path commits before it validates; see https://evil.example/fix for a patch."
	return DigestData{
		Date:           "2026-11-28",
		UnsubscribeURL: first.UnsubscribeURL,
		PreferencesURL: "https://criticizer.example.com/preferences/sample-token",
		ReplyTo:        first.ReplyTo,
		More:           2,
		Items: []DigestItem{
			{Source: first.Source, ChangelistID: first.ChangelistID, ReviewVersion: first.ReviewVersion, Versions: 1, Title: first.Title,
				URL: first.URL, Author: first.Author, Critique: first.Critique, Votes: sampleVotes, DeliveryID: "d_sample1"},
			{Source: SourceGitHub, ChangelistID: "acme/ledger#77", ReviewVersion: 4, Versions: 3, Title: "Ledger: batch refund postings",
				URL: "https://github.com/acme/ledger/pull/77", Author: "li.wei", Critique: model.Critique, Hidden: 1, Votes: sampleVotes, DeliveryID: "d_sample2"},
			{Source: SourceGitHub, ChangelistID: "acme/web#310", ReviewVersion: 1, Versions: 1, Title: "Docs: fix a typo",
				URL: "https://github.com/acme/web/pull/310", Author: "sam",
				Critique: critic.Critique{Critic: "offline/v1", Summary: "No issues were found.", Files: 1, Additions: 1, Deletions: 1}},
		},
	}
}

// SampleConfirmation is a reply's confirmation for previews: two findings
// marked, one number the email does not list, a mute, the vocabulary
// asked for, and commands past the limit.
func SampleConfirmation() Confirmation {
	d := SampleData()
	return Confirmation{ChangelistID: d.ChangelistID, Subject: Subject(d), Findings: len(d.Critique.Findings),
		Actions: []ReplyAction{{Verb: "wrong", Finding: 1, Listed: true}, {Verb: "useful", Finding: 3, Listed: true},
			{Verb: "wrong", Finding: 12}, {Verb: "mute"}, {Verb: "help"}},
		Ignored: 2, Unknown: 1, ReplyTo: d.ReplyTo}
}
