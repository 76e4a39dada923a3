// Package mail renders the critique email and sends it with SES v2.
//
// Rendering happens once per delivery row, when the row is created; the result
// is stored with the row, so a retry sends exactly the bytes the first attempt
// would have sent.
//
// Templates are named and versioned ("critique/v3"): the version is stored
// with every rendered message, so a layout change is a new version and an
// operator can tell which layout a reviewer saw. Each template has an HTML
// form, in which everything the change's author or a model wrote is
// escaped as html/template escapes it, and a plain-text form (write.go).
package mail

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/criticizer/criticizer/internal/critic"
	"github.com/criticizer/criticizer/internal/delivery"
	"github.com/criticizer/criticizer/internal/vote"
)

// TemplateVersion names the critique template set; it is stored with every
// rendered message so an operator can tell which layout a reviewer saw.
// It is the layout of a critique with nothing to compare with (a first
// review).
const TemplateVersion = "critique/v3"

// RerunTemplateVersion is the layout of a critique compared with the
// previous reviewed version (critic.Changes): critique/v3 with what is new,
// unchanged and resolved since that version in sections of their own
// (R-MAIL-3).
const RerunTemplateVersion = "critique/v4"

// UnsubscribedVersion names the unsubscribe confirmation page.
const UnsubscribedVersion = "unsubscribed/v1"

// UnsubscribeVersion names the unsubscribe endpoint's confirmation form.
const UnsubscribeVersion = "unsubscribe/v1"

// ErrUnknownTemplate is returned by Preview for a name PreviewNames does not
// list.
var ErrUnknownTemplate = errors.New("mail: unknown template")

// Data is what the critique templates show.
type Data struct {
	ChangelistID  string
	ReviewVersion int
	// Title is the version's title, shown in the body.
	Title string
	// ThreadTitle is the title the conversation is named by: the
	// changelist's first, which the subject keeps though the title is
	// edited (R-THREAD-1). Empty: Title.
	ThreadTitle string
	URL         string
	Author      string
	// Repository is the repository a generic caller named (job.Job's
	// Repository), shown beside the changelist id, where a code host's
	// changelist id shows its own; empty: none shown.
	Repository string
	// Source is the review tool the changelist lives in ("github",
	// "gitlab", "gerrit", "generic"); it decides how findings link into
	// the diff (LineURL). Empty or unknown: findings link to URL.
	Source string
	// UnsubscribeURL is the recipient's one-click unsubscribe link. It is
	// shown in the footer and sent as the List-Unsubscribe header. Empty:
	// the footer says how to stop the emails without a link.
	UnsubscribeURL string
	Critique       critic.Critique
	// Votes mints a finding's two vote links, "useful" and "wrong"
	// (R-VOTE-1), shown under each finding of this version (not under
	// resolved ones). Nil, or empty links: none are shown.
	Votes func(f critic.Finding) (useful, wrong string)

	// Hidden is how many of this version's findings the recipient marked
	// wrong and are left out of Critique (R-VOTE-3): the email says how
	// many. Zero: nothing is said.
	Hidden int

	// LeftOut is how many of this version's findings the recipient's own
	// minimum severity, LeftOutBelow, left out of Critique (R-PREF-3):
	// the email says how many, and below what. Zero: nothing is said.
	LeftOut      int
	LeftOutBelow string
	// PreferencesURL is the recipient's preference page (R-PREF-2),
	// linked in the footer. Empty: no such link.
	PreferencesURL string
	// ReplyTo is the email's reply address (R-REPLY-1), its Reply-To;
	// with it, the findings of this version are numbered and the footer
	// says what a reply can do. Empty: neither.
	ReplyTo string

	// Thread is the recipient's conversation root about the changelist
	// (Threads.Root), ListID the deploy's list id (config's
	// CRITICIZER_LIST_ID), Reason why the recipient is mailed (Reason*).
	// Empty: the message has no such header.
	Thread, ListID, Reason string
}

// FileFindings groups findings by file for the templates.
type FileFindings struct {
	File     string
	URL      string // the file in the review tool's diff view
	Findings []FindingView
}

