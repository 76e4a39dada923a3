package critic

import (
	"regexp"
	"strings"
)

// emailPattern matches e-mail addresses. It is deliberately loose: masking a
// little too much in a file name costs nothing, leaking an address does.
var emailPattern = regexp.MustCompile(`[A-Za-z0-9._%+\-]+@[A-Za-z0-9\-]+(?:\.[A-Za-z0-9\-]+)*\.[A-Za-z]{2,}`)

// retinaSuffix matches the "@2x." of image assets such as "icon@2x.png",
// which look like addresses but are not.
var retinaSuffix = regexp.MustCompile(`@[0-9]+(?:\.[0-9]+)?x\.`)

const redacted = "[redacted]"

// displayPath returns p as it may appear in a finding. Findings are e-mailed
// and stored, so e-mail addresses (common in per-user directories) and
// anything shaped like a credential are masked even in file names.
func displayPath(p string) string {
	if strings.IndexByte(p, '@') >= 0 {
		p = emailPattern.ReplaceAllStringFunc(p, func(m string) string {
			if retinaSuffix.MatchString(m) {
				return m
			}
			return redacted
		})
	}
	for i := range secretPatterns {
		sp := &secretPatterns[i]
		if sp.inPaths && sp.mayMatch(p) {
			p = sp.re.ReplaceAllString(p, redacted)
		}
	}
	return p
}
