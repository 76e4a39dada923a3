package redact

import (
	"regexp"
	"strings"
)

// absURL matches an absolute URL as it appears in text: a scheme, "://",
// and everything up to white space, a quote, an angle bracket or a
// backslash (the start of an escape in encoded text).
var absURL = regexp.MustCompile(`(?i)\b[a-z][a-z0-9+.-]*://[^\s"'<>\\]+`)

// scrubURLs rewrites every absolute URL in s: its userinfo, every query
// value and every path segment shaped like a secret are replaced by
// markers. A URL is data the caller chose (a diff_url, a webhook target), so
// nothing in it but its shape is kept: hosts and plain path segments stay
// for triage.
func scrubURLs(s string) string {
	return absURL.ReplaceAllStringFunc(s, scrubURL)
}

func scrubURL(u string) string {
	i := strings.Index(u, "://")
	scheme, rest := u[:i+3], u[i+3:]
	// The authority ends at the first '/', '?' or '#'.
	end := strings.IndexAny(rest, "/?#")
	if end < 0 {
		end = len(rest)
	}
	authority, tail := rest[:end], rest[end:]
	if at := strings.LastIndex(authority, "@"); at >= 0 {
		if info := authority[:at]; info != "" && !isMarker(info) {
			authority = marker("userinfo") + authority[at:]
		}
	}
	frag := ""
	if h := strings.IndexByte(tail, '#'); h >= 0 {
		tail, frag = tail[:h], tail[h:]
	}
	path, query := tail, ""
	if q := strings.IndexByte(tail, '?'); q >= 0 {
		path, query = tail[:q], tail[q:]
	}
	return scheme + authority + scrubPath(path) + scrubQuery(query) + frag
}

// scrubPath replaces path segments shaped like secrets: at least 20
// characters of letters, digits, '-' and '_' with both a letter and a
// digit (a token in a webhook URL, a signed path). Words, numbers and
// short ids stay.
func scrubPath(p string) string {
	if p == "" {
		return p
	}
	segs := strings.Split(p, "/")
	for i, seg := range segs {
		if secretSegment(seg) {
			segs[i] = marker("url_path")
		}
	}
	return strings.Join(segs, "/")
}

func secretSegment(seg string) bool {
	if len(seg) < 20 || isMarker(seg) {
		return false
	}
	letter, digit := false, false
	for i := 0; i < len(seg); i++ {
		switch c := seg[i]; {
		case c >= '0' && c <= '9':
			digit = true
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z':
			letter = true
		case c == '-' || c == '_' || c == '.':
		default:
			return false
		}
	}
	return letter && digit
}

// scrubQuery replaces every query value: a name says what a value is, the
// value is the caller's data and may be a credential under any name.
func scrubQuery(q string) string {
	if len(q) < 2 {
		return q
	}
	params := strings.Split(q[1:], "&")
	for i, p := range params {
		name, value, ok := strings.Cut(p, "=")
		if ok && value != "" && !isMarker(value) {
			params[i] = name + "=" + marker("url_param")
		}
	}
	return q[:1] + strings.Join(params, "&")
}
