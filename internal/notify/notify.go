// Package notify is the notify stage: the outbox that mails each
// recipient a version's critique exactly once (R-OUTBOX-*), after the
// gates (gate.go) settle the rows nobody is to be mailed.
package notify

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/criticizer/criticizer/internal/critic"
	"github.com/criticizer/criticizer/internal/delivery"
	"github.com/criticizer/criticizer/internal/job"
	"github.com/criticizer/criticizer/internal/mail"
	"github.com/criticizer/criticizer/internal/pipeline"
	"github.com/criticizer/criticizer/internal/prefs"
	"github.com/criticizer/criticizer/internal/retry"
	"github.com/criticizer/criticizer/internal/store"
	"github.com/criticizer/criticizer/internal/unsubscribe"
	"github.com/criticizer/criticizer/internal/vote"
)

// Sender sends one rendered message to one recipient and returns the
// provider's message id. It must not retry a send by itself: a send whose
// answer was lost is settled from provider evidence (reconcile), never by
// sending again blindly.
type Sender interface {
	Send(ctx context.Context, deliveryID, to string, m delivery.Message) (string, error)
}

// Prober sends an evidence probe (mail.Sender.SendProbe).
type Prober interface {
	SendProbe(ctx context.Context, id string) (string, error)
}

// Pacer holds a send back until the account's send rate has room
// (ratelimit.Limiter); it returns a RATE_LIMITED error when none comes in
// time, and QUOTA_EXHAUSTED while the account's daily quota is spent
// (R-RATE-3).
type Pacer interface {
	Wait(ctx context.Context) error
}

// Notify is the notify stage: the outbox and the send-then-mark protocol of
// R-OUTBOX-1, R-OUTBOX-3, R-OUTBOX-8.
type Notify struct {
	pipeline.Base
	Deliveries store.Deliveries
	Renderer   *mail.Renderer
	Sender     Sender
	// Pacer, if set, is waited on before each claim, so a row is claimed
	// only when it can be sent at once: no provider event can slip in
	// between the claim's evidence check and the send while a limiter
	// waits.
	Pacer Pacer
	// Evidence is the evidence path of ConfigurationSet (how far the
	// feedback function has processed SES events). Nil: a send whose
	// answer was lost is held until evidence names it or an operator
	// settles it, never resent automatically.
	Evidence         Evidence
	ConfigurationSet string
	// Prober, if set, sends an evidence probe when a held row needs an
	// event newer than its send and no other mail brings one; ProbeEvery bounds
	// probes while the evidence path is down.
	Prober     Prober
	ProbeEvery time.Duration
	// Lease is how long a claim protects a row in `sending`; it must exceed
	// the longest SES call by a wide margin.
	Lease time.Duration
	// Margin is the longest SES takes to get a message's Send event onto
	// the feedback queue after accepting it (delivery.Evidence.Bound):
	// silence about a send counts as proof only once the evidence path
	// has drained past the send plus Margin.
	Margin time.Duration
	// Policy is what a send whose answer was lost does once the evidence
	// path caught up past it with no event naming it: resend (the zero
	// value) or hold (R-EVIDENCE-9).
	Policy delivery.UncertainSend
	// MarkTimeout bounds the write that marks a row sent. It runs on a
	// context that outlives the invocation's, and the send starts only if
	// the invocation has that much time left after the send's own timeout:
	// a provider message id, once known, is not thrown away by a deadline.
	MarkTimeout time.Duration
	// SendTimeout bounds one send (the Sender's own timeout too).
	SendTimeout time.Duration
	// Recipients holds suppressions and preference records (mutes,
	// unsubscribes, minimum severities, delivery modes), read once per
	// run for every recipient before any row is rendered (R-UNSUB-2,
	// R-PREF-3): the standing and digest gates answer from what it read.
	// Nil: every recipient gets every finding, at once.
	Recipients Standings
	// Gates settle, before any claim, the rows nobody is to be mailed
	// (gate.go): a deployment lists those of the features it has. The
	// zero Gates mails every row.
	Gates Gates
	// Signer and PublicURL make each recipient's unsubscribe link (footer
	// and List-Unsubscribe header). Either unset: no link.
	Signer    *unsubscribe.Signer
	PublicURL string
	// Votes mints each finding's vote links under PublicURL
	// (R-VOTE-1). Nil or no PublicURL: no links.
	Votes *vote.Signer
	// Prefs mints each recipient's preference link under PublicURL, in
	// the footer (R-PREF-2). Nil or no PublicURL: no link.
	Prefs *prefs.Signer
	// Replies, if set, gives each email its Reply-To address under
	// InboundDomain (R-REPLY-1, notify_votes.go). Nil or no domain: no
	// Reply-To.
	Replies       ReplyAddresses
	InboundDomain string
	// Dismissals, if set, keeps from each recipient's email the findings
	// they marked wrong in an earlier one, while the lines those flag are
	// unchanged (R-VOTE-3, notify_dismiss.go). Nil: every finding is shown.
	Dismissals Dismissals
	// MinSeverity hides findings below it from the email
	// (CRITICIZER_MIN_SEVERITY); a repository's min_severity can raise it
	// (R-REPO-5). "": every finding is shown.
	MinSeverity critic.Severity
	// Tokens makes claim tokens and probe ids for the invocation ctx
	// belongs to; nil draws them from crypto/rand. The explorer
	// (internal/explore) names them, so that a run is a function of its
	// choices.
	Tokens func(ctx context.Context) string

	// Threads names each recipient's conversation about a changelist, sent
	// as References and In-Reply-To (R-THREAD-1); ListID is the deploy's
	// list id, sent as List-Id (R-MAIL-4). Nil or empty: no such header.
	Threads *mail.Threads
	ListID  string
	// Titles keeps the title each changelist's emails are named by, so
	// the subject stays when the title is edited (R-THREAD-1). Nil: the
	// subject names the version's own title.
	Titles ThreadTitles
}

