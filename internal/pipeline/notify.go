package pipeline

import (
	"cmp"
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
	"github.com/criticizer/criticizer/internal/obs"
	"github.com/criticizer/criticizer/internal/retry"
	"github.com/criticizer/criticizer/internal/store"
	"github.com/criticizer/criticizer/internal/unsubscribe"
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
	Base
	Deliveries store.Outbox
	Renderer   *mail.Renderer
	Sender     Sender
	// Pacer, if set, is waited on before each claim, so a row is claimed
	// only when it can be sent at once: no provider event can slip in
	// between the claim's evidence check and the send while a limiter
	// waits.
	Pacer Pacer
	// Evidence is the feedback function's watermark for ConfigurationSet.
	// Nil: a send whose answer was lost is held until evidence names it or
	// an operator settles it, never resent automatically.
	Evidence         Evidence
	ConfigurationSet string
	// Prober, if set, sends an evidence probe when a held row needs the
	// watermark to move and no other mail moves it; ProbeEvery bounds
	// probes while the evidence path is down.
	Prober     Prober
	ProbeEvery time.Duration
	// Lease is how long a claim protects a row in `sending`; it must exceed
	// the longest SES call by a wide margin.
	Lease time.Duration
	// Margin is how far the evidence watermark must pass a send whose
	// answer was lost before silence counts as proof that it did not
	// happen (delivery.Settle): SNS's reordering between messages' events.
	Margin time.Duration
	// MarkTimeout bounds the write that marks a row sent. It runs on a
	// context that outlives the invocation's, and the send starts only if
	// the invocation has that much time left after the send's own timeout:
	// a provider message id, once known, is not thrown away by a deadline.
	MarkTimeout time.Duration
	// SendTimeout bounds one send (the Sender's own timeout too).
	SendTimeout time.Duration
	// Recipients holds unsubscribes and suppressions, checked once per job
	// before any send. Nil: every recipient is mailed.
	Recipients Standings
	// Signer and PublicURL make each recipient's unsubscribe link (footer
	// and List-Unsubscribe header). Either unset: no link.
	Signer    *unsubscribe.Signer
	PublicURL string
}

// Evidence is what notify reads and claims of the evidence path
// (store.Evidence).
type Evidence interface {
	Watermark(ctx context.Context, set string) (time.Time, error)
	ClaimProbe(ctx context.Context, set string, need time.Time, every time.Duration) (bool, error)
	ForgetProbe(ctx context.Context, set string) error
}

// Standings reads recipients' unsubscribes and suppressions
// (store.Recipients).
type Standings interface {
	Standings(ctx context.Context, ids []string) (map[string]delivery.Standing, error)
}

