package deadletter

import (
	"github.com/criticizer/criticizer/internal/redact/redacttest"
	"strings"
	"testing"

	"github.com/criticizer/criticizer/internal/retry"
)

// R-STAGE-5: "Annotate dead-letter item with resolution notes"; notes are
// stored, so they are redacted like every other field (R-STAGE-4).
func TestAnnotate_RedactsNotes(t *testing.T) {
	var env Envelope
	env.Annotate("replay", "rotated key "+redacttest.PlantGHP+" for "+redacttest.PlantEmail, t1)
	if len(env.Notes) != 1 || env.Notes[0].Action != "replay" || !env.Notes[0].At.Equal(t1) {
		t.Fatalf("notes = %+v", env.Notes)
	}
	assertNoLiterals(t, "note", env.Notes[0].Text)
	if !strings.Contains(env.Notes[0].Text, "[REDACTED:github_token]") {
		t.Errorf("note = %q", env.Notes[0].Text)
	}
}

// R-STAGE-5: "If replay fails again with the same non-retryable error_class, item
// MUST be re-queued to dead-letter and escalated for engineering review."
func TestRefail_EscalatesSameNonRetryable(t *testing.T) {
	first := New(Failure{Stage: StageNotify, Err: retry.Permanent(retry.AuthDenied, nil), Attempts: 1,
		FirstFailureAt: t0, LastFailureAt: t0, Message: Original{MessageID: "m-1", Body: `{"job_id":"j"}`}})
	first.Annotate("remediate", "rotated SES credentials", t0)

	replay := New(Failure{Stage: StageNotify, Err: retry.Permanent(retry.AuthDenied, nil), Attempts: 1,
		FirstFailureAt: t1, LastFailureAt: t1, Message: Original{MessageID: "m-2", Body: `{"job_id":"j"}`}})
	got := Refail(first, replay, t1)
	if !got.Escalated || got.Replays != 1 || got.ID != first.ID || !got.FirstFailureAt.Equal(t0) || got.Original != first.Original {
		t.Errorf("after same-class refail: %+v", got)
	}
	if len(got.Notes) != 2 || got.Notes[1].Action != "escalate" {
		t.Errorf("notes = %+v", got.Notes)
	}

	// A different class, or a retryable one, is not an escalation.
	other := New(Failure{Stage: StageNotify, Err: retry.Permanent(retry.PolicyRejected, nil), LastFailureAt: t1})
	if Refail(first, other, t1).Escalated {
		t.Error("escalated on a different class")
	}
	flaky := New(Failure{Stage: StageNotify, Err: &retry.HTTPStatusError{Status: 503}, LastFailureAt: t1})
	if Refail(first, flaky, t1).Escalated {
		t.Error("escalated on a retryable class")
	}
	// Escalation is sticky across further replays.
	if again := Refail(got, other, t1); !again.Escalated || again.Replays != 2 {
		t.Errorf("second refail: escalated=%v replays=%d", again.Escalated, again.Replays)
	}
}
