package codehost

import (
	"fmt"
	"net/url"
	"strings"
	"unicode"

	"github.com/criticizer/criticizer/internal/channel"
	"github.com/criticizer/criticizer/internal/critic"
)

// Bounds of what a post carries (R-CHANNEL-13). GitHub refuses a check
// run's summary over 65535 characters and an annotation's message over
// 64 KiB, title over 255; a commit status's description is 140.
const (
	// MaxSummaryBytes bounds a check run's summary, its tail included.
	MaxSummaryBytes = 65000
	// MaxFindingRunes bounds one finding's message in a summary or a
	// review message; MaxAnnotationRunes in an annotation.
	MaxFindingRunes    = 1000
	MaxAnnotationRunes = 4000
	// MaxModelSummaryRunes bounds the critique's overall summary.
	MaxModelSummaryRunes = 2000
	// MaxDescriptionBytes is a commit status's description limit.
	MaxDescriptionBytes = 140
	// MaxGerritMessageBytes bounds a Gerrit review message (Gerrit's
	// change.commentSizeLimit defaults to 16 KiB).
	MaxGerritMessageBytes = 15 << 10
)

// zwsp is the zero-width space put after what would start a link or a
// mention: invisible, and it breaks "https://", "www.", "@name",
// "#123".
const zwsp = "\u200b"

// oneLine collapses every run of white space and control characters to
// one space, drops format characters (bidirectional overrides, zero-width
// joiners: text that reads other than it is) and cuts the result to n
// runes, reporting whether it cut.
func oneLine(s string, n int) (string, bool) {
	var b strings.Builder
	runes, space, cut := 0, false, false
	for _, r := range s {
		switch {
		case isFormat(r):
			continue
		case unicode.IsSpace(r) || unicode.IsControl(r):
			space = b.Len() > 0
			continue
		}
		if runes >= n {
			cut = true
			break
		}
		if space {
			b.WriteByte(' ')
			runes++
			space = false
		}
		b.WriteRune(r)
		runes++
	}
	out := b.String()
	if cut {
		out += "…"
	}
	return out, cut
}

// defang breaks what a renderer would turn into a link or a mention in
// plain text: a zero-width space after every "@", "#" and ":", and
// between "www" and its ".". The text reads the same.
func defang(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == '.' && i >= 3 && strings.EqualFold(s[i-3:i], "www") {
			b.WriteString(zwsp)
		}
		b.WriteByte(c)
		if c == '@' || c == '#' || c == ':' {
			b.WriteString(zwsp)
		}
	}
	return b.String()
}

// Markdown renders untrusted text (a model's message, a file name) as
// one line of GitHub Markdown that is only text (R-CHANNEL-12): white
// space collapsed, at most n runes, every ASCII punctuation character
// backslash-escaped (no link, image, emphasis, code, heading, table or
// HTML tag or entity can start), and defanged (no autolink, mention or
// issue reference). cut says whether it was shortened.
func Markdown(s string, n int) (out string, cut bool) {
	s, cut = oneLine(s, n)
	var b strings.Builder
	for _, r := range s {
		if r < 0x80 && unicode.IsPunct(r) || r < 0x80 && unicode.IsSymbol(r) {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return defang(b.String()), cut
}

// Plain renders untrusted text for a host that shows plain text but
// links URLs and mentions (a Gerrit message, an annotation): one line,
// at most n runes, defanged.
func Plain(s string, n int) (string, bool) {
	s, cut := oneLine(s, n)
	return defang(s), cut
}

// jobLink is the Markdown link to the job's status page: Criticizer's
// own URL, kept only when it is http(s).
func jobLink(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return ""
	}
	return "[Job status](<" + strings.NewReplacer("<", "%3C", ">", "%3E", " ", "%20").Replace(u.String()) + ">)"
}

// jobURL is raw when it is an http(s) URL (a status's target); empty
// otherwise.
func jobURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return ""
	}
	return u.String()
}

// where is a finding's place for a list: "path line 12", or "path" for
// a whole-file finding, escaped by esc.
func where(f critic.Finding, esc func(string, int) (string, bool)) string {
	path, _ := esc(f.File, 300)
	if f.Line > 0 {
		return fmt.Sprintf("%s line %d", path, f.Line)
	}
	return path
}

// Summary is a check run's Markdown summary of p, within
// MaxSummaryBytes, and how much of it was cut (see summary).
func Summary(p channel.Post) (string, int) { return summary(p, MaxSummaryBytes) }

// summary is a check run's Markdown summary of p, at most max bytes:
// the outcome and counts, the model's overall summary, the findings'
// list (as many as fit; the rest counted), and the job's status link.
// cut counts the findings left out of the list and the texts shortened.
func summary(p channel.Post, max int) (s string, cut int) {
	var head, tail strings.Builder
	switch {
	case p.Phase == channel.Started:
		fmt.Fprintf(&head, "Criticizer is reviewing version %d of this change.\n", p.Version)
	case p.Outcome == channel.Superseded:
		head.WriteString("Criticizer did not review this version: a newer version of the change was reviewed first. This says nothing about the change.\n")
	case p.Outcome == channel.Skipped:
		head.WriteString("Criticizer did not review this version: it was skipped. This says nothing about the change.\n")
	case p.Outcome == channel.NotReviewed:
		head.WriteString("Criticizer could not review this version. This says nothing about the change.\n")
	default:
		fmt.Fprintf(&head, "Criticizer reviewed version %d of this change: **%s**.\n", p.Version, countsText(p.Counts))
	}
	if p.Reason != "" && p.Phase == channel.Finished && p.Outcome != channel.Reviewed {
		r, c := Markdown(p.Reason, MaxFindingRunes)
		fmt.Fprintf(&head, "\nReason: %s\n", r)
		cut += b2i(c)
	}
	if p.Phase == channel.Finished && p.Outcome == channel.Reviewed && strings.TrimSpace(p.Summary) != "" {
		ms, c := Markdown(p.Summary, MaxModelSummaryRunes)
		fmt.Fprintf(&head, "\n%s\n", ms)
		cut += b2i(c)
	}
	if l := jobLink(p.JobURL); l != "" {
		fmt.Fprintf(&tail, "\n%s\n", l)
	}
	var list strings.Builder
	if p.Phase == channel.Finished && p.Outcome == channel.Reviewed && len(p.Findings) > 0 {
		list.WriteString("\n")
		for i, f := range p.Findings {
			m, c := Markdown(f.Message, MaxFindingRunes)
			rule, _ := Markdown(f.Rule, 100)
			line := fmt.Sprintf("- **%s** %s: %s", severityWord(f.Severity), where(f, Markdown), m)
			if rule != "" {
				line += " (" + rule + ")"
			}
			line += "\n"
			// 100 bytes are kept for the line that counts what is left out.
			if head.Len()+list.Len()+len(line)+100+tail.Len() > max {
				fmt.Fprintf(&list, "\n%d more findings are not listed here (the summary's limit).\n", len(p.Findings)-i)
				cut += len(p.Findings) - i
				break
			}
			list.WriteString(line)
			cut += b2i(c)
		}
	}
	return bound(head.String()+list.String()+tail.String(), max), cut
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// severityWord is a finding's severity as shown; unknown ones are
// "info".
func severityWord(s critic.Severity) string {
	switch s {
	case critic.SeverityError, critic.SeverityWarning:
		return string(s)
	}
	return "info"
}

// isFormat reports a format character (Unicode Cf: bidirectional
// overrides, zero-width joiners), which makes text read other than it is.
func isFormat(r rune) bool { return unicode.Is(unicode.Cf, r) }