// Handle runs the notify stage for one message.
func (n *Notify) Handle(ctx context.Context, m job.Message, attempt int) error {
	j, ok, err := n.begin(ctx, m, job.StageNotify)
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
	ev := &evidenceView{n: n}
	for i := range rows {
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
	return n.finalize(ctx, j, attempt, rows)
}

// holdJob marks the job needs_intervention while a row is held for
// provider evidence longer than a healthy evidence path takes: the job
// must not read as in progress and certainly never as succeeded while a
// reviewer may or may not have the email. Notify keeps retrying the row,
// and finalizes the job once evidence (or an operator) settles it.
func (n *Notify) holdJob(ctx context.Context, j job.Job, rows []delivery.Row) {
	if j.Status == job.StatusNeedsIntervention {
		return
	}
	now := n.Now()
	for _, r := range rows {
		if r.Held(now, n.Margin) {
			if err := n.Jobs.SetStatus(ctx, j.ID, job.StageNotify, job.StatusNeedsIntervention, nil); err != nil && !errors.Is(err, store.ErrConflict) {
				n.Log.WarnContext(ctx, "could not mark the job needs_intervention for a held delivery", "job_id", j.ID, "error", err)
			}
			n.Log.ErrorContext(ctx, "delivery held for provider evidence; the job needs intervention until it settles",
				"delivery_id", r.ID, "job_id", j.ID, "sent_by", r.SentBy())
			return
		}
	}
}

// ensureRows creates one outbox row per recipient before any send, each with
// its rendered message (R-OUTBOX-1). Existing rows are returned as stored.
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
	recipients := j.AllRecipients()
	rows := make([]delivery.Row, 0, len(recipients)+len(noEmail))
	for _, rcpt := range recipients {
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
// suppressed addresses as suppressed (R-UNSUB-2, R-EVIDENCE-6). It reads every recipient's
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

// deliver carries one row through R-OUTBOX-3: decide from the row as
// read, claim (the authoritative re-read), send, then mark in one write.
func (n *Notify) deliver(ctx context.Context, r delivery.Row, ev *evidenceView) (delivery.Row, error) {
	for range 3 {
		switch act := delivery.Decide(r, n.Now()); act {
		case delivery.Skip, delivery.Hold:
			return r, nil
		case delivery.Wait:
			return r, retry.WithRetryAfter(retry.Transient(retry.InFlight, fmt.Errorf("delivery %s is being sent by another worker", r.ID)), time.Until(r.LeaseUntil))
		case delivery.Reconcile:
			next, err := n.reconcile(ctx, r, ev)
			if err != nil {
				return next, err
			}
			r = next
		case delivery.Claim:
			next, err, again := n.claimSendMark(ctx, r)
			if !again {
				return next, err
			}
			r = next
		}
	}
	return r, retry.Transient(retry.Conflict, fmt.Errorf("delivery %s kept changing under us", r.ID))
}

// claimSendMark claims, sends and marks one row. again reports that the
// claim lost to a change of the row (another worker, provider evidence
// recorded since it was read): row is the row as it is now, to decide on.
func (n *Notify) claimSendMark(ctx context.Context, r delivery.Row) (row delivery.Row, err error, again bool) {
	sendCtx, cancel, ok := n.sendWindow(ctx)
	if !ok {
		// Too little of the invocation is left to send and then mark: a
		// send whose mark could not be written would be held for evidence.
		// Nothing was claimed; the runner defers the message.
		return r, retry.WithRetryAfter(retry.Transient(retry.RateLimited, fmt.Errorf("delivery %s: too little time left in the invocation to send and mark", r.ID)), time.Second), false
	}
	defer cancel()
	if n.Pacer != nil {
		// The send rate's slot first, the claim second: the claim is the
		// last check that no evidence names the row, so nothing may wait
		// between it and the send.
		if err := n.Pacer.Wait(sendCtx); err != nil {
			return r, err, false
		}
	}
	token := newToken()
	claimed, err := n.Deliveries.Claim(ctx, r.ID, token, n.Lease)
	if errors.Is(err, store.ErrConflict) {
		// Someone else changed it since we read it (another worker, or a
		// provider event that settles it): decide again on the row as it is.
		fresh, gerr := n.Deliveries.Get(ctx, r.ID)
		if gerr != nil {
			return r, gerr, false
		}
		return fresh, nil, true
	}
	if err != nil {
		return r, err, false
	}
	msgID, sendErr := n.Sender.Send(sendCtx, claimed.ID, claimed.Recipient, claimed.Message)
	if sendErr != nil {
		return n.sendFailed(ctx, claimed, token, sendErr)
	}
	return n.mark(ctx, claimed, token, msgID)
}

// sendWindow returns the context a send runs under: its own timeout, and
// enough of the invocation kept back to mark the row afterwards. ok=false:
// the invocation is too close to its deadline to start a send.
func (n *Notify) sendWindow(ctx context.Context) (context.Context, context.CancelFunc, bool) {
	timeout := cmp.Or(n.SendTimeout, defaultSendTimeout)
	if d, ok := ctx.Deadline(); ok {
		left := time.Until(d)
		// Keep the mark's time, or a quarter of what is left in a short
		// invocation (a test's, a small deployment timeout).
		reserve := min(cmp.Or(n.MarkTimeout, defaultMarkTimeout), left/4)
		timeout = min(timeout, left-reserve)
		if timeout < minSendWindow {
			return ctx, func() {}, false
		}
	}
	sctx, cancel := context.WithTimeout(ctx, timeout)
	return sctx, cancel, true
}

const (
	// defaultSendTimeout is the send's own bound when SendTimeout is unset
	// (the SES sender's is the same: sesmail.DefaultSendTimeout).
	defaultSendTimeout = 10 * time.Second
	defaultMarkTimeout = 10 * time.Second
	minSendWindow      = 200 * time.Millisecond
)

// sendFailed handles a failed send under our claim.
func (n *Notify) sendFailed(ctx context.Context, claimed delivery.Row, token string, sendErr error) (delivery.Row, error, bool) {
	cls := retry.Classify(sendErr)
	var notSent *delivery.NotSentError
	if sendMayHaveHappened(cls.Class) && !errors.As(sendErr, &notSent) {
		// A timeout, a dropped connection or a 5xx: SES may have accepted
		// the message. The row stays `sending` under our lease, and is
		// settled from provider evidence before any resend
		// (R-OUTBOX-6, R-OUTBOX-10): held, not released.
		n.Log.WarnContext(ctx, "send may have reached the provider; held for provider evidence",
			"delivery_id", claimed.ID, "error_class", cls.Class, "error", sendErr)
		return claimed, awaitingEvidence(claimed.ID, time.Until(claimed.LeaseUntil), sendErr), false
	}
	status := delivery.StatusFailedTransient
	if !cls.Retryable() {
		// R-OUTBOX-9: permanent failures (invalid recipient, policy
		// rejection) mark the row failed and need intervention. A failed
		// send call is evidence nothing was sent.
		status = delivery.StatusFailedPermanent
	}
	// Released even when the invocation's deadline is what failed the
	// send: a row left `sending` would wait for provider evidence before
	// anyone sent it.
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cmp.Or(n.MarkTimeout, defaultMarkTimeout))
	released, rerr := n.Deliveries.Release(rctx, claimed.ID, token, status, string(cls.Class))
	cancel()
	if rerr != nil {
		n.Log.ErrorContext(ctx, "could not release a failed claim; the lease will expire", "delivery_id", claimed.ID, "error", rerr)
		released = claimed
	}
	if !cls.Retryable() {
		n.Log.WarnContext(ctx, "delivery failed permanently", "delivery_id", claimed.ID, "error_class", cls.Class)
		return released, nil, false
	}
	return released, sendErr, false
}

// mark records the provider's acceptance: one write sets notification_id,
// notified_at and status=sent. It runs on a context that survives the
// invocation's deadline (the send window kept time for it): a message id
// SES returned is never thrown away. The SDK retries the write; if it
// still fails, the row stays `sending` and is backfilled from the send's
// provider event, and the message id is logged for the operator.
func (n *Notify) mark(ctx context.Context, claimed delivery.Row, token, msgID string) (delivery.Row, error, bool) {
	mctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cmp.Or(n.MarkTimeout, defaultMarkTimeout))
	defer cancel()
	marked, err := n.Deliveries.MarkSent(mctx, claimed.ID, token, msgID)
	if err != nil {
		n.Log.ErrorContext(ctx, "provider accepted the send but the row could not be marked; it will be settled from provider evidence",
			"delivery_id", claimed.ID, "provider_message_id", msgID, "error", err)
		return claimed, awaitingEvidence(claimed.ID, time.Until(claimed.LeaseUntil), fmt.Errorf("mark %s sent: %w", claimed.ID, err)), false
	}
	if marked.ProviderMessageID != "" && marked.ProviderMessageID != msgID {
		// Evidence of another send of this row came in while this one was
		// in flight (an event late beyond the margin): two emails.
		n.duplicate(ctx, marked, msgID)
	}
	n.Log.InfoContext(ctx, "delivery sent", "delivery_id", marked.ID, "job_id", marked.JobID, "attempts", marked.Attempts)
	return marked, nil, false
}

