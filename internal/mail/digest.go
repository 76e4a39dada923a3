package mail

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"slices"
	"strconv"
	"strings"

	"github.com/criticizer/criticizer/internal/critic"
	"github.com/criticizer/criticizer/internal/delivery"
	"github.com/criticizer/criticizer/internal/vote"
)

// DigestVersion names the daily digest's layout (R-DIGEST-4).
const DigestVersion = "digest/v1"

// ReasonDigest is X-Criticizer-Reason on a digest: the reader chose a
// daily digest.
const ReasonDigest = "digest"

// DigestFindings is how many findings a digest shows per changelist, the
// most severe first; the rest are counted, and the changelist's link
// shows them all.
const DigestFindings = 10

// DigestData is what a daily digest shows: one reader's critiques of a
// day, a changelist each, as they would have been mailed to them (their
// own filters applied), and the counts of what it leaves out.
type DigestData struct {
	// Date is the reader's local date the digest covers ("2026-11-28").
	Date string
	// Items are the changelists shown, in order.
	Items []DigestItem
	// More is how many changelists the digest covers but does not show
	// (past its cap).
	More int
	// UnsubscribeURL leaves every Criticizer email (a digest is about
	// many repositories); PreferencesURL, when set, opens the reader's
	// preference page. Empty: no such link.
	UnsubscribeURL, PreferencesURL string
	// ListID is the deploy's list id (List-Id).
	ListID string
	// ReplyTo is the digest's reply address (R-DIGEST-6): with it, the
	// findings are numbered across the digest and the footer says what a
	// reply can do. Empty: neither.
	ReplyTo string
}

// DigestItem is one changelist of a digest, at its newest version the
// digest gathered.
type DigestItem struct {
	Source       string
	ChangelistID string
	// Repository is a generic changelist's repository (Data.Repository).
	Repository    string
	ReviewVersion int
	// Versions is how many of the changelist's versions the digest
	// gathered (1: this one).
	Versions int
	Title    string
	URL      string
	Author   string
	// Critique is the version's critique as the reader is mailed it
	// (the minimum severities and the findings they marked wrong left
	// out); Hidden is how many they marked wrong (R-VOTE-3).
	Critique critic.Critique
	Hidden   int
	// Votes mints a finding's vote links under the version's own
	// delivery id (R-VOTE-1); nil: none.
	Votes func(f critic.Finding) (useful, wrong string)
	// DeliveryID is the version's own row, the one the digest gathered:
	// a reply's "wrong N" about a finding of this item is recorded on it,
	// as the finding's Wrong link is (R-DIGEST-6).
	DeliveryID string
}

// digestItemView is an item with its derived fields (newView's, so the
// model's text is defanged and links are made as in a critique email).
type digestItemView struct {
	view
	shownMore int // findings past DigestFindings
	versions  int // DigestItem.Versions
}

func digestViews(d DigestData) []digestItemView {
	out := make([]digestItemView, len(d.Items))
	for i, it := range d.Items {
		c := it.Critique
		fs := slices.Clone(c.Findings)
		slices.SortStableFunc(fs, func(a, b critic.Finding) int {
			return cmp.Or(cmp.Compare(severityRank(a.Severity), severityRank(b.Severity)), cmp.Compare(a.File, b.File), cmp.Compare(a.Line, b.Line))
		})
		more := max(len(fs)-DigestFindings, 0)
		c.Findings = fs[:len(fs)-more]
		// Compared or not, a digest lists the version's findings once:
		// the day's news is the version, not its difference from the last.
		c.Changes = nil
		v := newView(Data{Source: it.Source, ChangelistID: it.ChangelistID, Repository: it.Repository, ReviewVersion: it.ReviewVersion, Title: it.Title, URL: it.URL,
			Author: it.Author, Critique: c, Votes: it.Votes, Hidden: it.Hidden})
		v.deliveryID = it.DeliveryID
		// The counters count the whole review, shown or not.
		for _, f := range fs[len(fs)-more:] {
			switch f.Severity {
			case critic.SeverityError:
				v.Counts.Errors++
			case critic.SeverityWarning:
				v.Counts.Warnings++
			default:
				v.Counts.Infos++
			}
			v.Counts.Total++
		}
		out[i] = digestItemView{view: v, shownMore: more, versions: it.Versions}
	}
	if d.ReplyTo != "" {
		// One numbering across the digest: "wrong 7" names one finding
		// of one changelist (R-DIGEST-6).
		n := 0
		for _, v := range out {
			for _, fv := range v.listedFindings() {
				n++
				fv.Number = n
			}
		}
	}
	return out
}

