package critic

import "strings"

// Small text helpers shared by the rules. They exist so that the common case
// (a line that matches nothing) is decided by cheap byte scans and never
// reaches a regular expression.

// isCommentLine reports whether a line is a whole-line comment in any of the
// common syntaxes. Rules about executable code skip such lines, since
// commented-out code does not run.
func isCommentLine(text string) bool {
	t := strings.TrimLeft(text, " \t")
	return strings.HasPrefix(t, "//") || strings.HasPrefix(t, "#") ||
		strings.HasPrefix(t, "/*") || strings.HasPrefix(t, "*") ||
		strings.HasPrefix(t, "<!--") || strings.HasPrefix(t, "--")
}

// isWordByte reports whether b can be part of an identifier.
func isWordByte(b byte) bool {
	return b == '_' || b >= '0' && b <= '9' || b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z'
}

// indexWord finds word in s where it is not part of a longer identifier.
func indexWord(s, word string) int {
	for off := 0; ; {
		i := strings.Index(s[off:], word)
		if i < 0 {
			return -1
		}
		i += off
		end := i + len(word)
		if (i == 0 || !isWordByte(s[i-1])) && (end == len(s) || !isWordByte(s[end])) {
			return i
		}
		off = i + 1
	}
}

// containsAny reports whether s contains any of subs. It is the cheap
// filter run before a regexp, so most lines never reach the regexp.
func containsAny(s string, subs ...string) bool {
	for _, sub := range subs {
		if strings.Contains(s, sub) {
			return true
		}
	}
	return false
}

// containsFold reports whether s contains sub, ignoring ASCII case, without
// allocating. sub must be lower-case ASCII.
func containsFold(s, sub string) bool {
	n := len(sub)
outer:
	for i := 0; i+n <= len(s); i++ {
		for j := range n {
			if lowerASCII(s[i+j]) != sub[j] {
				continue outer
			}
		}
		return true
	}
	return false
}

func lowerASCII(b byte) byte {
	if b >= 'A' && b <= 'Z' {
		return b + 'a' - 'A'
	}
	return b
}
