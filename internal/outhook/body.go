package outhook

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/criticizer/criticizer/internal/channel"
	"github.com/criticizer/criticizer/internal/mail"
)

// BodyVersion is the body's schema version; a change a receiver would
// have to read differently is a new version.
const BodyVersion = 1

// MaxBody bounds a message's body: findings are left out from the end
// (FindingsOmitted says how many) until it fits.
const MaxBody = 48 << 10

// Body is a message's JSON (version 1). Type is
// "criticizer.review.started" or "criticizer.review.finished". Every
// string a model wrote (Summary, each finding's message) is plain text
// with its URLs and web domains defanged; Text is the same in Slack's
// mrkdwn, with &, < and > escaped so no model text forms a link or a
// mention there.
type Body struct {
	Type            string    `json:"type"`
	Version         int       `json:"version"`
	ID              string    `json:"id"`
	Changelist      CL        `json:"changelist"`
	Phase           string    `json:"phase"`
	Outcome         string    `json:"outcome,omitempty"`
	Reason          string    `json:"reason,omitempty"`
	Counts          *Counts   `json:"counts,omitempty"`
	Summary         string    `json:"summary,omitempty"`
	Findings        []Finding `json:"findings,omitempty"`
	FindingsOmitted int       `json:"findings_omitted,omitempty"`
	JobURL          string    `json:"job_url,omitempty"`
	Text            string    `json:"text"`
}

// CL names the changelist and version.
type CL struct {
	Source     string `json:"source"`
	Repository string `json:"repository,omitempty"`
	ID         string `json:"id"`
	Title      string `json:"title,omitempty"`
	Version    int    `json:"version"`
	Head       string `json:"head,omitempty"`
}

// Counts are the findings by severity.
type Counts = channel.Counts

// Finding is one finding, as plain text.
type Finding struct {
	File     string `json:"file"`
	Line     int    `json:"line,omitempty"`
	Severity string `json:"severity"`
	Rule     string `json:"rule,omitempty"`
	Message  string `json:"message"`
}

// Render is p's message body, at most MaxBody bytes.
func Render(p channel.Post) ([]byte, error) {
	b := Body{Type: "criticizer.review." + string(p.Phase), Version: BodyVersion, ID: p.ID,
		Changelist: CL{Source: p.Source, Repository: p.Repository, ID: p.Changelist, Title: mail.Defang(p.Title), Version: p.Version, Head: p.Head},
		Phase:      string(p.Phase), Outcome: string(p.Outcome), Reason: mail.Defang(p.Reason), JobURL: p.JobURL}
	if p.Phase == channel.Finished && p.Outcome == channel.Reviewed {
		c := p.Counts
		b.Counts = &c
		b.Summary = mail.Defang(p.Summary)
		for _, f := range p.Findings {
			b.Findings = append(b.Findings, Finding{File: f.File, Line: f.Line, Severity: string(f.Severity), Rule: f.Rule,
				Message: mail.Defang(f.Message)})
		}
		b.FindingsOmitted = c.Error + c.Warning + c.Info - len(b.Findings)
	}
	for {
		b.Text = slackText(b)
		out, err := json.Marshal(b)
		if err != nil {
			return nil, fmt.Errorf("render %s: %w", p.ID, err)
		}
		if len(out) <= MaxBody || len(b.Findings) == 0 {
			if len(out) > MaxBody {
				return nil, fmt.Errorf("render %s: %d bytes without findings", p.ID, len(out))
			}
			return out, nil
		}
		cut := max(1, len(b.Findings)/4)
		b.Findings = b.Findings[:len(b.Findings)-cut]
		b.FindingsOmitted += cut
	}
}

// slackEscape escapes what Slack's mrkdwn gives meaning to: &, < and >
// (a <url|text> link, a <!channel> or <@U…> mention).
func slackEscape(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;").Replace(s)
}

// slackText is the body's text for Slack-compatible receivers: a
// heading line, then (for a review) the counts and the findings, one a
// line. Only the job's link is a link.
func slackText(b Body) string {
	var w strings.Builder
	name := b.Changelist.ID
	if b.Changelist.Title != "" {
		name += " " + b.Changelist.Title
	}
	fmt.Fprintf(&w, "Criticizer: %s v%d ", slackEscape(name), b.Changelist.Version)
	switch {
	case b.Phase == string(channel.Started):
		w.WriteString("is being reviewed")
	case b.Outcome == string(channel.Reviewed):
		fmt.Fprintf(&w, "reviewed: %d error, %d warning, %d info", b.Counts.Error, b.Counts.Warning, b.Counts.Info)
	default:
		w.WriteString(strings.ReplaceAll(b.Outcome, "_", " "))
		if b.Reason != "" {
			fmt.Fprintf(&w, " (%s)", slackEscape(b.Reason))
		}
	}
	if b.JobURL != "" && !strings.ContainsAny(b.JobURL, "<>|") {
		fmt.Fprintf(&w, " <%s|status>", b.JobURL)
	}
	for _, f := range b.Findings {
		loc := f.File
		if f.Line > 0 {
			loc = fmt.Sprintf("%s:%d", f.File, f.Line)
		}
		fmt.Fprintf(&w, "\n• %s %s: %s", f.Severity, slackEscape(loc), slackEscape(f.Message))
	}
	if b.FindingsOmitted > 0 {
		fmt.Fprintf(&w, "\n…and %d more", b.FindingsOmitted)
	}
	return w.String()
}