// FindingView is a finding with its links.
type FindingView struct {
	critic.Finding
	URL string // the line (or file) in the review tool's diff view
	// UsefulURL and WrongURL are the finding's vote links (R-VOTE-1);
	// both empty when there are none.
	UsefulURL, WrongURL string
	// Number is the finding's number in the email, from 1, shown when
	// the email can be replied to (Data.ReplyTo): what "wrong 3" names
	// (R-REPLY-4). It is the finding's place in Message.Findings.
	Number int
	// Code is the diff's code at the finding (its Excerpt), cleaned and
	// defanged, shown under it (R-MAIL-5); none for a whole-file finding,
	// a resolved one, or one whose code the email's size bound left out
	// (CodeCut).
	Code []CodeLine
	// CodeCut: the finding had code that a size bound left out, the
	// critique's (R-BOUND-2) or the email's (MaxHTMLBytes).
	CodeCut bool
	// code is Code before the email's bound (fitCode).
	code []CodeLine
}

// CodeLine is one line of a finding's code.
type CodeLine struct {
	// Kind is "added", "removed" or "context"; Marker the diff's marker
	// for it ("+", "-", " ").
	Kind, Marker string
	// Text is the line's text: cleaned (critic.CleanCode) and defanged,
	// escaped where it is written.
	Text string
	// Flagged: the line the finding is about.
	Flagged bool
}

// codeLines is an excerpt as the email shows it. Diff content is data
// from an untrusted change, like a model's words: cleaned again (a
// stored critique is trusted no more than that) and defanged, so no URL
// or web domain in it becomes a link, in the HTML or in a client's
// autolinking of the text part (R-MAIL-2).
func codeLines(e critic.Excerpt, host string) []CodeLine {
	ls := e.Split()
	if len(ls) == 0 {
		return nil
	}
	out := make([]CodeLine, len(ls))
	for i, l := range ls {
		c := CodeLine{Kind: "context", Marker: " ", Text: defang(critic.CleanCode(l.Text), host), Flagged: l.Flagged}
		switch l.Kind {
		case '+':
			c.Kind, c.Marker = "added", "+"
		case '-':
			c.Kind, c.Marker = "removed", "-"
		}
		out[i] = c
	}
	return out
}

// Counts tallies findings by severity for the header.
type Counts struct {
	Errors, Warnings, Infos, Total int
}

// view is the template's input: Data plus derived fields.
type view struct {
	Data
	Files           []FileFindings
	Counts          Counts
	TemplateVersion string
	// ByModel: the summary and findings were written by a model, and say
	// so where they are shown.
	ByModel bool

	// A rerun's comparison (critique/v4): Changes, and the findings of
	// Files split into those new and those unchanged since Changes.Since,
	// grouped the same way, with their counts; the resolved ones, grouped
	// without links (their lines are the earlier version's), and how many
	// were not listed.
	Changes                  *critic.Changes
	New, Unchanged, Resolved []FileFindings
	NewCount, UnchangedCount int
	ResolvedMore             int

	// CodeCut counts the findings listed under this version whose code a
	// size bound left out: the email says so (R-MAIL-5).
	CodeCut int

	// deliveryID is a digest item's version row (DigestItem.DeliveryID).
	deliveryID string
}

// Renderer renders the critique email and the unsubscribe pages
// (write.go: written by hand, byte for byte what the versioned templates
// under testdata rendered). It holds no state; it is safe for concurrent
// use.
type Renderer struct{}

// NewRenderer returns a renderer.
func NewRenderer() (*Renderer, error) { return &Renderer{}, nil }

// Subject names the changelist and the title its conversation is named
// by (ThreadTitle, else Title). It is the same for every version, even
// after the title is edited, so a mail client that groups by subject
// (Gmail, Outlook) keeps the versions in one conversation (R-THREAD-1);
// the version and its current title are in the body.
func Subject(d Data) string {
	title := d.Title
	if d.ThreadTitle != "" {
		title = d.ThreadTitle
	}
	if len(title) > 120 {
		// Cut at a character boundary: a subject must stay valid UTF-8.
		cut := 117
		for cut > 0 && !utf8.RuneStart(title[cut]) {
			cut--
		}
		title = title[:cut] + "..."
	}
	return fmt.Sprintf("[Criticizer] %s: %s", d.ChangelistID, strings.Join(strings.Fields(title), " "))
}

// severityRank orders severities for the email: error, warning, info, then
// anything else a critic may have written.
func severityRank(s critic.Severity) int {
	switch s {
	case critic.SeverityError:
		return 0
	case critic.SeverityWarning:
		return 1
	case critic.SeverityInfo:
		return 2
	default:
		return 3
	}
}

