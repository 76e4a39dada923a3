package pipeline

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/criticizer/criticizer/internal/critic"
	"github.com/criticizer/criticizer/internal/delivery"
	"github.com/criticizer/criticizer/internal/job"
	"github.com/criticizer/criticizer/internal/mail"
	"github.com/criticizer/criticizer/internal/retry"
	"github.com/criticizer/criticizer/internal/store"
	"github.com/criticizer/criticizer/internal/unsubscribe"
)

// Sender sends one rendered message to one recipient and returns the
// provider's message id.
type Sender interface {
	Send(ctx context.Context, deliveryID, to string, m delivery.Message) (string, error)
}

// Notify is the notify stage: the outbox and the send-then-mark protocol of
// seed 000 §6.3–6.5.
type Notify struct {
	Base
	Deliveries *store.Deliveries
	Renderer   *mail.Renderer
	Sender     Sender
	// Lease is how long a claim protects a row in `sending`; it must exceed
	// the longest SES call by a wide margin.
	Lease time.Duration
	// Grace is how long after a lease expires, with no provider evidence,
	// before the send is taken not to have happened and the row is claimed
	// again (seed 000 §8.2: "never mark failed ... until reconciliation
	// attempted").
	Grace time.Duration
	// Recipients holds unsubscribes and suppressions, checked once per job
	// before any send (issue 6 §2–3). Nil: every recipient is mailed.
	Recipients *store.Recipients
	// Signer and PublicURL make each recipient's unsubscribe link (footer
	// and List-Unsubscribe header). Either unset: no link.
	Signer    *unsubscribe.Signer
	PublicURL string
}

// Handle runs the notify stage for one message.
func (n *Notify) Handle(ctx context.Context, m job.Message, attempt int) error {
	j, ok, err := n.begin(ctx, m, job.StageNotify)
	if err != nil || !ok {
		return err
	}
	var c critic.Critique
	if err := json.Unmarshal(j.Critique, &c); err != nil {
		return retry.Permanent(retry.SchemaInvalid, fmt.Errorf("job %s critique: %w", j.ID, err))
	}
	rows, err := n.ensureRows(ctx, j, c)
	if err != nil {
		return err
	}
	if err := n.gate(ctx, j, rows); err != nil {
		return err
	}
	var pending error
	for i := range rows {
		r, err := n.deliver(ctx, rows[i])
		if err != nil {
			cls := retry.Classify(err)
			if !cls.Retryable() {
				return err
			}
			// Keep going: one recipient's transient failure must not hold up
			// the others. The stage is retried for what is left.
			pending = charged(pending, err)
			continue
		}
		rows[i] = r
	}
	if pending != nil {
		return pending // the runner records it on the job and backs off
	}
	return n.finalize(ctx, j, attempt, rows)
}

// ensureRows creates one outbox row per recipient before any send, each with
// its rendered message (seed 000 §6.3). Existing rows are returned as stored.
//
// A reviewer the fetch stage found no address for gets a row too, keyed by
// its "<source>:<username>" identity, created terminal as skipped_no_email:
// it is never sent (no address is ever guessed), and it counts as settled
// when the job is finalized.
func (n *Notify) ensureRows(ctx context.Context, j job.Job, c critic.Critique) ([]delivery.Row, error) {
	clKey := job.ChangelistKey(j.Source, j.ChangelistID)
	repo := unsubscribe.Repository(j.Source, j.ChangelistID)
	data := mail.Data{Source: j.Source, ChangelistID: j.ChangelistID, ReviewVersion: j.ReviewVersion, Title: j.Title, URL: j.URL, Author: j.Author, Critique: c}
	var noEmail []string
	var err error
	if j.Source != "generic" {
		if noEmail, err = n.Jobs.NoEmailReviewers(ctx, j.ID); err != nil {
			return nil, err
		}
	}
	now := n.Now().UTC()
	rows := make([]delivery.Row, 0, len(j.Recipients)+len(noEmail))
	for _, rcpt := range j.Recipients {
		// Rendered per recipient: the footer carries the recipient's own
		// unsubscribe link. A row that exists keeps the bytes it was created
		// with (Ensure does not overwrite).
		data.UnsubscribeURL = n.Signer.URL(n.PublicURL, unsubscribe.RecipientID(rcpt), repo)
		msg, err := n.Renderer.Render(data)
		if err != nil {
			return nil, retry.Permanent(retry.RuntimeBug, err)
		}
		r := delivery.Row{
			ID: delivery.ID(clKey, rcpt, j.ReviewVersion), JobID: j.ID, ChangelistKey: clKey,
			Recipient: delivery.NormalizeRecipient(rcpt), ReviewVersion: j.ReviewVersion,
			Status: delivery.StatusPending, Message: msg, CreatedAt: now, UpdatedAt: now,
		}
		got, _, err := n.Deliveries.Ensure(ctx, r)
		if err != nil {
			return nil, err
		}
		rows = append(rows, got)
	}
	for _, who := range noEmail {
		r := delivery.Row{
			ID: delivery.ID(clKey, who, j.ReviewVersion), JobID: j.ID, ChangelistKey: clKey,
			Recipient: delivery.NormalizeRecipient(who), ReviewVersion: j.ReviewVersion,
			Status: delivery.StatusSkippedNoEmail, CreatedAt: now, UpdatedAt: now,
		}
		got, created, err := n.Deliveries.Ensure(ctx, r)
		if err != nil {
			return nil, err
		}
		if created {
			n.Log.InfoContext(ctx, "reviewer has no known address; delivery skipped", "delivery_id", r.ID, "job_id", j.ID)
		}
		rows = append(rows, got)
	}
	return rows, nil
}

