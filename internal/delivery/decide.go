package delivery

import "time"

// Action is what the notifier does next with a row it has just read.
type Action int

const (
	// Skip: already sent or terminal; never send again (R-OUTBOX-1 "If a row already
	// exists with notified_at populated, skip send").
	Skip Action = iota
	// Claim: safe to attempt a send (R-OUTBOX-3 "If notified_at is null and
	// notification_id is null, safe to attempt send"), and no provider
	// evidence says an earlier send happened.
	Claim
	// Wait: another worker holds a live lease on the row.
	Wait
	// Reconcile: a send may have happened (provider evidence on the row, or
	// a lease that expired mid-send); provider evidence decides before any
	// resend (R-OUTBOX-3, R-OUTBOX-6). See Settle.
	Reconcile
	// Hold: the row is failed permanently or under reconciliation; it needs an
	// operator and is never sent automatically (R-OUTBOX-9, R-RECON-1).
	Hold
)

func (a Action) String() string {
	return [...]string{"skip", "claim", "wait", "reconcile", "hold"}[a]
}

// Decide applies R-OUTBOX-3's re-read rules to a freshly read row.
func Decide(r Row, now time.Time) Action {
	switch {
	case r.Status == StatusReconciling:
		// Marked sent without provider evidence (R-RECON-1): an operator decides.
		return Hold
	case !r.NotifiedAt.IsZero() || r.Status.Done():
		return Skip
	case r.Status == StatusFailedPermanent:
		return Hold
	case r.NotificationID != "", r.HasEvidence():
		// Provider evidence of a send settles a row in flight at once; no
		// need to wait out the sender's lease. It also settles a row that
		// was released for a resend: an event that names it arrived since.
		return Reconcile
	case r.Status == StatusSending && now.Before(r.LeaseUntil):
		return Wait
	case r.Status == StatusSending:
		return Reconcile
	case r.Status.Claimable():
		return Claim
	}
	return Hold
}

// Evidence is how far the provider's evidence path has been processed
// (R-EVIDENCE-2), and the bound the protocol assumes on SES's publishing.
type Evidence struct {
	// Newest is the newest SES event time (mail.timestamp) the feedback
	// function has recorded: events of mail accepted up to then were
	// published and delivered. It says the path was working; it says
	// nothing about events still in flight.
	Newest time.Time
	// Drained: every message that reached the feedback queue before it has
	// been processed (the queue and its DLQ were found empty,
	// internal/drain).
	Drained time.Time
	// Bound is the longest SES takes to get a message's Send event onto
	// the feedback queue after accepting the message
	// (CRITICIZER_EVIDENCE_MARGIN): the assumption the rule rests on;
	// the feedback function measures every Send event against it and
	// alarms when one is later (R-EVIDENCE-7).
	Bound time.Duration
	// Policy is what a send caught up past with no event naming it does
	// (R-EVIDENCE-9): resend (the zero value) or hold.
	Policy UncertainSend
}

// CaughtUp reports whether the evidence path has demonstrably processed
// every event that could name a message SES accepted by t: the path was
// working after t (an event of a later message was recorded), and every
// message that reached the feedback queue up to t+Bound — where a Send
// event of such a message must be by then — has been processed. Events
// out of order, minutes late in the queue, retried or redriven from the
// DLQ all keep the queue from draining, so none of them is passed over.
func (e Evidence) CaughtUp(t time.Time) bool {
	return !e.Newest.IsZero() && !e.Newest.Before(t) && e.Drained.After(t.Add(e.Bound))
}

// Settlement is how a row whose send may have happened is settled.
type Settlement int

const (
	// Backfill: provider evidence names the row; mark it sent from the
	// evidence, without resending (R-OUTBOX-6).
	Backfill Settlement = iota
	// Await: no evidence yet, and the evidence path has not caught up past
	// the send: the send may still show up. Hold the row, never resend.
	Await
	// Resend: the evidence path has caught up past the send
	// (Evidence.CaughtUp) and no event names the row: the send did not
	// happen. Release the row to be claimed again.
	Resend
	// Withhold: as Resend, but the operator chose to hold uncertain sends
	// (HoldUncertain): the row is never sent again without evidence; it
	// waits for its events or an operator (R-EVIDENCE-9).
	Withhold
)

func (s Settlement) String() string {
	return [...]string{"backfill", "await", "resend", "withhold"}[s]
}

// SentBy is the latest time a send of the row under its last claim can
// have reached the provider: the claim's lease (a notifier sends only while
// its lease lasts), else the row's last update.
func (r Row) SentBy() time.Time {
	if !r.LeaseUntil.IsZero() {
		return r.LeaseUntil
	}
	return r.UpdatedAt
}

// Settle decides a row that Decide sent to reconciliation, from the
// evidence on the row and how far the evidence path has caught up.
//
// Missing evidence proves nothing by itself: SES publishes events through
// SNS, and a stalled path (the feedback function failing, SNS trouble, a
// misconfigured configuration set) looks exactly like a send that never
// happened; so does an event that sits in the feedback queue behind a
// timed-out batch. Only once the evidence path has caught up past
// SentBy() (Evidence.CaughtUp) does silence mean the send did not happen.
func Settle(r Row, ev Evidence) Settlement {
	if r.HasEvidence() || r.NotificationID != "" {
		return Backfill
	}
	if !ev.CaughtUp(r.SentBy()) {
		return Await
	}
	if ev.Policy == HoldUncertain {
		return Withhold
	}
	return Resend
}

// Held reports whether a row is held for provider evidence for longer than
// a healthy evidence path takes: in `sending` with no evidence, its lease
// expired more than twice the margin ago. A held row makes the job
// needs_intervention until it settles (by evidence, or an operator), and
// the HeldDeliveries metric counts it.
func (r Row) Held(now time.Time, margin time.Duration) bool {
	return r.Status == StatusSending && r.NotificationID == "" && !r.HasEvidence() &&
		now.After(r.SentBy().Add(2*margin))
}

// Outcome summarises a job's rows for finalization (R-OUTBOX-8).
type Outcome int

const (
	// Incomplete: some row still needs a send, or is in flight.
	Incomplete Outcome = iota
	// Complete: every required recipient has notified_at, or was terminally
	// skipped without a send.
	Complete
	// Blocked: every row is settled but at least one failed permanently or is
	// held for reconciliation: the job needs intervention.
	Blocked
)

// Summarize decides the job outcome from its rows. A row under
// reconciliation has notified_at (it was marked sent) but counts as
// blocked, not complete: its send is in doubt until an operator, or late
// evidence, settles it.
func Summarize(rows []Row) Outcome {
	blocked := false
	for _, r := range rows {
		switch {
		case r.Status == StatusFailedPermanent || r.Status == StatusReconciling:
			blocked = true
		case !r.NotifiedAt.IsZero() || r.Status.Done():
		default:
			return Incomplete
		}
	}
	if blocked {
		return Blocked
	}
	return Complete
}