// newView groups findings by file (files in path order, as in the diff) and
// orders each file's findings most severe first, then by line: the reader
// sees what matters in a file before the remarks. The order is total, so the
// output never depends on the input's order.
func newView(d Data) view {
	v := view{Data: d, TemplateVersion: TemplateVersion, ByModel: !strings.HasPrefix(d.Critique.Critic, "offline/")}
	// Model text is data: no working link but to the changelist's host
	// (R-MAIL-2).
	host := changelistHost(d.URL)
	d.Critique.Summary = defang(d.Critique.Summary, host)
	fs := make([]critic.Finding, len(d.Critique.Findings))
	for i, f := range d.Critique.Findings {
		f.Message = defang(f.Message, host)
		fs[i] = f
	}
	d.Critique.Findings = fs
	v.Data = d
	for _, f := range d.Critique.Findings {
		switch f.Severity {
		case critic.SeverityError:
			v.Counts.Errors++
		case critic.SeverityWarning:
			v.Counts.Warnings++
		default:
			v.Counts.Infos++ // as the critic's summary counts them
		}
		v.Counts.Total++
	}
	v.Files = v.group(d.Critique.Findings, true)
	if ch := d.Critique.Changes; ch != nil {
		v.TemplateVersion, v.Changes = RerunTemplateVersion, ch
		var added, same []critic.Finding
		for _, f := range d.Critique.Findings {
			if f.New {
				added = append(added, f)
			} else {
				same = append(same, f)
			}
		}
		resolved := make([]critic.Finding, len(ch.Resolved))
		for i, f := range ch.Resolved {
			f.Message = defang(f.Message, host)
			resolved[i] = f
		}
		v.New, v.Unchanged, v.Resolved = v.group(added, true), v.group(same, true), v.group(resolved, false)
		v.NewCount, v.UnchangedCount = len(added), len(same)
		v.ResolvedMore = max(ch.ResolvedCount-len(resolved), 0)
	}
	v.countCut()
	if d.ReplyTo != "" {
		n := 0
		for _, g := range v.listedGroups() {
			for i := range g {
				for j := range g[i].Findings {
					n++
					g[i].Findings[j].Number = n
				}
			}
		}
	}
	return v
}

// listedGroups are the groups of the findings the email lists under
// this version, in the order it lists them (a rerun's new ones, then its
// unchanged ones; resolved ones are not this version's).
func (v view) listedGroups() [][]FileFindings {
	if v.Changes != nil {
		return [][]FileFindings{v.New, v.Unchanged}
	}
	return [][]FileFindings{v.Files}
}

// MaxHTMLBytes bounds a critique email's or a digest's HTML part as far as
// the code at its findings goes (R-MAIL-5): under Gmail's clipping size
// (102 KB), past which a reader sees "[Message clipped]" and not the
// footer. The code is the first thing left out, the least severe
// findings' first, and the email says how much. An email whose findings
// alone weigh more (a hundred findings with their links) shows no code
// and is as it was before code was shown.
const MaxHTMLBytes = 96 << 10

// fitCode leaves out the code of as few of fs (the findings an email
// lists) as bring size (the email's HTML as they stand) within
// MaxHTMLBytes, the least severe findings' code first, then the last
// listed; all of it when that is not enough. The caller found the email
// over the bound with all of it.
func fitCode(fs []*FindingView, size func() int) {
	var order []*FindingView
	for _, f := range fs {
		if len(f.code) > 0 {
			order = append(order, f)
		}
	}
	if len(order) == 0 {
		return
	}
	slices.SortStableFunc(order, func(a, b *FindingView) int { return cmp.Compare(severityRank(a.Severity), severityRank(b.Severity)) })
	keep := func(n int) {
		for i, f := range order {
			if i < n {
				f.Code, f.CodeCut = f.code, false
			} else {
				f.Code, f.CodeCut = nil, true
			}
		}
	}
	lo, hi := 0, len(order) // keep(lo) is the fallback; keep(hi) does not fit
	for lo < hi-1 {
		mid := (lo + hi) / 2
		if keep(mid); size() <= MaxHTMLBytes {
			lo = mid
		} else {
			hi = mid
		}
	}
	keep(lo)
}

// countCut counts the findings listed whose code a bound left out.
func (v *view) countCut() {
	v.CodeCut = 0
	for _, fv := range v.listedFindings() {
		if fv.CodeCut {
			v.CodeCut++
		}
	}
}

// listedFindings are the findings the email lists under this version, in
// the order it lists them, to be changed in place.
func (v view) listedFindings() []*FindingView {
	var out []*FindingView
	for _, g := range v.listedGroups() {
		for i := range g {
			for j := range g[i].Findings {
				out = append(out, &g[i].Findings[j])
			}
		}
	}
	return out
}

