package stage_test

import (
	"bytes"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/criticizer/criticizer/internal/job"
	"github.com/criticizer/criticizer/internal/retry"
	"github.com/criticizer/criticizer/internal/stage"
)

func quotaSpent(recheck time.Duration) func() error {
	return func() error {
		return retry.WithRetryAfter(retry.Transient(retry.QuotaExhausted, errors.New("ses: Daily message quota exceeded. (test)")), recheck)
	}
}

// A spent daily quota pauses the work, however long it lasts (R-RATE-3):
// far more QUOTA_EXHAUSTED tries than the cap on deferrals and the budget
// allow together, then the quota is back and the message succeeds. Nothing
// is dead-lettered; each pause waits the recheck interval the error asks
// for (15 minutes here: beyond the policy's 5 minute ceiling, within
// SQS's limit); the job shows retryable_failed/QUOTA_EXHAUSTED and every
// try; and the throttles that follow the pause still have the whole cap of
// rate deferrals (3 here), where counting the pauses in it would have
// dead-lettered them.
func TestRateLimit_SpentQuotaPausesWithoutCapOrBudget(t *testing.T) {
	const pauses = 60
	errs := append(repeat(pauses, quotaSpent(15*time.Minute)), throttled(), throttled(), throttled())
	fn, seen := script(errs...)
	q, f, log := &sqsSim{}, &failures{}, &bytes.Buffer{}
	r := newRunner(fn, q, f, log, stage.WithMaxDeferrals(3))
	q.add(body(t, job.Message{JobID: "j_q", Stage: job.StageNotify}))

	q.drain(t, r, 1000)
	if len(q.dlq) != 0 {
		t.Fatalf("dead-lettered: %s", q.dlq[0])
	}
	if len(*seen) != pauses+4 || (*seen)[len(*seen)-1] != pauses+4 {
		t.Fatalf("stage ran %d times (last attempt %v), want %d with every try counted", len(*seen), (*seen)[len(*seen)-1], pauses+4)
	}
	if len(q.requeues) != pauses+3 || len(q.delays) != 0 {
		t.Fatalf("%d deferred copies and %d charged backoffs; want %d and 0", len(q.requeues), len(q.delays), pauses+3)
	}
	for i, d := range q.requeues[:pauses] {
		if d != 15*time.Minute {
			t.Fatalf("pause %d waits %s, want the 15m the error asked for", i+1, d)
		}
	}
	if f.list[0].ErrorClass != "QUOTA_EXHAUSTED" || f.list[pauses-1].ErrorClass != "QUOTA_EXHAUSTED" || f.last != job.StatusRetryableFailed {
		t.Errorf("failures recorded %+v… (last status %s); want QUOTA_EXHAUSTED, retryable_failed", f.list[0], f.last)
	}
	if !strings.Contains(log.String(), `"ErrorClass":"QUOTA_EXHAUSTED"`) || !strings.Contains(log.String(), `"pauses":60`) {
		t.Errorf("no QUOTA_EXHAUSTED metric or pause count in the log")
	}
}