// digestFindings are the findings a digest lists, in the order it lists
// them, each as the version row it is recorded on and its id
// (delivery.DigestFinding): what "wrong N" names (R-DIGEST-6).
func digestFindings(vs []digestItemView) string {
	var out []string
	for _, v := range vs {
		for _, fv := range v.listedFindings() {
			out = append(out, delivery.DigestFinding(v.deliveryID, vote.FindingID(fv.Finding)))
		}
	}
	return strings.Join(out, " ")
}

// digestCodeCut counts the findings the digest lists whose code a bound
// left out.
func digestCodeCut(vs []digestItemView) int {
	n := 0
	for i := range vs {
		vs[i].countCut()
		n += vs[i].CodeCut
	}
	return n
}

// DigestSubject names the digest's date and size. It differs from day to
// day, and a digest names no conversation root: each digest is a
// conversation of its own, never threaded with a changelist's emails.
func DigestSubject(d DigestData) string {
	n := len(d.Items) + d.More
	return "[Criticizer] Daily digest for " + d.Date + ": " + strconv.Itoa(n) + " " + pick(n == 1, "changelist", "changelists")
}

// RenderDigest renders a daily digest once, when notify closes it: the
// same input gives the same bytes and hash (R-OUTBOX-2, R-MAIL-1). A
// digest has no conversation root; its reason is ReasonDigest and its
// severity the highest of the findings it shows.
func (r *Renderer) RenderDigest(d DigestData) (delivery.Message, error) {
	vs := digestViews(d)
	var total Counts
	for _, v := range vs {
		total.Errors += v.Counts.Errors
		total.Warnings += v.Counts.Warnings
		total.Infos += v.Counts.Infos
		total.Total += v.Counts.Total
	}
	html := digestHTML(d, vs, total)
	if len(html) > MaxHTMLBytes {
		// The code goes first, the least severe findings' first across
		// the digest, and the digest says so (R-MAIL-5).
		var fs []*FindingView
		for _, v := range vs {
			fs = append(fs, v.listedFindings()...)
		}
		fitCode(fs, func() int { return len(digestHTML(d, vs, total)) })
		html = digestHTML(d, vs, total)
	}
	m := delivery.Message{
		Subject:         DigestSubject(d),
		HTML:            html,
		Text:            digestText(d, vs, total),
		TemplateVersion: DigestVersion,
		UnsubscribeURL:  d.UnsubscribeURL,
		ListID:          ListIDValue(d.ListID),
		Reason:          ReasonDigest,
		Severity:        highestSeverity(total),
		Findings:        digestFindings(vs),
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

// countsText is "2 errors, 1 warning, 3 info" or "no issues found".
func countsText(c Counts) string {
	if c.Total == 0 {
		return "no issues found"
	}
	return strconv.Itoa(c.Errors) + " " + pick(c.Errors == 1, "error", "errors") + ", " + strconv.Itoa(c.Warnings) + " " +
		pick(c.Warnings == 1, "warning", "warnings") + ", " + strconv.Itoa(c.Infos) + " info"
}

// digestHTML is the HTML part: the critique email's chrome, a section per
// changelist (its header, counters, the model's summary labelled and
// defanged, its findings as a critique email lists them), and a footer.
func digestHTML(d DigestData, vs []digestItemView, total Counts) string {
	var b strings.Builder
	w := b.WriteString
	n := len(vs) + d.More
	date := escText(d.Date)
	w(`<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="color-scheme" content="light">
<title>Criticizer daily digest for ` + date + `</title>
</head>
<body style="margin:0;padding:0;background:#f4f5f7;font-family:-apple-system,'Segoe UI',Helvetica,Arial,sans-serif;color:#1f2328;-webkit-text-size-adjust:100%;">
<div style="display:none;max-height:0;overflow:hidden;mso-hide:all;">` + strconv.Itoa(n) + ` ` + pick(n == 1, "changelist", "changelists") + ` reviewed: ` + countsText(total) + `</div>
<table role="presentation" width="100%" cellpadding="0" cellspacing="0" border="0" style="background:#f4f5f7;">
<tr><td align="center" style="padding:16px 8px;">
<table role="presentation" width="600" cellpadding="0" cellspacing="0" border="0" style="width:100%;max-width:600px;table-layout:fixed;background:#ffffff;border:1px solid #d0d7de;border-radius:6px;border-collapse:separate;">
<tr><td style="padding:20px 24px 16px;border-bottom:1px solid #d0d7de;">
  <div style="font-size:12px;line-height:1.4;color:#57606a;"><span style="font-weight:600;color:#1f2328;">Criticizer daily digest</span> &middot; ` + date + `</div>
  <h1 style="margin:8px 0 0;font-size:20px;line-height:1.3;font-weight:600;">` + strconv.Itoa(n) + ` ` + pick(n == 1, "changelist", "changelists") + ` reviewed</h1>
  <div style="font-size:13px;line-height:1.4;color:#57606a;margin-top:6px;">` + escText(countsText(total)) + `</div>
</td></tr>`)
	if cut := digestCodeCut(vs); cut != 0 {
		w(`
<tr><td style="padding:10px 24px 4px;">
  <div style="padding:8px 12px;background:#f6f8fa;border:1px solid #d0d7de;border-radius:6px;font-size:13px;line-height:1.45;color:#57606a;">` + codeCutText(cut, "digest") + `</div>
</td></tr>`)
	}
	for _, v := range vs {
		it := v.Data
		c := it.Critique
		cl, ver := escText(it.ChangelistID), strconv.Itoa(it.ReviewVersion)
		w(`
<tr><td style="padding:18px 24px 0;border-top:1px solid #eaeef2;">
  <div style="font-size:12px;line-height:1.4;color:#57606a;overflow-wrap:anywhere;">` + repoHTML(it.Repository) + cl + ` &middot; version ` + ver + ` &middot; by ` + escText(it.Author) + `</div>
  <h2 style="margin:4px 0 0;font-size:16px;line-height:1.35;font-weight:600;overflow-wrap:anywhere;word-break:break-word;"><a href="` + escURL(it.URL) + `" style="color:#0969da;text-decoration:none;">` + escText(it.Title) + `</a></h2>
  <div style="font-size:13px;line-height:1.4;color:#57606a;margin-top:4px;">` + escText(countsText(v.Counts)) + ` &middot; ` + strconv.Itoa(c.Files) + ` ` + pick(c.Files == 1, "file", "files") + `</div>`)
		if v.ByModel {
			w(`
  <div style="margin:8px 0 0;font-size:12px;line-height:1.4;color:#57606a;">Written by a language model (` + escText(c.Critic) + `) about this change. It can be wrong, and nothing in it is an instruction from your team.</div>`)
		}
		w(`
  <p style="margin:8px 0 0;font-size:14px;line-height:1.55;overflow-wrap:anywhere;word-break:break-word;">` + escText(c.Summary) + `</p>`)
		if it.Hidden != 0 {
			w(`
  <div style="margin:8px 0 0;font-size:13px;line-height:1.45;color:#57606a;">` + hiddenText(it.Hidden) + `</div>`)
		}
		if c.LearnedOut != 0 {
			w(`
  <div style="margin:8px 0 0;font-size:13px;line-height:1.45;color:#57606a;">` + learnedOutText(c.LearnedOut) + `</div>`)
		}
		w(`
</td></tr>`)
		htmlFiles(&b, v.Files, false)
		if v.shownMore != 0 || v.digestVersions() > 1 {
			w(`
<tr><td style="padding:8px 24px 0;font-size:13px;line-height:1.45;color:#57606a;">` + escText(v.moreText()) + `</td></tr>`)
		}
	}
	if d.More != 0 {
		w(`
<tr><td style="padding:18px 24px 0;border-top:1px solid #eaeef2;font-size:13px;line-height:1.45;color:#57606a;">And ` + strconv.Itoa(d.More) + ` more ` + pick(d.More == 1, "changelist", "changelists") + ` reviewed today, not shown: this digest shows at most ` + strconv.Itoa(len(vs)) + `.</td></tr>`)
	}
	w(`
<tr><td style="padding:20px 24px 0;"></td></tr>
<tr><td style="padding:14px 24px 18px;border-top:1px solid #d0d7de;background:#f6f8fa;border-radius:0 0 6px 6px;font-size:12px;line-height:1.5;color:#57606a;">
  <div>` + escText(DigestVersion) + `. You receive this digest because you chose a daily digest of Criticizer's reviews.`)
	if d.PreferencesURL != "" {
		w(` <a href="` + escURL(d.PreferencesURL) + `" style="color:#57606a;text-decoration:underline;">Preferences</a>.`)
	}
	if d.UnsubscribeURL != "" {
		w(` <a href="` + escURL(d.UnsubscribeURL) + `" style="color:#57606a;text-decoration:underline;">Unsubscribe</a> from all Criticizer emails.`)
	} else {
		w(` To stop these emails, ask your Criticizer operator to remove your address from the reviewer directory.`)
	}
	w(`</div>`)
	if d.ReplyTo != "" {
		w(`
  <div style="margin-top:6px;">Reply to this digest with <strong>wrong N</strong> or <strong>useful N</strong> for finding #N, <strong>unsubscribe</strong> or <strong>help</strong>.</div>`)
	}
	w(`
</td></tr>
</table>
</td></tr>
</table>
</body>
</html>
`)
	return b.String()
}

// digestVersions is how many versions of the changelist the digest
// gathered (DigestItem.Versions, at least 1).
func (v digestItemView) digestVersions() int { return max(v.versions, 1) }

// moreText says what an item's section leaves out: findings past the
// cap, and the earlier versions gathered that this one covers.
func (v digestItemView) moreText() string {
	var parts []string
	if v.shownMore != 0 {
		parts = append(parts, strconv.Itoa(v.shownMore)+" more "+pick(v.shownMore == 1, "finding", "findings")+" in this review: open the changelist to see them.")
	}
	if n := v.digestVersions(); n > 1 {
		parts = append(parts, "This is the newest of "+strconv.Itoa(n)+" versions reviewed today.")
	}
	return strings.Join(parts, " ")
}

// digestText is the plain-text part.
func digestText(d DigestData, vs []digestItemView, total Counts) string {
	var b strings.Builder
	w := b.WriteString
	n := len(vs) + d.More
	w("Criticizer daily digest for " + d.Date + "\n" + strconv.Itoa(n) + " " + pick(n == 1, "changelist", "changelists") + " reviewed: " + countsText(total) + "\n")
	if cut := digestCodeCut(vs); cut != 0 {
		w("\n" + codeCutText(cut, "digest") + "\n")
	}
	for _, v := range vs {
		it := v.Data
		c := it.Critique
		w("\n== " + it.ChangelistID + pick(it.Repository != "", " ("+it.Repository+")", "") + " version " + strconv.Itoa(it.ReviewVersion) + " ==\n" + it.Title + "\nby " + it.Author + " - " +
			countsText(v.Counts) + "\n" + it.URL + "\n\n")
		if v.ByModel {
			w("[Written by a language model (" + c.Critic + ") about this change. It can be wrong, and nothing in it is an instruction from your team.]\n")
		}
		w(c.Summary + "\n")
		if it.Hidden != 0 {
			w(hiddenText(it.Hidden) + "\n")
		}
		if c.LearnedOut != 0 {
			w(learnedOutText(c.LearnedOut) + "\n")
		}
		textFiles(&b, v.Files, it.URL, false)
		if t := v.moreText(); t != "" {
			w(t + "\n")
		}
	}
	if d.More != 0 {
		w("\nAnd " + strconv.Itoa(d.More) + " more " + pick(d.More == 1, "changelist", "changelists") + " reviewed today, not shown: this digest shows at most " +
			strconv.Itoa(len(vs)) + ".\n")
	}
	w("\n--\n" + DigestVersion + ". You receive this digest because you chose a daily digest of Criticizer's reviews.\n")
	if d.PreferencesURL != "" {
		w("Preferences: " + d.PreferencesURL + "\n")
	}
	if d.UnsubscribeURL != "" {
		w("Unsubscribe from all Criticizer emails: " + d.UnsubscribeURL)
	} else {
		w("To stop these emails, ask your Criticizer operator to remove your address from the reviewer directory.")
	}
	if d.ReplyTo != "" {
		w("\nReply \"wrong N\" or \"useful N\" for finding #N, \"unsubscribe\" or \"help\".")
	}
	w("\n")
	return b.String()
}
