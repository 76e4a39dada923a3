package inbound

import (
	"regexp"
	"strconv"
	"strings"
)

// Verb is a reply command.
type Verb string

// The vocabulary (docs/email.md, "Replying"), R-REPLY-4.
const (
	// Wrong marks finding N of the email wrong: a vote, and the finding
	// is hidden from the reader's later emails about the changelist while
	// its line is unchanged (voting.Recorder).
	Wrong Verb = "wrong"
	// Useful marks finding N useful (and shows it again if it was
	// hidden).
	Useful Verb = "useful"
	// Mute stops the reader's email about this changelist.
	Mute Verb = "mute"
	// Unsubscribe stops all of the reader's Criticizer email (the
	// one-click link's "all" scope).
	Unsubscribe Verb = "unsubscribe"
	// Help answers with the vocabulary.
	Help Verb = "help"
)

// Command is one command of a reply: a verb, and for Wrong and Useful
// the finding's number as the email shows it.
type Command struct {
	Verb    Verb
	Finding int
}

func (c Command) String() string {
	if c.Finding > 0 {
		return string(c.Verb) + " " + strconv.Itoa(c.Finding)
	}
	return string(c.Verb)
}

// The bounds of one reply (R-REPLY-6): at most MaxCommands commands are
// acted on (the rest are ignored, and the confirmation says how many);
// at most maxLines lines above the quote are read; a finding number is
// at most maxFinding (an email lists at most 100).
const (
	MaxCommands = 10
	maxLines    = 40
	maxFinding  = 999
)

// Parsed is what a reply says.
type Parsed struct {
	Commands []Command
	// Ignored counts the commands past MaxCommands.
	Ignored int
	// Unknown counts the lines above the quote that are not commands
	// (a greeting, a thank-you, a question): not acted on, and counted in
	// the confirmation, never echoed back.
	Unknown int
}

// Parse reads the commands of a reply's text: the lines above the quoted
// email (Above), one command a line, case-insensitive: "wrong 3",
// "wrong 3, 4" or "wrong #3 #4" (one command per number), "useful 2",
// "mute", "unsubscribe", "help". The same command twice counts once.
func Parse(text string) Parsed {
	var p Parsed
	seen := map[Command]bool{}
	for _, line := range Above(text) {
		cmds, ok := parseLine(line)
		if !ok {
			p.Unknown++
			continue
		}
		for _, c := range cmds {
			if seen[c] {
				continue
			}
			seen[c] = true
			if len(p.Commands) == MaxCommands {
				p.Ignored++
				continue
			}
			p.Commands = append(p.Commands, c)
		}
	}
	return p
}

// parseLine reads one line; false when it is not a command.
func parseLine(line string) ([]Command, bool) {
	words := strings.FieldsFunc(strings.ToLower(line), func(r rune) bool {
		return r == ' ' || r == '\t' || r == ',' || r == ';' || r == '\u00a0'
	})
	for len(words) > 0 {
		last := strings.TrimRight(words[len(words)-1], ".!")
		if last != "" {
			words[len(words)-1] = last
			break
		}
		words = words[:len(words)-1]
	}
	if len(words) == 0 {
		return nil, false
	}
	switch v := Verb(strings.TrimRight(words[0], ":.!")); v {
	case Mute, Unsubscribe, Help:
		if len(words) != 1 {
			return nil, false
		}
		return []Command{{Verb: v}}, true
	case Wrong, Useful:
		var out []Command
		for _, w := range words[1:] {
			if w == "and" || w == "&" {
				continue
			}
			n, err := strconv.Atoi(strings.TrimPrefix(w, "#"))
			if err != nil || n < 1 || n > maxFinding {
				return nil, false
			}
			out = append(out, Command{Verb: v, Finding: n})
		}
		return out, len(out) > 0
	}
	return nil, false
}

// attribution is the line a client writes above the email it quotes:
// "On Tue, Dec 1, 2026 at 10:30 AM Criticizer <…> wrote:" (Gmail, Apple
// Mail, Thunderbird; Gmail wraps a long one over two lines), or its
// German, French and Spanish forms.
var attribution = regexp.MustCompile(`(?i)^(on|am|le|el)\b.*\b(wrote|schrieb|a écrit|escribió)\s*:\s*$`)

// outlookHeader is the first line of the header block Outlook writes
// above the email it quotes ("From: …" then "Sent: …").
var outlookHeader = regexp.MustCompile(`(?i)^\*?(from|von|de)\s*:\*?\s`)

// Above is the reader's own text of a reply: its lines before the quoted
// email, at most maxLines of them that are not blank, each trimmed. The
// quote starts at the first of:
//
//   - a line quoted with ">" (every client's plain-text quote, and Apple
//     Mail's attribution, which it quotes too);
//   - an attribution line, "On … wrote:", also when a long one is wrapped
//     over up to three lines;
//   - Outlook's separator (a line of underscores, or
//     "-----Original Message-----") or its header block ("From: …"
//     followed by "Sent:", "Date:", "To:" or "Subject:");
//   - a signature's delimiter, "-- " (RFC 3676 §4.3), or "--".
func Above(text string) []string {
	lines := strings.Split(strings.ReplaceAll(strings.ReplaceAll(text, "\r\n", "\n"), "\r", "\n"), "\n")
	var out []string
	for i := 0; i < len(lines) && len(out) < maxLines; i++ {
		raw := lines[i]
		line := strings.TrimSpace(strings.ReplaceAll(raw, "\u00a0", " "))
		switch {
		case raw == "-- " || line == "--":
			return out
		case strings.HasPrefix(line, ">"):
			return out
		case strings.HasPrefix(line, "-----") && strings.Contains(strings.ToLower(line), "original message"):
			return out
		case len(line) >= 10 && strings.Trim(line, "_") == "":
			return out
		case quoteStarts(lines, i):
			return out
		case line == "":
			continue
		}
		out = append(out, line)
	}
	return out
}

// quoteStarts reports whether an attribution or Outlook's header block
// starts at line i.
func quoteStarts(lines []string, i int) bool {
	line := strings.TrimSpace(lines[i])
	joined := line
	for j := i; j < len(lines) && j < i+3; j++ {
		if j > i {
			joined += " " + strings.TrimSpace(lines[j])
		}
		if attribution.MatchString(joined) {
			return true
		}
	}
	if outlookHeader.MatchString(line) {
		for j := i + 1; j < len(lines) && j < i+3; j++ {
			next := strings.ToLower(strings.TrimLeft(strings.TrimSpace(lines[j]), "*"))
			for _, h := range []string{"sent:", "date:", "to:", "subject:", "gesendet:", "envoyé :", "enviado:"} {
				if strings.HasPrefix(next, h) {
					return true
				}
			}
		}
	}
	return false
}