// Evidence is what notify reads and claims of the evidence path
// (store.Evidence).
type Evidence interface {
	State(ctx context.Context, set string) (store.EvidenceState, error)
	ClaimProbe(ctx context.Context, set string, need time.Time, every time.Duration) (bool, error)
	ForgetProbe(ctx context.Context, set string) error
}

// Standings reads recipients' suppressions and preference records in one
// read (store.Preferences.Standings).
type Standings interface {
	Standings(ctx context.Context, ids []string) (map[string]delivery.Standing, error)
}

// Handle runs the notify stage for one message.
func (n *Notify) Handle(ctx context.Context, m job.Message, attempt int) error {
	if m.Task == job.TaskDigest {
		return n.handleDigest(ctx, string(m.JobID))
	}
	if m.Task == job.TaskReply {
		return n.confirm(ctx, m.Delivery) // a reply's confirmation, not the job's run
	}
	j, ok, err := n.Begin(ctx, m, job.StageNotify)
	if err != nil || !ok {
		return err
	}
	// A reviewer added to the version while this run mails the others
	// (R-REVIEWERS-1) makes the verdict fail its condition: the run goes
	// again with the job as it is now, so the newcomer is mailed before
	// the job is closed.
	for round := 1; ; round++ {
		err = n.run(ctx, j, attempt)
		if !errors.Is(err, errReviewersAdded) {
			return err
		}
		if round == 3 {
			return retry.Transient(retry.InFlight, fmt.Errorf("job %s: reviewers keep being added", j.ID))
		}
		if j, err = n.Jobs.Get(ctx, j.ID); err != nil {
			return err
		}
		if j.Stage != job.StageNotify {
			return nil
		}
	}
}

// errReviewersAdded: the job's verdict was not written because reviewers
// were added since the run read the job.
var errReviewersAdded = errors.New("reviewers were added to the version")

// run mails the version's recipients and closes the job.
func (n *Notify) run(ctx context.Context, j job.Job, attempt int) error {
	if j.Skipped != "" {
		return n.finalize(ctx, j, attempt, nil) // nobody is mailed (R-REPO-4)
	}
	var c critic.Critique
	if err := json.Unmarshal(j.Critique, &c); err != nil {
		return retry.Permanent(retry.SchemaInvalid, fmt.Errorf("job %s critique: %w", j.ID, err))
	}
	c = n.belowMinSeverity(ctx, j, c)
	// Every recipient's standing and preferences, read once, before any
	// row is rendered: the minimum severity shapes the email, the mutes
	// and unsubscribes settle the row.
	standings, err := n.readStandings(ctx, j)
	if err != nil {
		return err
	}
	rows, err := n.ensureRows(ctx, j, c, standings)
	if err != nil {
		return err
	}
	versions, err := delivery.Versions(rows)
	if err != nil {
		return retry.Permanent(retry.RuntimeBug, err)
	}
	r := &Run{Job: j, Critique: c, Rows: versions, Standings: standings, log: n.Log, jobs: n.Jobs, deliveries: n.Deliveries}
	if err := n.settle(ctx, r); err != nil {
		return err
	}
	rows, wait := delivery.Stored(r.Rows), r.Wait
	var pending error
	ev := &evidenceView{n: n}
	for i := range rows {
		if wait.holds(rows[i].ID) {
			continue // a newer version may still reach its recipient (R-QUIET-3)
		}
		r, err := n.deliver(ctx, rows[i], ev)
		rows[i] = r
		if err != nil {
			cls := retry.Classify(err)
			if !cls.Retryable() {
				return err
			}
			// Keep going: one recipient's transient failure must not hold up
			// the others. The stage is retried for what is left.
			pending = charged(pending, err)
		}
	}
	if pending != nil {
		n.holdJob(ctx, j, rows)
		return pending // the runner records it on the job and backs off
	}
	if wait.any() {
		return n.await(ctx, j, rows, wait)
	}
	return n.finalize(ctx, j, attempt, rows)
}

// deliver carries one row through R-OUTBOX-3: decide from the row as
// read, claim (the authoritative re-read), send, then mark in one write.
func (n *Notify) deliver(ctx context.Context, r delivery.Row, ev *evidenceView) (delivery.Row, error) {
	for range 3 {
		switch act := delivery.Decide(r, n.Now()); act {
		case delivery.Skip, delivery.Hold:
			return r, nil
		case delivery.Wait:
			return r, retry.WithRetryAfter(retry.Transient(retry.InFlight, fmt.Errorf("delivery %s is being sent by another worker", r.ID)), r.LeaseUntil.Sub(n.Now()))
		case delivery.Reconcile:
			next, err := n.reconcile(ctx, r, ev)
			if err != nil {
				return next, err
			}
			r = next
		case delivery.Claim:
			next, again, err := n.claimSendMark(ctx, r)
			if !again {
				return next, err
			}
			r = next
		}
	}
	return r, retry.Transient(retry.Conflict, fmt.Errorf("delivery %s kept changing under us", r.ID))
}

// current resolves a conditional write to row id that may have lost to a
// change of the row since it was read (store.ErrConflict: another worker,
// or provider evidence recorded meanwhile): the row is then read again, so
// the caller goes on from the row as it is now, and lost reports it. Any
// other outcome is returned as it is.
func (n *Notify) current(ctx context.Context, id string, row delivery.Row, err error) (_ delivery.Row, lost bool, _ error) {
	if !errors.Is(err, store.ErrConflict) {
		return row, false, err
	}
	cur, err := n.Deliveries.Get(ctx, id)
	return cur, true, err
}
