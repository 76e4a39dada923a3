package notify

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	"github.com/criticizer/criticizer/internal/delivery"
	"github.com/criticizer/criticizer/internal/obs"
	"github.com/criticizer/criticizer/internal/retry"
)

// claimSendMark claims, sends and marks one row. again reports that the
// claim lost to a change of the row (another worker, provider evidence
// recorded since it was read): row is the row as it is now, to decide on.
func (n *Notify) claimSendMark(ctx context.Context, r delivery.Row) (row delivery.Row, again bool, err error) {
	sendCtx, cancel, ok := n.sendWindow(ctx)
	if !ok {
		// Too little of the invocation is left to send and then mark: a
		// send whose mark could not be written would be held for evidence.
		// Nothing was claimed; the runner defers the message.
		return r, false, retry.WithRetryAfter(retry.Transient(retry.RateLimited, fmt.Errorf("delivery %s: too little time left in the invocation to send and mark", r.ID)), time.Second)
	}
	defer cancel()
	if n.Pacer != nil {
		// The send rate's slot first, the claim second: the claim is the
		// last check that no evidence names the row, so nothing may wait
		// between it and the send.
		if err := n.Pacer.Wait(sendCtx); err != nil {
			return r, false, err
		}
	}
	token := n.token(ctx)
	claimed, err := n.Deliveries.Claim(ctx, r.ID, token, n.Lease)
	// Someone else changed it since we read it (another worker, or a
	// provider event that settles it): decide again on the row as it is.
	claimed, lost, err := n.current(ctx, r.ID, claimed, err)
	if err != nil {
		return r, false, err
	}
	if lost {
		return claimed, true, nil
	}
	msgID, sendErr := n.Sender.Send(sendCtx, claimed.ID, claimed.Recipient, claimed.Message)
	if sendErr != nil {
		row, err := n.sendFailed(ctx, claimed, token, sendErr)
		return row, false, err
	}
	row, err = n.mark(ctx, claimed, token, msgID)
	return row, false, err
}

// sendWindow returns the context a send runs under: its own timeout, and
// enough of the invocation kept back to mark the row afterwards. ok=false:
// the invocation is too close to its deadline to start a send.
func (n *Notify) sendWindow(ctx context.Context) (context.Context, context.CancelFunc, bool) {
	timeout := cmp.Or(n.SendTimeout, defaultSendTimeout)
	if d, ok := ctx.Deadline(); ok {
		// The stage's clock, as the runner's deadline checks read it
		// (the explorer's is virtual; Lambda's the wall clock).
		left := d.Sub(n.Now())
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
func (n *Notify) sendFailed(ctx context.Context, claimed delivery.Row, token string, sendErr error) (delivery.Row, error) {
	cls := retry.Classify(sendErr)
	var notSent *delivery.NotSentError
	if sendMayHaveHappened(cls.Class) && !errors.As(sendErr, &notSent) {
		// A timeout, a dropped connection or a 5xx: SES may have accepted
		// the message. The row stays `sending` under our lease, and is
		// settled from provider evidence before any resend
		// (R-OUTBOX-6, R-OUTBOX-10): held, not released.
		n.Log.WarnContext(ctx, "send may have reached the provider; held for provider evidence",
			"delivery_id", claimed.ID, "error_class", cls.Class, "error", sendErr)
		return claimed, awaitingEvidence(claimed.ID, claimed.LeaseUntil.Sub(n.Now()), sendErr)
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
		return released, nil
	}
	return released, sendErr
}

// mark records the provider's acceptance: one write sets notification_id,
// notified_at and status=sent. It runs on a context that survives the
// invocation's deadline (the send window kept time for it): a message id
// SES returned is never thrown away. The SDK retries the write; if it
// still fails, the row stays `sending` and is backfilled from the send's
// provider event, and the message id is logged for the operator.
func (n *Notify) mark(ctx context.Context, claimed delivery.Row, token, msgID string) (delivery.Row, error) {
	mctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cmp.Or(n.MarkTimeout, defaultMarkTimeout))
	defer cancel()
	marked, err := n.Deliveries.MarkSent(mctx, claimed.ID, token, msgID)
	if err != nil {
		n.Log.ErrorContext(ctx, "provider accepted the send but the row could not be marked; it will be settled from provider evidence",
			"delivery_id", claimed.ID, "provider_message_id", msgID, "error", err)
		return claimed, awaitingEvidence(claimed.ID, claimed.LeaseUntil.Sub(n.Now()), fmt.Errorf("mark %s sent: %w", claimed.ID, err))
	}
	if marked.ProviderMessageID != "" && marked.ProviderMessageID != msgID {
		// Evidence of another send of this row came in while this one was
		// in flight (an event late beyond the margin): two emails.
		n.duplicate(ctx, marked, msgID)
	}
	n.Log.InfoContext(ctx, "delivery sent", "delivery_id", marked.ID, "job_id", marked.JobID, "attempts", marked.Attempts)
	return marked, nil
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

// token returns a fresh claim token or probe id.
func (n *Notify) token(ctx context.Context) string {
	if n.Tokens != nil {
		return n.Tokens(ctx)
	}
	return newToken()
}

func newToken() string {
	b := make([]byte, 12)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
