package diff

import "strings"

// devNull is how both git and GNU diff name the missing side of an added or
// deleted file.
const devNull = "/dev/null"

// parseName reads one file name from a "---"/"+++" line, a "rename from"
// line or similar: either a C-style quoted string (git quotes names that
// contain unusual bytes) or the text up to the first tab (GNU diff puts a
// timestamp after a tab; git adds a lone tab after names with spaces).
// It also returns what follows the name.
func parseName(s string) (name, rest string) {
	if strings.HasPrefix(s, `"`) {
		if q, r, ok := cutQuoted(s); ok {
			return q, r
		}
	}
	if i := strings.IndexByte(s, '\t'); i >= 0 {
		return s[:i], s[i:]
	}
	return s, ""
}

// cutQuoted decodes the git-style quoted string at the start of s.
func cutQuoted(s string) (name, rest string, ok bool) {
	var b strings.Builder
	for i := 1; i < len(s); i++ {
		c := s[i]
		switch c {
		case '"':
			return b.String(), s[i+1:], true
		case '\\':
			i++
			if i >= len(s) {
				return "", "", false
			}
			switch e := s[i]; e {
			case 'a':
				b.WriteByte('\a')
			case 'b':
				b.WriteByte('\b')
			case 'f':
				b.WriteByte('\f')
			case 'n':
				b.WriteByte('\n')
			case 'r':
				b.WriteByte('\r')
			case 't':
				b.WriteByte('\t')
			case 'v':
				b.WriteByte('\v')
			case '"', '\\':
				b.WriteByte(e)
			case '0', '1', '2', '3':
				// Three octal digits encode one raw byte (git escapes each
				// byte of a non-ASCII UTF-8 name this way).
				if i+2 >= len(s) || !isOctal(s[i+1]) || !isOctal(s[i+2]) {
					return "", "", false
				}
				b.WriteByte((e-'0')<<6 | (s[i+1]-'0')<<3 | (s[i+2] - '0'))
				i += 2
			default:
				return "", "", false
			}
		default:
			b.WriteByte(c)
		}
	}
	return "", "", false
}

func isOctal(c byte) bool { return c >= '0' && c <= '7' }

// parseGitHeaderNames extracts the two names from the text after
// "diff --git ". The header is ambiguous when names contain spaces, so this
// is only a fallback: "rename from/to" and "---"/"+++" lines, which are not
// ambiguous, override it. It matters for files that have neither, such as
// binary files and mode-only changes.
func parseGitHeaderNames(s string) (oldName, newName string) {
	if strings.HasPrefix(s, `"`) {
		if a, rest, ok := cutQuoted(s); ok {
			rest = strings.TrimPrefix(rest, " ")
			b, _ := parseName(rest)
			return a, b
		}
	}
	if i := strings.Index(s, ` "`); i >= 0 {
		if b, _, ok := cutQuoted(s[i+1:]); ok {
			return s[:i], b
		}
	}
	// Unrenamed files have the same name on both sides, which resolves the
	// ambiguity exactly: "a/x y b/x y" splits in the middle.
	if n := len(s) / 2; len(s)%2 == 1 && s[n] == ' ' {
		a, b := s[:n], s[n+1:]
		if stripComponent(a) == stripComponent(b) {
			return a, b
		}
	}
	if i := strings.Index(s, " b/"); i >= 0 {
		return s[:i], s[i+1:]
	}
	if i := strings.IndexByte(s, ' '); i >= 0 {
		return s[:i], s[i+1:]
	}
	return s, s
}

// stripComponent drops the first path element ("a/x" -> "x"), which is
// where git puts its side prefix ("a/", "b/", or "i/", "w/", ... with
// diff.mnemonicPrefix).
func stripComponent(s string) string {
	if i := strings.IndexByte(s, '/'); i >= 0 {
		return s[i+1:]
	}
	return s
}
