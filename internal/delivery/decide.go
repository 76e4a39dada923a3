package delivery

import "time"

// Action is what the notifier does next with a row it has just read.
type Action int

const (
	// Skip: already sent or terminal; never send again (§6.3 "If a row already
	// exists with notified_at populated, skip send").
	Skip Action = iota
	// Claim: safe to attempt a send (§6.4 "If notified_at is null and
	// notification_id is null, safe to attempt send").
	Claim
	// Wait: another worker holds a live lease on the row.
	Wait
	// Reconcile: a send may have happened (notification_id without
	// notified_at, or a lease that expired mid-send); look for provider
	// evidence before deciding to resend (§6.4, §8.2).
	Reconcile
	// Hold: the row is failed permanently or under reconciliation; it needs an
	// operator and is never sent automatically (§8.1, §8.3).
	Hold
)

func (a Action) String() string {
	return [...]string{"skip", "claim", "wait", "reconcile", "hold"}[a]
}

// Decide applies seed 000 §6.4's re-read rules to a freshly read row.
func Decide(r Row, now time.Time) Action {
	switch {
	case r.Status == StatusReconciling:
		// Marked sent without provider evidence (§8.3): an operator decides.
		return Hold
	case !r.NotifiedAt.IsZero() || r.Status.Done():
		return Skip
	case r.Status == StatusFailedPermanent:
		return Hold
	case r.NotificationID != "", r.HasEvidence():
		// Provider evidence of a send settles a row in flight at once; no
		// need to wait out the sender's lease.
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

// Outcome summarises a job's rows for finalization (seed 000 §6.5).
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

// Summarize decides the job outcome from its rows.
func Summarize(rows []Row) Outcome {
	blocked := false
	for _, r := range rows {
		switch {
		case !r.NotifiedAt.IsZero() || r.Status.Done():
		case r.Status == StatusFailedPermanent || r.Status == StatusReconciling:
			blocked = true
		default:
			return Incomplete
		}
	}
	if blocked {
		return Blocked
	}
	return Complete
}