// gate settles, without a send, the rows of recipients who unsubscribed
// from this repository (or from everything) as skipped_unsubscribed, and of
// suppressed addresses as suppressed: seed 004's "Suppressed delivery doesn't
// retry" and "skipped_unsubscribed" lifecycle. It reads every recipient's
// standing in one BatchGetItem, and touches only rows that were never sent;
// a row in flight or sent keeps its course. rows is updated in place.
func (n *Notify) gate(ctx context.Context, j job.Job, rows []delivery.Row) error {
	if n.Recipients == nil {
		return nil
	}
	unsent := func(r delivery.Row) bool {
		return r.Status.Claimable() && r.NotificationID == "" && r.NotifiedAt.IsZero() && !r.HasEvidence()
	}
	var ids []string
	for _, r := range rows {
		if unsent(r) {
			ids = append(ids, unsubscribe.RecipientID(r.Recipient))
		}
	}
	if len(ids) == 0 {
		return nil
	}
	standings, err := n.Recipients.Standings(ctx, ids)
	if err != nil {
		return err
	}
	repo := unsubscribe.Repository(j.Source, j.ChangelistID)
	for i, r := range rows {
		if !unsent(r) {
			continue
		}
		st := standings[unsubscribe.RecipientID(r.Recipient)]
		status, skip := st.SkipAs(repo)
		if !skip {
			continue
		}
		reason := st.Reason
		if status == delivery.StatusSkippedUnsubscribed {
			reason = "repository"
			if st.UnsubscribedAll {
				reason = "all"
			}
		}
		got, err := n.Deliveries.Skip(ctx, r.ID, status, reason)
		if errors.Is(err, store.ErrConflict) {
			// Claimed or settled since we read it: take it as it is now.
			got, err = n.Deliveries.Get(ctx, r.ID)
		}
		if err != nil {
			return err
		}
		rows[i] = got
		if got.Status == status {
			n.Log.InfoContext(ctx, "delivery skipped", "delivery_id", r.ID, "job_id", j.ID, "status", status, "reason", reason)
		}
	}
	return nil
}

// deliver carries one row through seed 000 §6.4: decide from the row as
// read, claim (the authoritative re-read), send, then mark in one write.
func (n *Notify) deliver(ctx context.Context, r delivery.Row) (delivery.Row, error) {
	for range 3 {
		switch act := delivery.Decide(r, n.Now()); act {
		case delivery.Skip, delivery.Hold:
			return r, nil
		case delivery.Wait:
			return r, retry.WithRetryAfter(retry.Transient(retry.InFlight, fmt.Errorf("delivery %s is being sent by another worker", r.ID)), time.Until(r.LeaseUntil))
		case delivery.Reconcile:
			next, err := n.reconcile(ctx, r)
			if err != nil {
				return r, err
			}
			r = next
		case delivery.Claim:
			return n.claimSendMark(ctx, r)
		}
	}
	return r, retry.Transient(retry.Conflict, fmt.Errorf("delivery %s kept changing under us", r.ID))
}

