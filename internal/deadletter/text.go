package deadletter

import (
	"unicode/utf8"

	"github.com/criticizer/criticizer/internal/redact"
)

// Size limits keep an envelope far below the 256 KiB SQS message limit even
// with a full error chain and a panic stack.
const (
	maxContextValue = 256      // bytes per sanitized_context value (R-STAGE-4 "truncated")
	maxContextKey   = 128      // longer keys are dropped, not truncated
	maxStack        = 16 << 10 // last_stack
	maxBody         = 64 << 10 // original.body
	maxNoteText     = 2 << 10  // notes[].text
	maxShort        = 256      // ids, stage, action and similar one-line fields
	truncatedSuffix = "…[truncated]"
)

// truncate cuts s to at most n bytes on a rune boundary, appending a marker
// when it cuts. It runs after redaction: truncating first could leave half a
// secret that no pattern recognises.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n - len(truncatedSuffix)
	if cut < 0 {
		cut = 0
	}
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + truncatedSuffix
}

// clean is the treatment of every free-text field: redact, then bound.
func clean(s string, n int) string { return truncate(redact.Text(s), n) }
