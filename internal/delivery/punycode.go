package delivery

import (
	"strings"
	"unicode"
)

// isLetterOrMark reports whether a non-ASCII rune may stand in a domain
// label here: a letter, a combining mark or a digit of any script.
// Punctuation, spaces, symbols and format characters (bidi controls
// among them) may not.
func isLetterOrMark(r rune) bool {
	return unicode.IsLetter(r) || unicode.IsMark(r) || unicode.IsDigit(r)
}

// Punycode's parameters (RFC 3492, section 5).
const (
	pcBase        = 36
	pcTMin        = 1
	pcTMax        = 26
	pcSkew        = 38
	pcDamp        = 700
	pcInitialBias = 72
	pcInitialN    = 128
)

// punycode encodes one label (RFC 3492, section 6.3) without the "xn--"
// prefix: the label's ASCII characters, a hyphen if there were any, then
// the non-ASCII ones as generalized variable-length integers. Labels here
// are short (a domain is at most 253 bytes), so the overflow checks of
// the RFC cannot trigger.
func punycode(label string) string {
	runes := []rune(label)
	var out strings.Builder
	for _, r := range runes {
		if r < 0x80 {
			out.WriteRune(r)
		}
	}
	basic := out.Len()
	h := basic
	if basic > 0 {
		out.WriteByte('-')
	}
	n, delta, bias := rune(pcInitialN), 0, pcInitialBias
	for h < len(runes) {
		m := rune(unicode.MaxRune)
		for _, r := range runes {
			if r >= n && r < m {
				m = r
			}
		}
		delta += int(m-n) * (h + 1)
		n = m
		for _, r := range runes {
			if r < n {
				delta++
			}
			if r != n {
				continue
			}
			q := delta
			for k := pcBase; ; k += pcBase {
				t := k - bias
				if t < pcTMin {
					t = pcTMin
				} else if t > pcTMax {
					t = pcTMax
				}
				if q < t {
					break
				}
				out.WriteByte(pcDigit(t + (q-t)%(pcBase-t)))
				q = (q - t) / (pcBase - t)
			}
			out.WriteByte(pcDigit(q))
			bias = pcAdapt(delta, h+1, h == basic)
			delta = 0
			h++
		}
		delta++
		n++
	}
	return out.String()
}

func pcDigit(d int) byte {
	if d < 26 {
		return byte('a' + d)
	}
	return byte('0' + d - 26)
}

func pcAdapt(delta, points int, first bool) int {
	if first {
		delta /= pcDamp
	} else {
		delta /= 2
	}
	delta += delta / points
	k := 0
	for delta > ((pcBase-pcTMin)*pcTMax)/2 {
		delta /= pcBase - pcTMin
		k += pcBase
	}
	return k + (pcBase-pcTMin+1)*delta/(delta+pcSkew)
}
