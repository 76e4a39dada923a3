package delivery_test

import (
	"testing"
	"time"

	"github.com/criticizer/criticizer/internal/delivery"
	"github.com/criticizer/criticizer/internal/job"
)

// What a newer version is to a recipient of an older one: reached once
// its row for them was sent (SES accepted it: notified_at or a message
// id), settled because they had its content, or superseded in turn;
// undecided while its row may still be sent (pending, failed_transient,
// in `sending`) or its job is on its way without a row for them;
// unreachable once its job ended without mailing them or their row was
// settled without a send. A claimable row of a dead-lettered job is
// unreachable (nobody claims it until an operator replays the job); a
// row in `sending` is not (provider evidence decides it).
// Rules: R-QUIET-3.
func TestJudge_NewerVersionForARecipient(t *testing.T) {
	running := job.Job{Status: job.StatusInProgress, Stage: job.StageNotify}
	dead := job.Job{Status: job.StatusDeadLettered, Stage: job.StageNotify}
	now := time.Now()
	for _, c := range []struct {
		name  string
		newer job.Job
		row   delivery.Row
		ok    bool
		want  delivery.Successor
	}{
		{"sent", running, delivery.Row{Status: delivery.StatusSent, NotifiedAt: now}, true, delivery.Reached},
		{"delivered", running, delivery.Row{Status: delivery.StatusDelivered, NotifiedAt: now}, true, delivery.Reached},
		{"held with a message id", running, delivery.Row{Status: delivery.StatusSending, NotificationID: "m"}, true, delivery.Reached},
		{"reconciling", running, delivery.Row{Status: delivery.StatusReconciling, NotifiedAt: now}, true, delivery.Reached},
		{"same diff", running, delivery.Row{Status: delivery.StatusSkippedSameDiff}, true, delivery.Reached},
		{"nothing new", running, delivery.Row{Status: delivery.StatusSkippedNothingNew}, true, delivery.Reached},
		{"superseded in turn", running, delivery.Row{Status: delivery.StatusSuperseded}, true, delivery.Reached},
		{"pending", running, delivery.Row{Status: delivery.StatusPending}, true, delivery.Undecided},
		{"failed transient", running, delivery.Row{Status: delivery.StatusFailedTransient}, true, delivery.Undecided},
		{"sending, answer lost", running, delivery.Row{Status: delivery.StatusSending}, true, delivery.Undecided},
		{"no row yet", job.Job{Status: job.StatusInProgress, Stage: job.StageLLM}, delivery.Row{}, false, delivery.Undecided},
		{"pending, job dead-lettered", dead, delivery.Row{Status: delivery.StatusPending}, true, delivery.Unreachable},
		{"sending, job dead-lettered", dead, delivery.Row{Status: delivery.StatusSending}, true, delivery.Undecided},
		{"refused for good", running, delivery.Row{Status: delivery.StatusFailedPermanent}, true, delivery.Unreachable},
		{"unsubscribed", running, delivery.Row{Status: delivery.StatusSkippedUnsubscribed}, true, delivery.Unreachable},
		{"suppressed", running, delivery.Row{Status: delivery.StatusSuppressed}, true, delivery.Unreachable},
		{"no address", running, delivery.Row{Status: delivery.StatusSkippedNoEmail}, true, delivery.Unreachable},
		{"domain not allowed", running, delivery.Row{Status: delivery.StatusSkippedDomain}, true, delivery.Unreachable},
		{"budget exceeded", job.Job{Status: job.StatusBudgetExceeded, Stage: job.StageLLM}, delivery.Row{}, false, delivery.Unreachable},
		{"no recipients", job.Job{Status: job.StatusNoRecipients, Stage: job.StageLLM}, delivery.Row{}, false, delivery.Unreachable},
		{"skipped by settings", job.Job{Status: job.StatusSucceeded, Stage: job.StageDone, Skipped: "label"}, delivery.Row{}, false, delivery.Unreachable},
		{"dead-lettered before notify", job.Job{Status: job.StatusDeadLettered, Stage: job.StageFetch}, delivery.Row{}, false, delivery.Unreachable},
		{"finished without them", job.Job{Status: job.StatusSucceeded, Stage: job.StageDone}, delivery.Row{}, false, delivery.Unreachable},
	} {
		if got := delivery.Judge(c.newer, c.row, c.ok); got != c.want {
			t.Errorf("%s: %s, want %s", c.name, got, c.want)
		}
	}
}

// A newer version SES accepted and then undid — a Reject (its content
// refused), a permanent bounce, a transient one after its resends — did
// not reach the recipient: it supersedes nothing, and the older version
// is mailed. A complaint came from a reader who had it.
// Rules: R-QUIET-4, R-QUIET-3.
func TestJudge_SentThenUndone_Unreachable(t *testing.T) {
	running := job.Job{Status: job.StatusInProgress, Stage: job.StageNotify}
	done := job.Job{Status: job.StatusNeedsIntervention, Stage: job.StageDone}
	now := time.Now()
	sent := delivery.Row{Status: delivery.StatusSent, NotificationID: "m", NotifiedAt: now, SendEventAt: now, ProviderMessageID: "m"}
	rejected := sent
	rejected.Status, rejected.LastErrorClass, rejected.RejectedAt = delivery.StatusFailedPermanent, "REJECTED", now
	bounced := sent
	bounced.Status, bounced.BouncedAt, bounced.BounceType = delivery.StatusSuppressed, now, "Permanent"
	softOut := sent
	softOut.BouncedAt, softOut.BounceType = now, "Transient"
	complained := sent
	complained.Status, complained.ComplainedAt = delivery.StatusSuppressed, now
	for _, c := range []struct {
		name  string
		newer job.Job
		row   delivery.Row
		want  delivery.Successor
	}{
		{"rejected after its Send", done, rejected, delivery.Unreachable},
		{"bounced for good after its Send", running, bounced, delivery.Unreachable},
		{"bounced transiently, resends spent", running, softOut, delivery.Unreachable},
		{"complained", running, complained, delivery.Reached},
	} {
		if got := delivery.Judge(c.newer, c.row, true); got != c.want {
			t.Errorf("%s: %s, want %s", c.name, got, c.want)
		}
	}
}

// An older row is superseded by the newest version that reached its
// recipient, even while a newer one is still undecided; it waits while
// none did and one may; it is mailed when none can, or there is none.
// Rules: R-QUIET-3.
func TestSupersede_NewestReachedElseWaitElseMail(t *testing.T) {
	for _, c := range []struct {
		judged map[int]delivery.Successor
		want   delivery.Supersession
	}{
		{nil, delivery.Supersession{}},
		{map[int]delivery.Successor{2: delivery.Unreachable, 3: delivery.Unreachable}, delivery.Supersession{}},
		{map[int]delivery.Successor{2: delivery.Undecided, 3: delivery.Unreachable}, delivery.Supersession{Wait: true}},
		{map[int]delivery.Successor{2: delivery.Reached, 3: delivery.Undecided}, delivery.Supersession{By: 2}},
		{map[int]delivery.Successor{2: delivery.Reached, 3: delivery.Reached, 4: delivery.Unreachable}, delivery.Supersession{By: 3}},
	} {
		if got := delivery.Supersede(c.judged); got != c.want {
			t.Errorf("%v: %+v, want %+v", c.judged, got, c.want)
		}
	}
}
