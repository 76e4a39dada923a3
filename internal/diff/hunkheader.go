package diff

import (
	"math"
	"strings"
)

// parseHunkHeader parses "@@ -a[,b] +c[,d] @@[ section]".
//
// It is hand-written rather than a regexp so that it can reject everything
// that is not exactly that shape (including numbers too large to count to)
// with a precise reason, and so it costs nothing per hunk.
func parseHunkHeader(line string) (Hunk, string) {
	rest, ok := strings.CutPrefix(line, "@@ -")
	if !ok {
		return Hunk{}, "hunk header does not start with \"@@ -\""
	}
	var h Hunk
	h.OldStart, h.OldLines, rest, ok = parseRange(rest)
	if !ok {
		return Hunk{}, "hunk header has an invalid old range"
	}
	rest, ok = strings.CutPrefix(rest, " +")
	if !ok {
		return Hunk{}, "hunk header has no new range"
	}
	h.NewStart, h.NewLines, rest, ok = parseRange(rest)
	if !ok {
		return Hunk{}, "hunk header has an invalid new range"
	}
	rest, ok = strings.CutPrefix(rest, " @@")
	if !ok {
		return Hunk{}, "hunk header is not closed by \" @@\""
	}
	// git separates the section heading with one space; keep any further
	// indentation since it is part of the heading.
	if rest != "" {
		if rest[0] != ' ' && rest[0] != '\t' {
			return Hunk{}, "hunk header has text glued to the closing \"@@\""
		}
		rest = rest[1:]
	}
	h.Section = rest
	// A non-empty range must start at a real (1-based) line; only an empty
	// range may use 0 to mean "before the first line".
	if (h.OldLines > 0 && h.OldStart == 0) || (h.NewLines > 0 && h.NewStart == 0) {
		return Hunk{}, "hunk header has a non-empty range starting at line 0"
	}
	return h, ""
}

// parseRange parses "start[,count]" at the beginning of s and returns the
// remainder. An omitted count means 1, as in GNU diff and git.
func parseRange(s string) (start, count int, rest string, ok bool) {
	start, s, ok = parseNumber(s)
	if !ok {
		return 0, 0, "", false
	}
	count = 1
	if after, found := strings.CutPrefix(s, ","); found {
		count, s, ok = parseNumber(after)
		if !ok {
			return 0, 0, "", false
		}
	}
	if start > math.MaxInt32-count {
		return 0, 0, "", false
	}
	return start, count, s, true
}

// parseNumber parses a run of ASCII digits, rejecting values above
// math.MaxInt32 so that line arithmetic can never overflow.
func parseNumber(s string) (n int, rest string, ok bool) {
	i := 0
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		n = n*10 + int(s[i]-'0')
		if n > math.MaxInt32 {
			return 0, "", false
		}
		i++
	}
	if i == 0 {
		return 0, "", false
	}
	return n, s[i:], true
}
