package critic

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/criticizer/criticizer/internal/redact"
)

// rawFinding is one finding as the model writes it. Fields are raw where
// models are known to be loose (a line number sent as a string).
type rawFinding struct {
	File     string          `json:"file"`
	Line     json.RawMessage `json:"line"`
	Severity string          `json:"severity"`
	Rule     string          `json:"rule"`
	Message  string          `json:"message"`
}

// parsedReply is what is kept of an answer.
type parsedReply struct {
	summary  string
	findings []Finding
	// incomplete: the JSON ended early (the answer was cut); the findings
	// are those that were complete.
	incomplete bool
	// answered is how many findings the model wrote, kept or not: an
	// answer that wrote as many as the cap allows may have stopped there
	// (R-LEDGER-1).
	answered int
}

// parseReply reads the model's JSON object (tolerating a Markdown fence or
// prose around it) and vets each finding against what was sent. When cut
// is true, an answer that ends early keeps its complete findings
// (R-CRITIC-5); otherwise it is malformed.
func parseReply(text string, p llmPrompt, cut bool) (parsedReply, error) {
	start := strings.IndexByte(text, '{')
	if start < 0 {
		return parsedReply{}, ErrMalformedReply
	}
	dec := json.NewDecoder(strings.NewReader(text[start:]))
	var r parsedReply
	var raw []rawFinding
	sawSummary, sawFindings := false, false
	err := func() error {
		if t, err := dec.Token(); err != nil || t != json.Delim('{') {
			return errors.New("not an object")
		}
		for dec.More() {
			t, err := dec.Token()
			if err != nil {
				return err
			}
			key, _ := t.(string)
			switch key {
			case "summary":
				var s any
				if err := dec.Decode(&s); err != nil {
					return err
				}
				str, ok := s.(string)
				if s != nil && !ok {
					return errors.New("summary is not a string")
				}
				r.summary, sawSummary = str, true
			case "findings":
				sawFindings = true
				if t, err := dec.Token(); err != nil {
					return err
				} else if t == nil {
					continue
				} else if t != json.Delim('[') {
					return errors.New("findings is not an array")
				}
				for dec.More() {
					var f rawFinding
					if err := dec.Decode(&f); err != nil {
						return err
					}
					raw = append(raw, f)
				}
				if _, err := dec.Token(); err != nil {
					return err
				}
			default:
				var skip json.RawMessage
				if err := dec.Decode(&skip); err != nil {
					return err
				}
			}
		}
		_, err := dec.Token()
		return err
	}()
	switch {
	case err != nil && cut:
		r.incomplete = true
	case err != nil:
		return parsedReply{}, fmt.Errorf("%w: %s", ErrMalformedReply, jsonErrorKind(err))
	case !sawSummary && !sawFindings:
		return parsedReply{}, fmt.Errorf("%w: neither summary nor findings", ErrMalformedReply)
	}
	r.summary = sanitizeModelText(r.summary, maxSummaryLen)
	r.answered = len(raw)
	for _, f := range raw {
		if kept, ok := p.vet(f); ok {
			r.findings = append(r.findings, kept)
		}
	}
	return r, nil
}

// vet keeps a finding only on a file that was sent, on a line the model was
// shown in a hunk (else line 0 of the file), at error or warning
// (R-CRITIC-1, R-CRITIC-4). A finding on a line shown only as context
// read at the head is dropped: that code is not the change's, and the
// prompt says so (R-CONTEXT-1).
func (p llmPrompt) vet(f rawFinding) (Finding, bool) {
	path, ok := p.paths[strings.TrimSpace(f.File)]
	msg := sanitizeModelText(f.Message, maxMessageLen)
	sev, sevOK := severityOf(f.Severity)
	if !ok || msg == "" || !sevOK {
		return Finding{}, false
	}
	line := lineNumber(f.Line)
	for _, s := range p.sel.sent {
		if s.path == path && !s.lines[line] {
			if s.contextLines[line] {
				return Finding{}, false
			}
			line = 0
		}
	}
	return Finding{File: displayPath(path), Line: line, Severity: sev, Rule: ruleID(f.Rule), Message: msg}, true
}

// jsonErrorKind describes a decoding error without quoting the input.
func jsonErrorKind(err error) string {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		return "field " + te.Field + " has the wrong type"
	}
	return "invalid JSON"
}

func lineNumber(raw json.RawMessage) int {
	s := string(bytes.Trim(bytes.TrimSpace(raw), `"`))
	n, err := strconv.Atoi(strings.TrimSpace(s))
	if err != nil || n < 0 {
		if f, ferr := strconv.ParseFloat(s, 64); ferr == nil && f >= 1 && f < 1e9 {
			return int(f)
		}
		return 0
	}
	return n
}

// severityOf maps the model's word to error or warning; anything milder
// (info, nit, low) is not kept: the prompt asks for none.
func severityOf(s string) (Severity, bool) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "error", "critical", "blocker", "high", "major":
		return SeverityError, true
	case "warning", "warn", "medium", "moderate":
		return SeverityWarning, true
	default:
		return "", false
	}
}

// ruleID turns the model's rule name into a kebab-case id of at most 48
// characters.
func ruleID(s string) string {
	var b strings.Builder
	dash := false
	for _, r := range strings.ToLower(strings.TrimSpace(s)) {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9':
			b.WriteRune(r)
			dash = false
		case b.Len() > 0 && !dash:
			b.WriteByte('-')
			dash = true
		}
		if b.Len() >= 48 {
			break
		}
	}
	id := strings.Trim(b.String(), "-")
	if id == "" {
		return defaultLLMRule
	}
	return id
}

// sanitizeModelText makes model prose fit to e-mail: one paragraph, no
// control characters, capped, with e-mail addresses and anything shaped
// like a credential masked (the model may quote the diff despite being
// told not to). Links are defanged by the renderer (R-MAIL-2).
func sanitizeModelText(s string, maxRunes int) string {
	if !utf8.ValidString(s) {
		s = strings.ToValidUTF8(s, "\uFFFD")
	}
	s = strings.Join(strings.FieldsFunc(s, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }), " ")
	s = redactText(s)
	return truncateRunes(s, maxRunes)
}

// redactText masks e-mail addresses and credentials the way every log
// line and dead letter is masked: one redaction package (R-PRIVACY-1).
func redactText(s string) string { return redact.Text(s) }

func truncateRunes(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return strings.TrimSpace(string(r[:n-1])) + "…"
}
