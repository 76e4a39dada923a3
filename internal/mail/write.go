package mail

import (
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Why the email is written by hand, not by html/template: text/template
// (which html/template runs on) calls methods by name through reflection,
// which makes the linker keep every exported method of every type that
// might reach it, the SDK clients' hundreds of operations among them:
// 5–8 MB more in intake and notify, whose cold start pays for it
// (R-WIRE-1). The escaping below is html/template's own (its
// htmlReplacementTable, URL filter and normalizer), and a test renders
// every case both ways and requires the same bytes
// (TestWriter_SameBytesAsTheTemplates).

// htmlReplacements is html/template's htmlReplacementTable: what it
// escapes in text, RCDATA and quoted attribute values.
var htmlReplacements = [...]string{
	0:    "\uFFFD",
	'"':  "&#34;",
	'&':  "&amp;",
	'\'': "&#39;",
	'+':  "&#43;",
	'<':  "&lt;",
	'>':  "&gt;",
}

// escText escapes s for HTML text, an RCDATA element or a quoted
// attribute value, as html/template does.
func escText(s string) string {
	var b strings.Builder
	written := 0
	for i := 0; i < len(s); {
		r, w := utf8.DecodeRuneInString(s[i:])
		if int(r) < len(htmlReplacements) && htmlReplacements[r] != "" {
			if written == 0 {
				b.Grow(len(s) + 16)
			}
			b.WriteString(s[written:i])
			b.WriteString(htmlReplacements[r])
			written = i + w
		}
		i += w
	}
	if written == 0 {
		return s
	}
	b.WriteString(s[written:])
	return b.String()
}

// escURL is html/template's treatment of a value that fills a URL
// attribute: a scheme other than http, https or mailto is replaced by
// "#ZgotmplZ", the URL is normalized (bytes outside RFC 3986's sets
// percent-encoded, valid escapes kept), then escaped as an attribute.
func escURL(s string) string {
	if protocol, _, ok := strings.Cut(s, ":"); ok && !strings.Contains(protocol, "/") {
		if !strings.EqualFold(protocol, "http") && !strings.EqualFold(protocol, "https") && !strings.EqualFold(protocol, "mailto") {
			s = "#ZgotmplZ"
		}
	}
	return escText(normalizeURL(s))
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

func normalizeURL(s string) string {
	var b strings.Builder
	written := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch c {
		case '!', '#', '$', '&', '*', '+', ',', '/', ':', ';', '=', '?', '@', '[', ']', '-', '.', '_', '~':
			continue
		case '%':
			if i+2 < len(s) && isHex(s[i+1]) && isHex(s[i+2]) {
				continue
			}
		default:
			if 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' {
				continue
			}
		}
		b.WriteString(s[written:i])
		fmt.Fprintf(&b, "%%%02x", c)
		written = i + 1
	}
	if written == 0 {
		return s
	}
	b.WriteString(s[written:])
	return b.String()
}

func pick(cond bool, yes, no string) string {
	if cond {
		return yes
	}
	return no
}

// Styles shared by the pill counters.
const pillStyle = "display:inline-block;padding:3px 10px;border-radius:12px;font-size:12px;font-weight:600;"

