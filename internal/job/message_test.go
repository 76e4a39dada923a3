package job_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/criticizer/criticizer/internal/job"
)

//	with R-STAGE-3: a rate-limited attempt is
//
// not charged to the budget. Across deferred copies (each starting again at
// SQS receive count 1), BudgetAttempt counts the charged attempts and Tries
// every run of the stage.
// Rules: R-STAGE-6.
func TestMessage_DeferralAccounting(t *testing.T) {
	m := job.Message{JobID: "j_x", Stage: job.StageNotify}
	if m.BudgetAttempt(3) != 3 || m.Tries(3) != 3 {
		t.Fatalf("a message never deferred: budget %d tries %d, want the receive count", m.BudgetAttempt(3), m.Tries(3))
	}
	// Received twice: a 5xx (charged), then throttled on the second receive.
	c1 := m.Deferred(2)
	if c1.Deferral == nil || c1.Deferral.Spent != 1 || c1.Deferral.Count != 1 || m.Deferral != nil {
		t.Fatalf("first deferral %+v (original %+v); want spent 1, count 1, original untouched", c1.Deferral, m.Deferral)
	}
	if c1.BudgetAttempt(1) != 2 || c1.Tries(1) != 3 {
		t.Fatalf("copy's first receive: budget %d tries %d, want 2 and 3", c1.BudgetAttempt(1), c1.Tries(1))
	}
	// Throttled on its first receive: nothing more is charged.
	c2 := c1.Deferred(1)
	if c2.Deferral.Spent != 1 || c2.Deferral.Count != 2 || c2.BudgetAttempt(1) != 2 || c2.Tries(1) != 4 {
		t.Fatalf("second deferral %+v: budget %d tries %d; want spent 1 count 2, budget 2, tries 4", c2.Deferral, c2.BudgetAttempt(1), c2.Tries(1))
	}
	if c1.Deferral.Count != 1 {
		t.Fatal("Deferred modified the receiver's bookkeeping")
	}
}

// Stage messages are decoded strictly (unknown fields rejected): the new
// field round-trips, is omitted when unset (old readers see the same
// bytes), and a typo inside it is still rejected.
func TestMessage_DeferralStrictJSON(t *testing.T) {
	strict := func(s string) (job.Message, error) {
		var m job.Message
		dec := json.NewDecoder(strings.NewReader(s))
		dec.DisallowUnknownFields()
		return m, dec.Decode(&m)
	}
	plain, _ := json.Marshal(job.Message{JobID: "j_x", Stage: job.StageNotify})
	if strings.Contains(string(plain), "deferral") {
		t.Errorf("unset deferral is encoded: %s", plain)
	}
	b, _ := json.Marshal(job.Message{JobID: "j_x", Stage: job.StageNotify}.Deferred(3))
	m, err := strict(string(b))
	if err != nil || m.Deferral == nil || m.Deferral.Spent != 2 || m.Deferral.Count != 1 {
		t.Fatalf("round trip of %s: %+v %v", b, m.Deferral, err)
	}
	if _, err := strict(`{"job_id":"j_x","stage":"notify","deferral":{"spent":1,"count":1,"cnt":2}}`); err == nil {
		t.Error("an unknown field inside deferral was accepted")
	}
}

// A spent daily quota pauses a message (R-RATE-3): the pauses are tries
// GET /jobs shows, charged neither to the budget nor to the cap on rate
// deferrals, which stays whole for the throttles that may follow.
func TestMessage_PausedCopyKeepsTheDeferralCap(t *testing.T) {
	m := job.Message{JobID: "j_x", Stage: job.StageNotify}.Deferred(2) // a 5xx, then a throttle
	for range 100 {
		m = m.PausedCopy(1)
	}
	if m.Deferral.Spent != 1 || m.Deferral.Count != 1 || m.Deferral.Paused != 100 {
		t.Fatalf("after 100 pauses %+v; want spent 1, count 1, paused 100", *m.Deferral)
	}
	if m.BudgetAttempt(1) != 2 || m.Tries(1) != 103 {
		t.Fatalf("budget %d tries %d; want 2 (the pauses are free) and 103 (every try shown)", m.BudgetAttempt(1), m.Tries(1))
	}
	b, _ := json.Marshal(job.Message{JobID: "j_x"}.Deferred(1))
	if strings.Contains(string(b), "paused") {
		t.Errorf("a message never paused carries the field: %s", b)
	}
}