func (n *Notify) claimSendMark(ctx context.Context, r delivery.Row) (delivery.Row, error) {
	token := newToken()
	claimed, err := n.Deliveries.Claim(ctx, r.ID, token, n.Lease)
	if errors.Is(err, store.ErrConflict) {
		// Someone else changed it since we read it: read again and decide.
		fresh, gerr := n.Deliveries.Get(ctx, r.ID)
		if gerr != nil {
			return r, gerr
		}
		if delivery.Decide(fresh, n.Now()) == delivery.Skip {
			return fresh, nil
		}
		return fresh, retry.WithRetryAfter(retry.Transient(retry.InFlight, fmt.Errorf("delivery %s claimed by another worker", r.ID)), time.Until(fresh.LeaseUntil))
	}
	if err != nil {
		return r, err
	}
	msgID, sendErr := n.Sender.Send(ctx, claimed.ID, claimed.Recipient, claimed.Message)
	if sendErr != nil {
		cls := retry.Classify(sendErr)
		var notSent *delivery.NotSentError
		if sendMayHaveHappened(cls.Class) && !errors.As(sendErr, &notSent) {
			// A timeout, a dropped connection or a 5xx: SES may have
			// accepted the message. The row stays `sending` under our
			// lease and the retry reconciles from provider evidence before
			// any resend, as after a crash (seed 000 §8.2, §10.3).
			return claimed, sendErr
		}
		status := delivery.StatusFailedTransient
		if !cls.Retryable() {
			// Seed 000 §8.1: permanent failures (invalid recipient, policy
			// rejection) mark the row failed and need intervention. A failed
			// send call is evidence nothing was sent.
			status = delivery.StatusFailedPermanent
		}
		// Released even when the invocation's deadline is what failed the
		// send: a row left `sending` would wait out its lease and the
		// reconciliation grace before anyone sent it.
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		released, rerr := n.Deliveries.Release(rctx, claimed.ID, token, status, string(cls.Class))
		cancel()
		if rerr != nil {
			n.Log.ErrorContext(ctx, "could not release a failed claim; the lease will expire", "delivery_id", claimed.ID, "error", rerr)
			released = claimed
		}
		if !cls.Retryable() {
			n.Log.WarnContext(ctx, "delivery failed permanently", "delivery_id", claimed.ID, "error_class", cls.Class)
			return released, nil
		}
		return released, sendErr
	}
	marked, err := n.Deliveries.MarkSent(ctx, claimed.ID, token, msgID)
	if err != nil {
		// The provider accepted the message; the row stays `sending` under
		// our lease, and the retry reconciles from provider evidence rather
		// than sending again (seed 000 §8.2, "Email sent but DB write failed").
		return claimed, fmt.Errorf("mark %s sent: %w", claimed.ID, err)
	}
	n.Log.InfoContext(ctx, "delivery sent", "delivery_id", marked.ID, "job_id", marked.JobID, "attempts", marked.Attempts)
	return marked, nil
}

// sendMayHaveHappened reports whether a failed send call may still have
// been accepted by the provider: the request may have reached it and only
// the answer was lost or failed. A throttle or a rejection is an answer:
// nothing was sent.
func sendMayHaveHappened(c retry.Class) bool {
	switch c {
	case retry.NetworkTimeout, retry.NetworkError, retry.Upstream5xx, retry.Unknown:
		return true
	}
	return false
}

// reconcile handles a row where a send may have happened: if provider
// evidence is on the row (recorded by the feedback function from SES
// events, matched by the delivery id tag), backfill it as sent without
// resending; otherwise, once the grace window after the lease has passed,
// return it to failed_transient so it can be claimed (seed 000 §6.4, §8.2).
func (n *Notify) reconcile(ctx context.Context, r delivery.Row) (delivery.Row, error) {
	if r.HasEvidence() {
		at := r.SendEventAt
		if at.IsZero() {
			at = n.Now()
		}
		n.Log.InfoContext(ctx, "provider evidence found; backfilling without resending", "delivery_id", r.ID)
		row, err := n.Deliveries.Backfill(ctx, r.ID, r.ProviderMessageID, at)
		if errors.Is(err, store.ErrConflict) {
			return n.Deliveries.Get(ctx, r.ID)
		}
		return row, err
	}
	since := r.LeaseUntil
	if since.IsZero() {
		since = r.UpdatedAt
	}
	if wait := since.Add(n.Grace).Sub(n.Now()); wait > 0 {
		return r, retry.WithRetryAfter(retry.Transient(retry.InFlight, fmt.Errorf("delivery %s: send may have happened; awaiting provider evidence", r.ID)), wait)
	}
	n.Log.WarnContext(ctx, "no provider evidence after the grace window; sending again", "delivery_id", r.ID)
	row, err := n.Deliveries.Requeue(ctx, r.ID, string(retry.InFlight))
	if errors.Is(err, store.ErrConflict) {
		return n.Deliveries.Get(ctx, r.ID)
	}
	return row, err
}

// finalize applies seed 000 §6.5: succeeded only when every required
// recipient's row has notified_at.
func (n *Notify) finalize(ctx context.Context, j job.Job, attempt int, rows []delivery.Row) error {
	switch delivery.Summarize(rows) {
	case delivery.Complete:
		err := n.Jobs.Advance(ctx, j.ID, job.StageNotify, attempt, job.StatusSucceeded, nil)
		if errors.Is(err, store.ErrConflict) {
			return nil // a concurrent worker finalized it
		}
		return err
	case delivery.Blocked:
		err := n.Jobs.SetStatus(ctx, j.ID, job.StageNotify, job.StatusNeedsIntervention, nil)
		if errors.Is(err, store.ErrConflict) {
			return nil
		}
		return err
	}
	return retry.Transient(retry.InFlight, fmt.Errorf("job %s: deliveries still in flight", j.ID))
}

// charged picks, of two retryable failures of one notify run, the one the
// stage reports. A RATE_LIMITED failure is deferred without spending the
// attempt budget (internal/stage), so it must not hide another row's
// failure that should spend it: otherwise a row failing with a 5xx next to
// a throttled one would be retried for ever.
func charged(prev, next error) error {
	if prev == nil {
		return next
	}
	if retry.Classify(prev).Class == retry.RateLimited {
		return next
	}
	return prev
}

func newToken() string {
	b := make([]byte, 12)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
