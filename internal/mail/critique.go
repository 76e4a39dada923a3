package mail

import (
	"strconv"
	"strings"
)

// The critique email, written by hand (write.go says why): critique/v3 for
// a critique with nothing to compare with, critique/v4 for one compared
// with the previous reviewed version (view.Changes). v4 is v3 with a line
// saying what changed and the findings in three sections, new, unchanged
// and resolved; everything else is the same bytes. The templates under
// testdata render both alike (TestWriter_SameBytesAsTheTemplates).

// critiqueHTML is the HTML part.
func critiqueHTML(v view) string {
	var b strings.Builder
	w := b.WriteString
	d := v.Data
	c := d.Critique
	cl, ver := escText(d.ChangelistID), strconv.Itoa(d.ReviewVersion)
	url := escURL(d.URL)
	w(`<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="color-scheme" content="light">
<title>Review of ` + cl + ` version ` + ver + `</title>
</head>
<body style="margin:0;padding:0;background:#f4f5f7;font-family:-apple-system,'Segoe UI',Helvetica,Arial,sans-serif;color:#1f2328;-webkit-text-size-adjust:100%;">
<div style="display:none;max-height:0;overflow:hidden;mso-hide:all;">`)
	switch {
	case v.Changes != nil:
		w(changesText(v) + " since version " + strconv.Itoa(v.Changes.Since))
	case v.Counts.Total != 0:
		w(strconv.Itoa(v.Counts.Total) + " " + pick(v.Counts.Total == 1, "finding", "findings"))
	default:
		w("No issues found")
	}
	w(` on ` + cl + ` version ` + ver + `</div>
<table role="presentation" width="100%" cellpadding="0" cellspacing="0" border="0" style="background:#f4f5f7;">
<tr><td align="center" style="padding:16px 8px;">
<table role="presentation" width="600" cellpadding="0" cellspacing="0" border="0" style="width:100%;max-width:600px;table-layout:fixed;background:#ffffff;border:1px solid #d0d7de;border-radius:6px;border-collapse:separate;">
<tr><td style="padding:20px 24px 16px;border-bottom:1px solid #d0d7de;">
  <div style="font-size:12px;line-height:1.4;color:#57606a;overflow-wrap:anywhere;"><span style="font-weight:600;color:#1f2328;">Criticizer review</span> &middot; ` + repoHTML(d.Repository) + cl + ` &middot; version ` + ver + `</div>
  <h1 style="margin:8px 0 0;font-size:20px;line-height:1.3;font-weight:600;overflow-wrap:anywhere;word-break:break-word;"><a href="` + url + `" style="color:#0969da;text-decoration:none;">` + escText(d.Title) + `</a></h1>
  <div style="font-size:13px;line-height:1.4;color:#57606a;margin-top:6px;">by ` + escText(d.Author) + ` &middot; ` + strconv.Itoa(c.Files) + ` ` + pick(c.Files == 1, "file", "files") + `, <span style="color:#1a7f37;">+` + strconv.Itoa(c.Additions) + `</span> <span style="color:#cf222e;">&minus;` + strconv.Itoa(c.Deletions) + `</span></div>
  <table role="presentation" cellpadding="0" cellspacing="0" border="0" style="margin-top:14px;"><tr><td style="background:#0969da;border-radius:6px;"><a href="` + url + `" style="display:inline-block;padding:7px 14px;font-size:13px;font-weight:600;color:#ffffff;text-decoration:none;">Open the changelist</a></td></tr></table>
</td></tr>
<tr><td style="padding:14px 24px 0;">
  <table role="presentation" cellpadding="0" cellspacing="0" border="0"><tr>`)
	if v.Counts.Total != 0 {
		n := v.Counts
		w(`
    <td style="padding:0 6px 0 0;"><span style="` + pillStyle + pick(n.Errors != 0, "background:#ffebe9;color:#cf222e;", "background:#f6f8fa;color:#8c959f;") + `">` + strconv.Itoa(n.Errors) + ` ` + pick(n.Errors == 1, "error", "errors") + `</span></td>
    <td style="padding:0 6px 0 0;"><span style="` + pillStyle + pick(n.Warnings != 0, "background:#fff8c5;color:#9a6700;", "background:#f6f8fa;color:#8c959f;") + `">` + strconv.Itoa(n.Warnings) + ` ` + pick(n.Warnings == 1, "warning", "warnings") + `</span></td>
    <td style="padding:0;"><span style="` + pillStyle + pick(n.Infos != 0, "background:#ddf4ff;color:#0969da;", "background:#f6f8fa;color:#8c959f;") + `">` + strconv.Itoa(n.Infos) + ` info</span></td>`)
	} else {
		w(`
    <td style="padding:0;"><span style="` + pillStyle + `background:#dafbe1;color:#1a7f37;">No issues found</span></td>`)
	}
	w(`
  </tr></table>
</td></tr>`)
	if ch := v.Changes; ch != nil {
		since := strconv.Itoa(ch.Since)
		w(`
<tr><td style="padding:12px 24px 0;">
  <div style="padding:8px 12px;background:#f6f8fa;border:1px solid #d0d7de;border-radius:6px;font-size:13px;line-height:1.45;">Since version ` + since + `: <strong>` + strconv.Itoa(v.NewCount) + ` new</strong>, ` + strconv.Itoa(v.UnchangedCount) + ` unchanged, <strong>` + strconv.Itoa(ch.ResolvedCount) + ` resolved</strong>. ` + filesText(v) + `</div>
</td></tr>`)
	}
	w(`
<tr><td style="padding:14px 24px 4px;font-size:14px;line-height:1.55;overflow-wrap:anywhere;word-break:break-word;">`)
	if v.ByModel {
		w(`
  <div style="margin:0 0 8px;font-size:12px;line-height:1.4;color:#57606a;">Written by a language model (` + escText(c.Critic) + `) about this change. It can be wrong, and nothing in it is an instruction from your team.</div>`)
	}
	w(`
  <p style="margin:0;">` + escText(c.Summary) + `</p>
</td></tr>`)
	if c.Truncated {
		w(`
<tr><td style="padding:10px 24px 4px;">
  <div style="padding:8px 12px;background:#fff8c5;border:1px solid #d4a72c;border-radius:6px;font-size:13px;line-height:1.45;color:#3b2300;">This review is partial (` + strconv.Itoa(len(c.Findings)) + ` findings shown): the summary says what was left out.</div>
</td></tr>`)
	}
	if d.Hidden != 0 {
		w(`
<tr><td style="padding:10px 24px 4px;">
  <div style="padding:8px 12px;background:#f6f8fa;border:1px solid #d0d7de;border-radius:6px;font-size:13px;line-height:1.45;color:#57606a;">` + hiddenText(d.Hidden) + `</div>
</td></tr>`)
	}
	if d.LeftOut != 0 {
		w(`
<tr><td style="padding:10px 24px 4px;">
  <div style="padding:8px 12px;background:#f6f8fa;border:1px solid #d0d7de;border-radius:6px;font-size:13px;line-height:1.45;color:#57606a;">` + escText(leftOutText(d.LeftOut, d.LeftOutBelow)) + `</div>
</td></tr>`)
	}
	if c.LearnedOut != 0 {
		w(`
<tr><td style="padding:10px 24px 4px;">
  <div style="padding:8px 12px;background:#f6f8fa;border:1px solid #d0d7de;border-radius:6px;font-size:13px;line-height:1.45;color:#57606a;">` + learnedOutText(c.LearnedOut) + `</div>
</td></tr>`)
	}
	if v.CodeCut != 0 {
		w(`
<tr><td style="padding:10px 24px 4px;">
  <div style="padding:8px 12px;background:#f6f8fa;border:1px solid #d0d7de;border-radius:6px;font-size:13px;line-height:1.45;color:#57606a;">` + codeCutText(v.CodeCut, "email") + `</div>
</td></tr>`)
	}
	if ch := v.Changes; ch == nil {
		htmlFiles(&b, v.Files, false)
	} else {
		since := strconv.Itoa(ch.Since)
		htmlHeading(&b, "New since version "+since, v.NewCount)
		if v.NewCount == 0 {
			w(`
<tr><td style="padding:8px 24px 0;font-size:13px;line-height:1.45;color:#57606a;">Nothing new since version ` + since + `.</td></tr>`)
		}
		htmlFiles(&b, v.New, false)
		if v.UnchangedCount != 0 {
			htmlHeading(&b, "Unchanged since version "+since, v.UnchangedCount)
			htmlFiles(&b, v.Unchanged, false)
		}
		if ch.ResolvedCount != 0 {
			htmlHeading(&b, "Resolved since version "+since, ch.ResolvedCount)
			htmlFiles(&b, v.Resolved, true)
			if v.ResolvedMore != 0 {
				w(`
<tr><td style="padding:8px 24px 0;font-size:13px;line-height:1.45;color:#57606a;">And ` + strconv.Itoa(v.ResolvedMore) + ` more resolved ` + pick(v.ResolvedMore == 1, "finding", "findings") + `.</td></tr>`)
			}
		}
	}
	w(`
<tr><td style="padding:20px 24px 0;"></td></tr>
<tr><td style="padding:14px 24px 18px;border-top:1px solid #d0d7de;background:#f6f8fa;border-radius:0 0 6px 6px;font-size:12px;line-height:1.5;color:#57606a;">
  <div>Reviewed by ` + escText(c.Critic) + ` &middot; ` + escText(v.TemplateVersion) + `. <a href="` + url + `" style="color:#0969da;">Open the changelist</a>.</div>
  <div style="margin-top:6px;">You receive this email because ` + why(d.Reason) + ` ` + cl + `.`)
	if d.UnsubscribeURL != "" {
		w(` <a href="` + escURL(d.UnsubscribeURL) + `" style="color:#57606a;text-decoration:underline;">Unsubscribe</a> from Criticizer reviews.`)
	} else {
		w(` To stop these emails, ask your Criticizer operator to remove your address from the reviewer directory.`)
	}
	if d.PreferencesURL != "" {
		w(` <a href="` + escURL(d.PreferencesURL) + `" style="color:#57606a;text-decoration:underline;">Email preferences</a>: delivery, minimum severity, muted repositories.`)
	}
	w(`</div>`)
	if d.ReplyTo != "" {
		w(`
  <div style="margin-top:6px;">Reply to this email with <strong>wrong N</strong> or <strong>useful N</strong> for finding #N, <strong>mute</strong> for no more email about ` + cl + `, <strong>unsubscribe</strong> or <strong>help</strong>.</div>`)
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

// repoHTML is a generic changelist's repository before its id in the
// header line ("acme/billing · "), escaped; "" without one (a code
// host's is in its changelist id).
func repoHTML(repo string) string {
	if repo == "" {
		return ""
	}
	return escText(repo) + ` &middot; `
}

// htmlHeading opens a section of a rerun's findings.
func htmlHeading(b *strings.Builder, title string, n int) {
	b.WriteString(`
<tr><td style="padding:20px 24px 0;font-size:15px;line-height:1.4;font-weight:600;">` + escText(title) + ` <span style="font-weight:400;color:#57606a;">(` + strconv.Itoa(n) + `)</span></td></tr>`)
}

// htmlFiles writes findings grouped by file. Resolved findings are those
// of an earlier version: no link (their lines are not this version's), the
// line they had, muted.
func htmlFiles(b *strings.Builder, files []FileFindings, resolved bool) {
	w := b.WriteString
	for _, f := range files {
		w(`
<tr><td style="padding:14px 24px 0;">
  <div style="padding:6px 10px;background:#f6f8fa;border:1px solid #d0d7de;border-radius:6px 6px 0 0;font-family:SFMono-Regular,Consolas,'Liberation Mono',Menlo,monospace;font-size:12px;line-height:1.4;font-weight:600;overflow-wrap:anywhere;word-break:break-all;">`)
		if resolved {
			w(`<span style="color:#57606a;">` + escText(f.File) + `</span>`)
		} else {
			w(`<a href="` + escURL(f.URL) + `" style="color:#1f2328;text-decoration:none;">` + escText(f.File) + `</a>`)
		}
		w(`</div>
  <table role="presentation" width="100%" cellpadding="0" cellspacing="0" border="0" style="table-layout:fixed;border:1px solid #d0d7de;border-top:0;border-radius:0 0 6px 6px;border-collapse:separate;">`)
		for i, fv := range f.Findings {
			sep := pick(i != 0, "border-top:1px solid #eaeef2;", "")
			sev := string(fv.Severity)
			color := "background:#ddf4ff;color:#0969da;"
			switch {
			case resolved:
				color = "background:#f6f8fa;color:#57606a;"
			case sev == "error":
				color = "background:#ffebe9;color:#cf222e;"
			case sev == "warning":
				color = "background:#fff8c5;color:#9a6700;"
			}
			w(`
  <tr>
    <td valign="top" width="78" style="width:78px;padding:8px 0 8px 10px;` + sep + `">`)
			if fv.Number != 0 {
				w(`<span style="display:block;margin:0 0 2px;font-size:11px;line-height:1.4;font-weight:600;color:#57606a;">#` + strconv.Itoa(fv.Number) + `</span>`)
			}
			w(`<span style="display:inline-block;padding:1px 7px;border-radius:10px;font-size:11px;line-height:1.6;font-weight:600;` + color + `">` + escText(sev) + `</span></td>
    <td valign="top" style="padding:8px 10px;font-size:13px;line-height:1.5;overflow-wrap:anywhere;word-break:break-word;` + sep + pick(resolved, "color:#57606a;", "") + `">`)
			switch {
			case fv.Line == 0:
			case resolved:
				w(`<span style="font-family:SFMono-Regular,Consolas,'Liberation Mono',Menlo,monospace;font-size:12px;">was line ` + strconv.Itoa(fv.Line) + `</span><span style="color:#8c959f;"> &middot; </span>`)
			default:
				w(`<a href="` + escURL(fv.URL) + `" style="color:#0969da;text-decoration:none;font-family:SFMono-Regular,Consolas,'Liberation Mono',Menlo,monospace;font-size:12px;">line ` + strconv.Itoa(fv.Line) + `</a><span style="color:#8c959f;"> &middot; </span>`)
			}
			w(escText(fv.Message) + ` <span style="color:#8c959f;font-size:11px;white-space:nowrap;">` + escText(fv.Rule) + `</span>`)
			htmlCode(b, fv.Code)
			if fv.UsefulURL != "" {
				w(`<div style="margin-top:2px;font-size:11px;line-height:1.4;color:#8c959f;">Was this useful? <a href="` + escURL(fv.UsefulURL) + `" style="color:#57606a;">Useful</a> &middot; <a href="` + escURL(fv.WrongURL) + `" style="color:#57606a;">Wrong</a></div>`)
			}
			w(`</td>
  </tr>`)
		}
		w(`
  </table>
</td></tr>`)
	}
}

// htmlCode writes a finding's code (R-MAIL-5): monospace, a line each,
// added lines green, removed ones red, the flagged line marked by a bar
// on its left and bold; the text escaped, never a link. The lines follow
// each other with no white space between them: the container keeps
// white space (pre-wrap, for indentation), so a newline there would be a
// blank line.
func htmlCode(b *strings.Builder, code []CodeLine) {
	if len(code) == 0 {
		return
	}
	w := b.WriteString
	w(`<div style="margin:6px 0 2px;border:1px solid #d0d7de;border-radius:4px;font-family:SFMono-Regular,Consolas,'Liberation Mono',Menlo,monospace;font-size:12px;line-height:1.45;color:#1f2328;">`)
	for _, l := range code {
		w(`<div style="white-space:pre-wrap;overflow-wrap:anywhere;word-break:break-all;`)
		if l.Flagged {
			w(`padding:0 6px 0 3px;border-left:3px solid #0969da;font-weight:600;`)
		} else {
			w(`padding:0 6px;`)
		}
		switch l.Kind {
		case "added":
			w(`background:#e6ffec;`)
		case "removed":
			w(`background:#ffebe9;`)
		}
		w(`">` + escText(l.Marker+l.Text) + `</div>`)
	}
	w(`</div>`)
}

// codeCutText says how many findings' code a size bound left out
// (R-MAIL-5). It links nowhere and holds no text of the change's.
func codeCutText(n int, what string) string {
	if n == 1 {
		return "The code at 1 finding is left out to keep this " + what + " short; open the changelist to see it."
	}
	return "The code at " + strconv.Itoa(n) + " findings is left out to keep this " + what + " short; open the changelist to see it."
}

// changesText is "2 new, 18 unchanged, 2 resolved".
func changesText(v view) string {
	return strconv.Itoa(v.NewCount) + " new, " + strconv.Itoa(v.UnchangedCount) + " unchanged, " + strconv.Itoa(v.Changes.ResolvedCount) + " resolved"
}

// filesText says which files were reviewed again and which kept their
// findings.
func filesText(v view) string {
	ch := v.Changes
	switch {
	case ch.Carried == 0:
		return "Every file was reviewed again."
	case ch.Reviewed == 0:
		return "No file changed; the findings are carried over."
	default:
		return strconv.Itoa(ch.Reviewed) + " of " + strconv.Itoa(ch.Reviewed+ch.Carried) + " files changed and were reviewed again; the findings on the other " +
			strconv.Itoa(ch.Carried) + " are carried over."
	}
}

// critiqueText is the plain-text part.
func critiqueText(v view) string {
	var b strings.Builder
	w := b.WriteString
	d := v.Data
	c := d.Critique
	n := v.Counts
	w("Criticizer review: " + d.ChangelistID + pick(d.Repository != "", " ("+d.Repository+")", "") + " version " + strconv.Itoa(d.ReviewVersion) + "\n" + d.Title + "\nby " + d.Author + " - " +
		strconv.Itoa(c.Files) + " " + pick(c.Files == 1, "file", "files") + ", +" + strconv.Itoa(c.Additions) + " -" + strconv.Itoa(c.Deletions) + "\n" + d.URL + "\n\n")
	if n.Total != 0 {
		w("Findings: " + strconv.Itoa(n.Errors) + " " + pick(n.Errors == 1, "error", "errors") + ", " + strconv.Itoa(n.Warnings) + " " +
			pick(n.Warnings == 1, "warning", "warnings") + ", " + strconv.Itoa(n.Infos) + " info")
	} else {
		w("No issues found.")
	}
	if ch := v.Changes; ch != nil {
		w("\nSince version " + strconv.Itoa(ch.Since) + ": " + changesText(v) + ". " + filesText(v))
	}
	w("\n\n")
	if v.ByModel {
		w("[Written by a language model (" + c.Critic + ") about this change. It can be wrong, and nothing in it is an instruction from your team.]\n")
	}
	w(c.Summary)
	if c.Truncated {
		w("\n\nThis review is partial (" + strconv.Itoa(len(c.Findings)) + " findings shown): the summary says what was left out.")
	}
	if d.Hidden != 0 {
		w("\n\n" + hiddenText(d.Hidden))
	}
	if d.LeftOut != 0 {
		w("\n\n" + leftOutText(d.LeftOut, d.LeftOutBelow))
	}
	if c.LearnedOut != 0 {
		w("\n\n" + learnedOutText(c.LearnedOut))
	}
	if v.CodeCut != 0 {
		w("\n\n" + codeCutText(v.CodeCut, "email"))
	}
	w("\n")
	if ch := v.Changes; ch == nil {
		textFiles(&b, v.Files, d.URL, false)
	} else {
		since := strconv.Itoa(ch.Since)
		w("\n== New since version " + since + " (" + strconv.Itoa(v.NewCount) + ") ==\n")
		if v.NewCount == 0 {
			w("Nothing new since version " + since + ".\n")
		}
		textFiles(&b, v.New, d.URL, false)
		if v.UnchangedCount != 0 {
			w("\n== Unchanged since version " + since + " (" + strconv.Itoa(v.UnchangedCount) + ") ==\n")
			textFiles(&b, v.Unchanged, d.URL, false)
		}
		if ch.ResolvedCount != 0 {
			w("\n== Resolved since version " + since + " (" + strconv.Itoa(ch.ResolvedCount) + ") ==\n")
			textFiles(&b, v.Resolved, d.URL, true)
			if v.ResolvedMore != 0 {
				w("And " + strconv.Itoa(v.ResolvedMore) + " more resolved " + pick(v.ResolvedMore == 1, "finding", "findings") + ".\n")
			}
		}
	}
	w("\n--\nReviewed by " + c.Critic + " (" + v.TemplateVersion + ").\nYou receive this email because " + why(d.Reason) + " " + d.ChangelistID + ".\n")
	if d.UnsubscribeURL != "" {
		w("Unsubscribe: " + d.UnsubscribeURL)
	} else {
		w("To stop these emails, ask your Criticizer operator to remove your address from the reviewer directory.")
	}
	if d.PreferencesURL != "" {
		w("\nEmail preferences (delivery, minimum severity, muted repositories): " + d.PreferencesURL)
	}
	if d.ReplyTo != "" {
		w("\nReply \"wrong N\" or \"useful N\" for finding #N, \"mute\" for no more email about " + d.ChangelistID + ", \"unsubscribe\" or \"help\".")
	}
	w("\n")
	return b.String()
}

// textFiles writes findings grouped by file, each file after a blank
// line, with its link when it has its own; resolved findings without.
func textFiles(b *strings.Builder, files []FileFindings, changeURL string, resolved bool) {
	w := b.WriteString
	for _, f := range files {
		w("\n" + f.File)
		if !resolved && f.URL != changeURL {
			w("\n  " + f.URL)
		}
		for _, fv := range f.Findings {
			w("\n  ")
			if fv.Number != 0 {
				w("#" + strconv.Itoa(fv.Number) + " ")
			}
			w("[" + string(fv.Severity) + "]")
			if fv.Line != 0 {
				w(pick(resolved, " was line ", " line ") + strconv.Itoa(fv.Line) + ":")
			}
			w(" " + fv.Message + " (" + fv.Rule + ")")
			for _, l := range fv.Code {
				w("\n    " + pick(l.Flagged, "> ", "  ") + l.Marker + l.Text)
			}
			if fv.UsefulURL != "" {
				w("\n    Useful: " + fv.UsefulURL + "\n    Wrong: " + fv.WrongURL)
			}
		}
		w("\n")
	}
}

// hiddenText says how many findings the reader marked wrong are left out
// (R-VOTE-3), and how one comes back: its Useful link in the email that
// showed it. It links nowhere itself; it holds no text of a model's.
func hiddenText(n int) string {
	if n == 1 {
		return "1 finding you marked wrong is hidden; its Useful link in an earlier email shows it again."
	}
	return strconv.Itoa(n) + " findings you marked wrong are hidden; the Useful link under one in an earlier email shows it again."
}

// leftOutText says how many findings the reader's own minimum severity
// left out (R-PREF-3), and where that is set. It links nowhere itself.
func leftOutText(n int, below string) string {
	if n == 1 {
		return "1 finding below " + below + " is left out by your email preferences."
	}
	return strconv.Itoa(n) + " findings below " + below + " are left out by your email preferences."
}

// learnedOutText says how many findings the team's accepted learnings
// left out of the version's review (R-LEARN-2): rules the repository's
// readers marked wrong and an operator accepted. It links nowhere and
// holds no text of a model's.
func learnedOutText(n int) string {
	if n == 1 {
		return "1 finding is left out by your team's learnings (a rule its readers marked wrong)."
	}
	return strconv.Itoa(n) + " findings are left out by your team's learnings (rules its readers marked wrong)."
}
