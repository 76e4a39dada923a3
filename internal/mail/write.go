package mail

import (
	"fmt"
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
  <p style="margin:12px 0 0;font-size:14px;line-height:1.55;color:#57606a;">Nothing else is needed; you can close this page. To receive reviews again, open the &ldquo;Email preferences&rdquo; link at the foot of any Criticizer email.</p>`)
}