// duplicate records and alerts on a second send of a row.
func (n *Notify) duplicate(ctx context.Context, r delivery.Row, msgID string) {
	isNew, err := n.Deliveries.RecordDuplicate(ctx, r, msgID)
	if err != nil {
		n.Log.WarnContext(ctx, "could not record a duplicate send on the row", "delivery_id", r.ID, "error", err)
	}
	if isNew || err != nil {
		obs.Metric(ctx, n.Log, map[string]string{"Function": "notify"}, map[string]float64{"DuplicateSends": 1})
		n.Log.ErrorContext(ctx, "the row was sent twice: provider evidence names another message",
			"delivery_id", r.ID, "job_id", r.JobID, "provider_message_id", msgID, "evidence_message_id", r.ProviderMessageID)
	}
}

func awaitingEvidence(id string, after time.Duration, cause error) error {
	return retry.WithRetryAfter(retry.Transient(retry.AwaitingEvidence,
		fmt.Errorf("delivery %s: send may have happened; awaiting provider evidence: %w", id, cause)), max(after, time.Second))
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

// evidenceView reads the evidence watermark at most once per notify run.
type evidenceView struct {
	n    *Notify
	read bool
	wm   time.Time
	err  error
}

func (v *evidenceView) get(ctx context.Context) (delivery.Evidence, error) {
	if v.n.Evidence == nil {
		return delivery.Evidence{Margin: v.n.Margin}, nil
	}
	if !v.read {
		v.wm, v.err = v.n.Evidence.Watermark(ctx, v.n.ConfigurationSet)
		v.read = v.err == nil
	}
	return delivery.Evidence{Watermark: v.wm, Margin: v.n.Margin}, v.err
}

// reconcile settles a row whose send may have happened (delivery.Settle):
// from provider evidence on the row, backfilled as sent without a resend;
// once the evidence path has caught up past the send with no event naming
// the row, released to be sent again; otherwise held, never resent.
func (n *Notify) reconcile(ctx context.Context, r delivery.Row, view *evidenceView) (delivery.Row, error) {
	ev, err := view.get(ctx)
	if err != nil {
		return r, err
	}
	switch delivery.Settle(r, ev) {
	case delivery.Backfill:
		at, id := r.SendEventAt, cmp.Or(r.NotificationID, r.ProviderMessageID)
		if at.IsZero() {
			at = n.Now()
		}
		n.Log.InfoContext(ctx, "provider evidence found; backfilling without resending", "delivery_id", r.ID)
		row, err := n.Deliveries.Backfill(ctx, r.ID, id, at)
		if errors.Is(err, store.ErrConflict) {
			return n.Deliveries.Get(ctx, r.ID)
		}
		return row, err
	case delivery.Resend:
		row, err := n.Deliveries.Requeue(ctx, r.ID, string(retry.AwaitingEvidence))
		if errors.Is(err, store.ErrConflict) {
			return n.Deliveries.Get(ctx, r.ID)
		}
		if err == nil {
			obs.Metric(ctx, n.Log, map[string]string{"Function": "notify"}, map[string]float64{"ResentWithoutEvidence": 1})
			n.Log.WarnContext(ctx, "the evidence path caught up past a send whose answer was lost, and no event names it; sending again",
				"delivery_id", r.ID, "job_id", r.JobID, "sent_by", r.SentBy(), "watermark", ev.Watermark)
		}
		return row, err
	}
	// Await: the evidence path has not caught up past the send.
	if _, err := n.Deliveries.Awaiting(ctx, r.ID); err != nil && !errors.Is(err, store.ErrConflict) {
		n.Log.WarnContext(ctx, "could not note the wait on the row", "delivery_id", r.ID, "error", err)
	}
	need := r.SentBy().Add(n.Margin)
	wait := need.Sub(n.Now())
	if wait <= 0 {
		// Past the margin and still behind: nothing else may be moving the
		// watermark. A probe's events will, if the path works. It is sent
		// a little after need, so that an event clock coarser than ours
		// (the local emulator's is in seconds) still puts it past need.
		if n.Now().After(need.Add(probeSlack)) {
			n.probe(ctx, need.Add(probeSlack))
		}
		wait = min(max(n.Margin/4, time.Second), 30*time.Second)
	}
	return r, awaitingEvidence(r.ID, wait, fmt.Errorf("evidence watermark %s is before %s", ev.Watermark.UTC().Format(time.RFC3339), need.UTC().Format(time.RFC3339)))
}

// probeSlack is how long after the moment it must pass a probe is sent.
const probeSlack = time.Second

// probeEvery is how often probes may go while the evidence path stays
// behind (their events lost, or the path down): ProbeEvery, else twice the
// margin but at least 10 s.
func (n *Notify) probeEvery() time.Duration {
	if n.ProbeEvery > 0 {
		return n.ProbeEvery
	}
	return max(2*n.Margin, 10*time.Second)
}

func (n *Notify) forgetProbe(ctx context.Context) {
	if err := n.Evidence.ForgetProbe(ctx, n.ConfigurationSet); err != nil {
		n.Log.WarnContext(ctx, "could not forget a probe that was not sent", "error", err)
	}
}

// probe sends an evidence probe when one is needed to move the watermark
// past need and none that would serves is on its way.
func (n *Notify) probe(ctx context.Context, need time.Time) {
	if n.Prober == nil || n.Evidence == nil {
		return
	}
	ok, err := n.Evidence.ClaimProbe(ctx, n.ConfigurationSet, need, n.probeEvery())
	if err != nil || !ok {
		return
	}
	if n.Pacer != nil {
		if err := n.Pacer.Wait(ctx); err != nil {
			n.Log.WarnContext(ctx, "evidence probe not sent: no room in the send rate", "error", err)
			n.forgetProbe(ctx)
			return
		}
	}
	id := newToken()
	msgID, err := n.Prober.SendProbe(ctx, id)
	if err != nil {
		// The next notifier to look may probe again at once: a second
		// probe costs one message to the mailbox simulator, a missing one
		// holds the row for ProbeEvery.
		n.Log.WarnContext(ctx, "evidence probe failed", "error", err)
		n.forgetProbe(ctx)
		return
	}
	obs.Metric(ctx, n.Log, map[string]string{"Function": "notify"}, map[string]float64{"EvidenceProbes": 1})
	n.Log.InfoContext(ctx, "evidence probe sent", "probe_id", id, "provider_message_id", msgID)
}

// finalize applies R-OUTBOX-8: succeeded only when every required
// recipient's row has notified_at; and R-REVIEWERS-1: the verdict holds
// only for the reviewers the run read (errReviewersAdded otherwise).
func (n *Notify) finalize(ctx context.Context, j job.Job, attempt int, rows []delivery.Row) error {
	var status job.Status
	switch delivery.Summarize(rows) {
	case delivery.Complete:
		status = job.StatusSucceeded
	case delivery.Blocked:
		status = job.StatusNeedsIntervention
	default:
		return retry.Transient(retry.InFlight, fmt.Errorf("job %s: deliveries still in flight", j.ID))
	}
	err := n.Jobs.FinishNotify(ctx, j.ID, attempt, status, j.AddedRev)
	if !errors.Is(err, store.ErrConflict) {
		return err
	}
	now, gerr := n.Jobs.Get(ctx, j.ID)
	if gerr != nil {
		return gerr
	}
	if now.Stage == job.StageNotify && now.AddedRev != j.AddedRev {
		return errReviewersAdded
	}
	return nil // a concurrent worker finalized it
}

// charged picks, of two retryable failures of one notify run, the one the
// stage reports. A RATE_LIMITED or AWAITING_EVIDENCE failure is deferred
// without spending the attempt budget (internal/stage), so it must not
// hide another row's failure that should spend it: otherwise a row failing
// with a 5xx next to a throttled one would be retried for ever.
func charged(prev, next error) error {
	if prev == nil {
		return next
	}
	if !spendsBudget(prev) {
		return next
	}
	return prev
}

// spendsBudget reports whether the stage runner charges a failure to the
// attempt budget: all but RATE_LIMITED, AWAITING_EVIDENCE and
// QUOTA_EXHAUSTED, which it defers (package stage).
func spendsBudget(err error) bool {
	c := retry.Classify(err).Class
	return c != retry.RateLimited && c != retry.AwaitingEvidence && c != retry.QuotaExhausted
}

func newToken() string {
	b := make([]byte, 12)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