// group groups findings by file for the templates, with links into the
// review tool's diff view unless link is false (findings of another
// version, whose lines are not this version's).
func (v view) group(fs []critic.Finding, link bool) []FileFindings {
	d := v.Data
	url := func(file string, line int) string {
		if !link {
			return ""
		}
		return LineURL(d.Source, d.URL, d.ReviewVersion, file, line)
	}
	host := changelistHost(d.URL)
	byFile := map[string][]FindingView{}
	for _, f := range fs {
		fv := FindingView{Finding: f, URL: url(f.File, f.Line)}
		if link {
			// A resolved finding's code is another version's: none.
			fv.code = codeLines(f.Excerpt, host)
			fv.Code, fv.CodeCut = fv.code, f.Excerpt.Cut
		}
		if link && d.Votes != nil {
			if u, w := d.Votes(f); u != "" && w != "" {
				fv.UsefulURL, fv.WrongURL = u, w
			}
		}
		byFile[f.File] = append(byFile[f.File], fv)
	}
	var out []FileFindings
	for file, fs := range byFile {
		slices.SortFunc(fs, func(a, b FindingView) int {
			return cmp.Or(
				cmp.Compare(severityRank(a.Severity), severityRank(b.Severity)),
				cmp.Compare(a.Line, b.Line),
				cmp.Compare(a.Rule, b.Rule),
				cmp.Compare(a.Severity, b.Severity),
				cmp.Compare(a.Message, b.Message),
			)
		})
		out = append(out, FileFindings{File: file, URL: url(file, 0), Findings: fs})
	}
	slices.SortFunc(out, func(a, b FileFindings) int { return cmp.Compare(a.File, b.File) })
	return out
}

// Render produces the message: subject, HTML, text, the unsubscribe URL,
// the filing headers' values (FilingHeaders) and a content hash over
// subject, HTML, text and those values (the footer shows the unsubscribe
// URL, so the hash covers it too). A critique compared with an earlier
// version is rendered with RerunTemplateVersion, any other with
// TemplateVersion.
func (r *Renderer) Render(d Data) (delivery.Message, error) {
	v := newView(d)
	html := critiqueHTML(v)
	if len(html) > MaxHTMLBytes {
		// The code goes first, and the email says so (R-MAIL-5).
		fitCode(v.listedFindings(), func() int {
			v.countCut()
			return len(critiqueHTML(v))
		})
		v.countCut()
		html = critiqueHTML(v)
	}
	m := delivery.Message{
		Subject:         Subject(d),
		HTML:            html,
		Text:            critiqueText(v),
		TemplateVersion: v.TemplateVersion,
		UnsubscribeURL:  d.UnsubscribeURL,
		Thread:          d.Thread,
		ListID:          ListIDValue(d.ListID),
		Reason:          d.Reason,
		Severity:        highestSeverity(v.Counts),
		Findings:        listed(v),
		ReplyTo:         d.ReplyTo,
	}
	covered := m.Subject + "\x00" + m.HTML + "\x00" + m.Text + "\x00" + m.Thread + "\x00" + m.ListID + "\x00" + m.Reason + "\x00" + m.Severity
	if m.ReplyTo != "" {
		covered += "\x00" + m.ReplyTo
	}
	sum := sha256.Sum256([]byte(covered))
	m.ContentSHA256 = hex.EncodeToString(sum[:])
	return m, nil
}

// UnsubscribePage is the page the unsubscribe endpoint answers for GET: a
// form whose buttons POST to action (the link itself) to confirm. Apart from
// that action it is the same page for a valid or an invalid token.
func (r *Renderer) UnsubscribePage(action string) ([]byte, error) {
	return []byte(unsubscribePage(action)), nil
}

// UnsubscribedPage is the page the unsubscribe endpoint answers once the
// reader confirmed: unsubscribed from this repository, or from all
// Criticizer email. It is the same page for a valid or an invalid token, so
// the endpoint cannot be used to learn which tokens exist.
func (r *Renderer) UnsubscribedPage(all bool) ([]byte, error) {
	return []byte(unsubscribedPage(all)), nil
}

// listed are the vote.FindingID of the findings the email lists under this
// version, in the order it lists them (a rerun's new ones, then its
// unchanged ones; resolved ones are not this version's): the finding
// numbered n in the email is the n-th. A reply naming a finding by its
// number is resolved against this list (voting.Recorder), so the number
// means what the reader saw, whatever was hidden from them.
func listed(v view) string {
	var out []string
	for _, g := range v.listedGroups() {
		for _, f := range g {
			for _, fv := range f.Findings {
				out = append(out, vote.FindingID(fv.Finding))
			}
		}
	}
	return strings.Join(out, " ")
}