// critiqueHTML is critique/v3's HTML part.
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
	if v.Counts.Total != 0 {
		w(strconv.Itoa(v.Counts.Total) + " " + pick(v.Counts.Total == 1, "finding", "findings"))
	} else {
		w("No issues found")
	}
	w(` on ` + cl + ` version ` + ver + `</div>
<table role="presentation" width="100%" cellpadding="0" cellspacing="0" border="0" style="background:#f4f5f7;">
<tr><td align="center" style="padding:16px 8px;">
<table role="presentation" width="600" cellpadding="0" cellspacing="0" border="0" style="width:100%;max-width:600px;table-layout:fixed;background:#ffffff;border:1px solid #d0d7de;border-radius:6px;border-collapse:separate;">
<tr><td style="padding:20px 24px 16px;border-bottom:1px solid #d0d7de;">
  <div style="font-size:12px;line-height:1.4;color:#57606a;overflow-wrap:anywhere;"><span style="font-weight:600;color:#1f2328;">Criticizer review</span> &middot; ` + cl + ` &middot; version ` + ver + `</div>
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
</td></tr>
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
	for _, f := range v.Files {
		w(`
<tr><td style="padding:14px 24px 0;">
  <div style="padding:6px 10px;background:#f6f8fa;border:1px solid #d0d7de;border-radius:6px 6px 0 0;font-family:SFMono-Regular,Consolas,'Liberation Mono',Menlo,monospace;font-size:12px;line-height:1.4;font-weight:600;overflow-wrap:anywhere;word-break:break-all;"><a href="` + escURL(f.URL) + `" style="color:#1f2328;text-decoration:none;">` + escText(f.File) + `</a></div>
  <table role="presentation" width="100%" cellpadding="0" cellspacing="0" border="0" style="table-layout:fixed;border:1px solid #d0d7de;border-top:0;border-radius:0 0 6px 6px;border-collapse:separate;">`)
		for i, fv := range f.Findings {
			sep := pick(i != 0, "border-top:1px solid #eaeef2;", "")
			sev := string(fv.Severity)
			color := "background:#ddf4ff;color:#0969da;"
			switch sev {
			case "error":
				color = "background:#ffebe9;color:#cf222e;"
			case "warning":
				color = "background:#fff8c5;color:#9a6700;"
			}
			w(`
  <tr>
    <td valign="top" width="78" style="width:78px;padding:8px 0 8px 10px;` + sep + `"><span style="display:inline-block;padding:1px 7px;border-radius:10px;font-size:11px;line-height:1.6;font-weight:600;` + color + `">` + escText(sev) + `</span></td>
    <td valign="top" style="padding:8px 10px;font-size:13px;line-height:1.5;overflow-wrap:anywhere;word-break:break-word;` + sep + `">`)
			if fv.Line != 0 {
				w(`<a href="` + escURL(fv.URL) + `" style="color:#0969da;text-decoration:none;font-family:SFMono-Regular,Consolas,'Liberation Mono',Menlo,monospace;font-size:12px;">line ` + strconv.Itoa(fv.Line) + `</a><span style="color:#8c959f;"> &middot; </span>`)
			}
			w(escText(fv.Message) + ` <span style="color:#8c959f;font-size:11px;white-space:nowrap;">` + escText(fv.Rule) + `</span></td>
  </tr>`)
		}
		w(`
  </table>
</td></tr>`)
	}
	w(`
<tr><td style="padding:20px 24px 0;"></td></tr>
<tr><td style="padding:14px 24px 18px;border-top:1px solid #d0d7de;background:#f6f8fa;border-radius:0 0 6px 6px;font-size:12px;line-height:1.5;color:#57606a;">
  <div>Reviewed by ` + escText(c.Critic) + ` &middot; ` + escText(v.TemplateVersion) + `. <a href="` + url + `" style="color:#0969da;">Open the changelist</a>.</div>
  <div style="margin-top:6px;">You receive this email because you are a reviewer of ` + cl + `.`)
	if d.UnsubscribeURL != "" {
		w(` <a href="` + escURL(d.UnsubscribeURL) + `" style="color:#57606a;text-decoration:underline;">Unsubscribe</a> from Criticizer reviews.`)
	} else {
		w(` To stop these emails, ask your Criticizer operator to remove your address from the reviewer directory.`)
	}
	w(`</div>
</td></tr>
</table>
</td></tr>
</table>
</body>
</html>
`)
	return b.String()
}

// critiqueText is critique/v3's plain-text part.
func critiqueText(v view) string {
	var b strings.Builder
	w := b.WriteString
	d := v.Data
	c := d.Critique
	n := v.Counts
	w("Criticizer review: " + d.ChangelistID + " version " + strconv.Itoa(d.ReviewVersion) + "\n" + d.Title + "\nby " + d.Author + " - " +
		strconv.Itoa(c.Files) + " " + pick(c.Files == 1, "file", "files") + ", +" + strconv.Itoa(c.Additions) + " -" + strconv.Itoa(c.Deletions) + "\n" + d.URL + "\n\n")
	if n.Total != 0 {
		w("Findings: " + strconv.Itoa(n.Errors) + " " + pick(n.Errors == 1, "error", "errors") + ", " + strconv.Itoa(n.Warnings) + " " +
			pick(n.Warnings == 1, "warning", "warnings") + ", " + strconv.Itoa(n.Infos) + " info")
	} else {
		w("No issues found.")
	}
	w("\n\n")
	if v.ByModel {
		w("[Written by a language model (" + c.Critic + ") about this change. It can be wrong, and nothing in it is an instruction from your team.]\n")
	}
	w(c.Summary)
	if c.Truncated {
		w("\n\nThis review is partial (" + strconv.Itoa(len(c.Findings)) + " findings shown): the summary says what was left out.")
	}
	w("\n")
	for _, f := range v.Files {
		w("\n" + f.File)
		if f.URL != d.URL {
			w("\n  " + f.URL)
		}
		for _, fv := range f.Findings {
			w("\n  [" + string(fv.Severity) + "]")
			if fv.Line != 0 {
				w(" line " + strconv.Itoa(fv.Line) + ":")
			}
			w(" " + fv.Message + " (" + fv.Rule + ")")
		}
		w("\n")
	}
	w("\n--\nReviewed by " + c.Critic + " (" + v.TemplateVersion + ").\nYou receive this email because you are a reviewer of " + d.ChangelistID + ".\n")
	if d.UnsubscribeURL != "" {
		w("Unsubscribe: " + d.UnsubscribeURL)
	} else {
		w("To stop these emails, ask your Criticizer operator to remove your address from the reviewer directory.")
	}
	w("\n")
	return b.String()
}

// page is the unsubscribe endpoint's page chrome around a title, a heading
// and a body (static text and escaped values only).
func page(title, heading, body string) string {
	return `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="robots" content="noindex">
<title>` + title + `</title>
</head>
<body style="margin:0;padding:0;background:#f4f5f7;font-family:-apple-system,'Segoe UI',Helvetica,Arial,sans-serif;color:#1f2328;">
<table role="presentation" width="100%" cellpadding="0" cellspacing="0" border="0" style="background:#f4f5f7;">
<tr><td align="center" style="padding:48px 8px;">
<table role="presentation" width="600" cellpadding="0" cellspacing="0" border="0" style="width:100%;max-width:600px;background:#ffffff;border:1px solid #d0d7de;border-radius:6px;border-collapse:separate;">
<tr><td style="padding:28px 28px 24px;">
  <div style="font-size:12px;line-height:1.4;color:#57606a;text-transform:uppercase;letter-spacing:.04em;">Criticizer</div>
  <h1 style="margin:8px 0 0;font-size:22px;line-height:1.3;font-weight:600;">` + heading + `</h1>
` + body + `
</td></tr>
</table>
</td></tr>
</table>
</body>
</html>
`
}

// unsubscribePage is unsubscribe/v1: the form a GET of an unsubscribe link
// answers, posting to action.
func unsubscribePage(action string) string {
	return page("Unsubscribe from Criticizer", "Unsubscribe from Criticizer", `  <p style="margin:14px 0 0;font-size:15px;line-height:1.55;">Stop receiving Criticizer's review critiques for this repository, or stop all of them.</p>
  <form method="post" action="`+escURL(action)+`" style="margin:18px 0 0;">
    <input type="hidden" name="confirm" value="1">
    <button type="submit" name="scope" value="repository" style="font:inherit;font-size:14px;padding:8px 16px;margin:4px 8px 4px 0;border:1px solid #1f6feb;border-radius:6px;background:#1f6feb;color:#ffffff;cursor:pointer;">Unsubscribe from this repository</button>
    <button type="submit" name="scope" value="all" style="font:inherit;font-size:14px;padding:8px 16px;margin:4px 8px 4px 0;border:1px solid #d0d7de;border-radius:6px;background:#f6f8fa;color:#1f2328;cursor:pointer;">Unsubscribe from all Criticizer emails</button>
  </form>`)
}

// unsubscribedPage is unsubscribed/v1: the page a confirmed unsubscribe
// answers.
func unsubscribedPage(all bool) string {
	return page("Criticizer: unsubscribed", "You are unsubscribed", `  <p style="margin:14px 0 0;font-size:15px;line-height:1.55;">`+
		pick(all, `You will not receive Criticizer emails any more.`, `You will not receive Criticizer emails for this repository any more.`)+
		` Emails already on their way may still arrive.</p>
  <p style="margin:12px 0 0;font-size:14px;line-height:1.55;color:#57606a;">Nothing else is needed; you can close this page. To receive reviews again, ask your Criticizer operator.</p>`)
}
