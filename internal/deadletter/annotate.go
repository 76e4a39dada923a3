package deadletter

import (
	"fmt"
	"slices"
	"time"
)

// Annotate appends an operator note (R-STAGE-5 "Annotate dead-letter item with
// resolution notes"). Notes are free text typed by people, so they are
// redacted like everything else.
func (e *Envelope) Annotate(action, text string, at time.Time) {
	e.Notes = append(e.Notes, Note{
		At:     at.UTC(),
		Action: clean(action, maxShort),
		Text:   clean(text, maxNoteText),
	})
}

// Refail merges the envelope of a failed replay (next) into the item that was
// replayed (prev). The item keeps its id, first failure time, original
// payload reference and notes; the replay count goes up; and, per R-STAGE-5, if
// the replay failed again with the same non-retryable error_class the item
// is escalated for engineering review. Escalation is sticky.
func Refail(prev, next Envelope, at time.Time) Envelope {
	out := next
	out.ID = prev.ID
	out.Original = prev.Original
	if !prev.FirstFailureAt.IsZero() {
		out.FirstFailureAt = prev.FirstFailureAt
	}
	out.Replays = prev.Replays + 1
	out.Notes = append(slices.Clone(prev.Notes), next.Notes...)
	out.Escalated = prev.Escalated
	if !next.Retryable && next.ErrorClass == prev.ErrorClass && !prev.Escalated {
		out.Escalated = true
		out.Annotate("escalate", fmt.Sprintf("replay %d failed again with non-retryable %s", out.Replays, next.ErrorClass), at)
	}
	return out
}
