package delivery

import "github.com/criticizer/criticizer/internal/job"

// Successor is what a newer quiet version of a changelist is to one
// recipient whose row of an older version was never sent (R-QUIET-3):
// the older row is settled superseded only once a newer version has
// reached the recipient, and mailed once none can.
type Successor int

const (
	// Unreachable: the newer version will not reach the recipient. Its
	// job ended without mailing them — refused by a budget, nobody to
	// read it, skipped by its repository's settings, dead-lettered with
	// their row never sent, finished without a row for them — or their
	// row was settled without a send (refused for good, unsubscribed,
	// suppressed, no address, a domain not allowed), or sent and then
	// undone by SES (a Reject, a bounce: Row.Undone).
	Unreachable Successor = iota
	// Undecided: the newer version may still reach the recipient: its
	// job is still on its way, or their row is not sent yet, or its send
	// is in doubt until provider evidence settles it.
	Undecided
	// Reached: the recipient has the newer version's content: their row
	// was sent (SES accepted it) and no Reject or bounce undid it since,
	// settled because they had that content already (the same diff,
	// nothing new), superseded by a version that reached them in turn,
	// or gathered into their daily digest, whose row carries it on
	// (R-DIGEST-2). Row.Carries(StatusSuperseded).
	Reached
)

func (s Successor) String() string { return [...]string{"unreachable", "undecided", "reached"}[s] }

// Judge says what newer, a quiet version newer than the row's, is to the
// row's recipient, from newer's job and its row for that recipient (ok
// false: it has none). A row that another writer may still move —
// claimable in a job that is not dead-lettered, or in `sending` — is
// undecided; everything else is final, save an operator's replay of a
// dead-lettered job, which mails that version too.
func Judge(newer job.Job, r Row, ok bool) Successor {
	if !ok {
		if newer.Status.Terminal() || newer.Skipped != "" {
			return Unreachable
		}
		return Undecided
	}
	switch {
	case r.Carries(StatusSuperseded):
		return Reached
	case r.Status == StatusSending:
		return Undecided
	case r.Status.Claimable():
		if newer.Status == job.StatusDeadLettered {
			return Unreachable
		}
		return Undecided
	}
	return Unreachable
}

// Supersession is the decision for an older version's unsent row, from
// what each newer quiet version is to its recipient.
type Supersession struct {
	// By is the newest version that reached the recipient: the row is
	// settled superseded, naming it. 0: none did.
	By int
	// Wait: none reached the recipient yet, and one may still; the row is
	// left as it is, unclaimed, and looked at again.
	Wait bool
}

// Supersede decides an older row from the newer versions judged for its
// recipient (version → Successor): superseded by the newest that reached
// them; else wait while any may still; else (every newer one
// unreachable, or none at all) the row is mailed, the newest version
// that can be.
func Supersede(judged map[int]Successor) Supersession {
	var s Supersession
	for v, j := range judged {
		switch j {
		case Reached:
			s.By = max(s.By, v)
		case Undecided:
			s.Wait = true
		}
	}
	if s.By > 0 {
		s.Wait = false
	}
	return s
}
