package critic

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/criticizer/criticizer/internal/diff"
)

// FuzzParseReply: whatever the model answers, parseReply fails only with
// ErrMalformedReply (and never for an answer marked cut whose object is
// unfinished: R-CRITIC-5); what it keeps is fit for the email: the summary is
// one line of printable text within its cap; every finding names a file
// that was sent, on a line the model was shown or 0 (R-CRITIC-1), at error
// or warning, with a kebab-case rule and a one-line message within its cap.
func FuzzParseReply(f *testing.F) {
	f.Add(`{"summary":"ok","findings":[{"file":"internal/store/store.go","line":"12","severity":"warning","rule":"r","message":"m"}]}`, false)
	f.Add("```json\n{\"findings\":[]}\n```", false)
	f.Add(`{"summary":"a@b.example AKIAABCDEFGHIJKLMNOP"}`, false)
	f.Add(`{"summary":"s","findings":[{"file":"b/cmd/tool/main.go","line":2.0,"severity":"ERROR","rule":"SQL Injection","message":"x\ny"},{"file":"nope.go"`, true)
	f.Add(`prose {"findings":null} more`, false)
	d, err := diff.ParseString(goEdit + newFile + deletion)
	if err != nil {
		f.Fatal(err)
	}
	cfg := defaultLLMConfig()
	sel := selectFiles(d, cfg.diffBudget, Generated{}, nil)
	p := buildPrompt(llmInput(goEdit+newFile+deletion), sel, cfg, "B0UNDARY")
	shown := map[string]map[int]bool{}
	for _, s := range sel.sent {
		shown[displayPath(s.path)] = s.lines
	}
	oneLine := func(s string) bool {
		return utf8.ValidString(s) && !strings.ContainsFunc(s, func(r rune) bool { return unicode.IsControl(r) || r == '\u2028' || r == '\u2029' })
	}
	f.Fuzz(func(t *testing.T, reply string, cut bool) {
		r, err := parseReply(reply, p, cut)
		if err != nil {
			if !errors.Is(err, ErrMalformedReply) {
				t.Fatalf("error not classified as ErrMalformedReply: %v", err)
			}
			if cut && unfinished(reply) {
				t.Fatalf("a cut answer whose object is unfinished was refused: %v", err)
			}
			return
		}
		if !oneLine(r.summary) || utf8.RuneCountInString(r.summary) > maxSummaryLen {
			t.Fatalf("summary not one capped line: %q", r.summary)
		}
		for _, fd := range r.findings {
			lines, sent := shown[fd.File]
			if !sent || fd.Line < 0 || (fd.Line != 0 && !lines[fd.Line]) {
				t.Fatalf("finding %+v: not a file and line the model was shown", fd)
			}
			if fd.Severity != SeverityError && fd.Severity != SeverityWarning {
				t.Fatalf("finding %+v: severity", fd)
			}
			if fd.Rule == "" || len(fd.Rule) > 48 || strings.Trim(fd.Rule, "abcdefghijklmnopqrstuvwxyz0123456789-") != "" {
				t.Fatalf("finding %+v: rule not kebab-case", fd)
			}
			if fd.Message == "" || !oneLine(fd.Message) || utf8.RuneCountInString(fd.Message) > maxMessageLen {
				t.Fatalf("finding %+v: message not one capped line", fd)
			}
		}
	})
}

// unfinished reports whether reply has an object that ends early or is not
// valid JSON: what a model cut at its token limit leaves. A complete
// object with neither a summary nor findings is not one, cut or not (the
// fuzzer's `{}` marked cut: the property said "any object" at first).
func unfinished(reply string) bool {
	start := strings.IndexByte(reply, '{')
	if start < 0 {
		return false
	}
	var obj map[string]json.RawMessage
	if err := json.NewDecoder(strings.NewReader(reply[start:])).Decode(&obj); err != nil {
		return true
	}
	_, summary := obj["summary"]
	_, findings := obj["findings"]
	return summary || findings
}
