package notify

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/criticizer/criticizer/internal/critic"
	"github.com/criticizer/criticizer/internal/delivery"
	"github.com/criticizer/criticizer/internal/digest"
	"github.com/criticizer/criticizer/internal/mail"
	"github.com/criticizer/criticizer/internal/obs"
	"github.com/criticizer/criticizer/internal/prefs"
	"github.com/criticizer/criticizer/internal/retry"
	"github.com/criticizer/criticizer/internal/store"
	"github.com/criticizer/criticizer/internal/unsubscribe"
)

// The daily digest (R-DIGEST-*) is a delivery row, not a copy of one. Here
// is only what comes before a claim:
//
//   - a version's row for a reader on daily delivery (or on mixed, for a
//     critique with no error as they are mailed it) is settled digested,
//     naming the digest it goes into, and its id is added to that
//     digest's row, which the first entry creates open (the digest
//     gate, gate_digest.go);
//   - a digest due is closed by the notify message the sweeper sends
//     for it: its message rendered once from what it gathered, in one
//     write that fails if an entry came in meanwhile (handleDigest).
//
// From the claim on, a digest row goes through deliver like any row: the
// same claim under a lease, the send with its id as the SES tag, the
// mark in one write, a lost answer settled by provider evidence
// (feedback), the sweeper's picks of stuck sends and sent rows without
// evidence.

// handleDigest carries a digest on from the notify message the sweeper
// sends when it is due (job.TaskDigest): an open one is closed, its
// message rendered from what it gathered; then it is delivered as every
// row is (deliver: claim, send, mark, or settle from evidence). A digest
// not due yet, gone, or settled is left as it is.
func (n *Notify) handleDigest(ctx context.Context, id string) error {
	g := n.Gates.digest
	if g == nil {
		n.Log.WarnContext(ctx, "a digest message, but this notifier keeps no digests; dropped", "digest_id", id)
		return nil
	}
	stored, err := n.Deliveries.Get(ctx, id)
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		return err
	}
	r, kind := delivery.AsDigest(stored)
	if err != nil || kind != nil {
		n.Log.WarnContext(ctx, "a digest message for no digest; dropped", "digest_id", id)
		return nil
	}
	for range 3 {
		if r.Status != delivery.StatusOpen {
			break
		}
		if g.now().Before(r.DueAt) {
			n.Log.InfoContext(ctx, "digest not due yet; the sweeper hands it back when it is", "digest_id", id, "due_at", r.DueAt)
			return nil
		}
		next, err := n.closeDigest(ctx, g, r)
		// An entry came in since it was read: close it again as it is.
		next, _, err = n.current(ctx, id, next, err)
		if err != nil {
			return err
		}
		r = delivery.DigestRow{Row: next}
	}
	if r.Status == delivery.StatusOpen {
		return retry.Transient(retry.Conflict, fmt.Errorf("digest %s kept gathering entries while it was closed", id))
	}
	sent, err := n.deliver(ctx, r.Row, &evidenceView{n: n})
	if r.NotifiedAt.IsZero() && !sent.NotifiedAt.IsZero() {
		obs.Metric(ctx, n.Log, map[string]string{"Function": "notify"}, map[string]float64{"DigestsSent": 1})
		n.Log.InfoContext(ctx, "digest sent", "digest_id", id, "entries", len(sent.Entries), "period", sent.Period)
	}
	return err
}

// closeDigest closes an open digest that is due, as it was read: sent to
// nobody when its reader's domain is no longer allowed, the address is
// suppressed or the reader left every email; settled
// skipped_empty when nothing it gathered is left to show; otherwise
// pending with its message, rendered now, once (R-OUTBOX-2).
func (n *Notify) closeDigest(ctx context.Context, g *DigestGate, r delivery.DigestRow) (delivery.Row, error) {
	rid := unsubscribe.RecipientID(r.Recipient)
	st := delivery.Standing{Preferences: prefs.Default().Normalized()}
	if n.Recipients != nil {
		sts, err := n.Recipients.Standings(ctx, []string{rid})
		if err != nil {
			return r.Row, err
		}
		if s, ok := sts[rid]; ok {
			st = s
		}
	}
	var c store.DigestClose
	var sel digest.Selection
	switch {
	case n.Gates.domain != nil && !n.Gates.domain.Allows(r.Recipient):
		// The operator narrowed the allowed domains since the entries
		// came in (R-RECIPIENT-1).
		c = store.DigestClose{Status: delivery.StatusSkippedDomain, Reason: skipReasonDomain}
	case st.Suppressed:
		c = store.DigestClose{Status: delivery.StatusSuppressed, Reason: st.Reason}
	case st.Preferences.UnsubscribedAll:
		c = store.DigestClose{Status: delivery.StatusSkippedUnsubscribed, Reason: "all"}
	default:
		var msg delivery.Message
		var err error
		if msg, sel, err = n.renderDigest(ctx, r, st.Preferences); err != nil {
			return r.Row, err
		}
		c = store.DigestClose{Status: delivery.StatusPending, Message: msg}
		if sel.Empty() {
			c = store.DigestClose{Status: delivery.StatusSkippedEmpty,
				Reason: fmt.Sprintf("nothing to show: %d muted, %d superseded", sel.Muted, sel.Superseded)}
		}
	}
	got, err := g.digests.CloseDigest(ctx, r.ID, len(r.Entries), c)
	if err != nil {
		return got, err
	}
	n.Log.InfoContext(ctx, "digest closed", "digest_id", r.ID, "status", got.Status, "entries", len(r.Entries),
		"changelists", sel.Changelists(), "muted", sel.Muted, "superseded", sel.Superseded, "not_shown", sel.More)
	counts := map[string]float64{"DigestEntries": float64(len(r.Entries)), "DigestChangelistsNotShown": float64(sel.More)}
	if got.Status != delivery.StatusPending {
		counts["DigestsNotSent"] = 1
	}
	obs.Metric(ctx, n.Log, map[string]string{"Function": "notify"}, counts)
	return got, nil
}

// renderDigest renders digest r for a reader with preferences p: what
// digest.Select shows of its entries, each changelist's newest version
// gathered with its critique as the reader would be mailed it — the
// deployment's and the repository's minimum severity, the reader's own,
// and the findings they marked wrong left out (R-REPO-5, R-VOTE-3).
func (n *Notify) renderDigest(ctx context.Context, r delivery.DigestRow, p prefs.Preferences) (delivery.Message, digest.Selection, error) {
	ids := slices.Sorted(slices.Values(r.Entries))
	entries, err := n.Deliveries.GetMany(ctx, ids)
	if err != nil {
		return delivery.Message{}, digest.Selection{}, err
	}
	reached, err := n.reachedSince(ctx, r.Recipient, entries)
	if err != nil {
		return delivery.Message{}, digest.Selection{}, err
	}
	muted, err := n.mutedByReply(ctx, r.Recipient, entries)
	if err != nil {
		return delivery.Message{}, digest.Selection{}, err
	}
	sel := digest.Select(entries, func(cl string) bool {
		source, id, _ := strings.Cut(cl, ":")
		return p.Stops(unsubscribe.Repository(source, id)) || muted[cl]
	}, func(cl string, _ int) bool { return reached[cl] })
	versions := map[string]int{}
	for _, e := range entries {
		versions[e.ChangelistKey]++
	}
	rid := unsubscribe.RecipientID(r.Recipient)
	now := n.Now().UTC()
	// The preference link names no repository: a digest is about many.
	d := mail.DigestData{Date: r.Period, More: sel.More, ListID: n.ListID,
		UnsubscribeURL: n.Signer.URL(n.PublicURL, rid, unsubscribe.ScopeAll),
		PreferencesURL: n.Prefs.URL(n.PublicURL, rid, "", now.Add(prefs.LinkLifetime)),
		// "wrong N" works on a digest too: its key names the digest,
		// whose message names each finding's version row (R-DIGEST-6).
		ReplyTo: n.replyTo(r.ID, now)}
	for _, e := range sel.Shown {
		j, err := n.Jobs.Get(ctx, e.JobID)
		if err != nil {
			return delivery.Message{}, sel, fmt.Errorf("digest %s: job %s: %w", r.ID, e.JobID, err)
		}
		var c critic.Critique
		if err := json.Unmarshal(j.Critique, &c); err != nil {
			return delivery.Message{}, sel, retry.Permanent(retry.SchemaInvalid, fmt.Errorf("job %s critique: %w", j.ID, err))
		}
		c = n.belowMinSeverity(ctx, j, c)
		c, _ = critic.DropBelow(c, critic.Severity(p.MinSeverity))
		marks, err := n.readDismissed(ctx, e.ChangelistKey, j.ReviewVersion, []string{r.Recipient}, c)
		if err != nil {
			return delivery.Message{}, sel, err
		}
		c, hidden := marks.forRecipient(r.Recipient, c)
		d.Items = append(d.Items, mail.DigestItem{Source: j.Source, ChangelistID: j.ChangelistID, Repository: j.Repository, ReviewVersion: j.ReviewVersion,
			Versions: versions[e.ChangelistKey], Title: j.Title, URL: j.URL, Author: j.Author, Critique: c, Hidden: hidden,
			Votes: n.voteLinks(e.ID, now), DeliveryID: e.ID})
	}
	if sel.Empty() {
		return delivery.Message{}, sel, nil
	}
	msg, err := n.Renderer.RenderDigest(d)
	if err != nil {
		return delivery.Message{}, sel, retry.Permanent(retry.RuntimeBug, err)
	}
	return msg, sel, nil
}

// mutedByReply reports which of the digest's changelists its reader
// muted by replying "mute" to one of their emails (R-REPLY-7): a mute
// that came after the version went into the digest still leaves the
// changelist out. One read per changelist the digest gathered (at most
// digest.MaxEntries); no mute gate, nothing muted.
func (n *Notify) mutedByReply(ctx context.Context, rcpt string, entries []delivery.Row) (map[string]bool, error) {
	if n.Gates.mute == nil {
		return nil, nil
	}
	rid := unsubscribe.RecipientID(rcpt)
	muted := map[string]bool{}
	for _, e := range entries {
		if _, seen := muted[e.ChangelistKey]; seen {
			continue
		}
		m, err := n.Gates.mute.mutes.Muted(ctx, e.ChangelistKey, []string{rid})
		if err != nil {
			return nil, fmt.Errorf("digest: mutes of %s: %w", e.ChangelistKey, err)
		}
		muted[e.ChangelistKey] = m[rid]
	}
	return muted, nil
}

// reachedSince reports, per changelist, whether a version newer than the
// newest one the digest gathered reached the reader on its own (mixed
// mode mails an error at once): their row of one of the next
// digest.LookAhead versions was sent and not undone since by a Reject or
// a bounce, or settled because they had its content
// (delivery.Row.Reached, R-QUIET-4). One read for the whole digest
// (GetMany).
func (n *Notify) reachedSince(ctx context.Context, rcpt string, entries []delivery.Row) (map[string]bool, error) {
	newest := map[string]int{}
	for _, e := range entries {
		newest[e.ChangelistKey] = max(newest[e.ChangelistKey], e.ReviewVersion)
	}
	var ids []string
	for cl, v := range newest {
		for w := v + 1; w <= v+digest.LookAhead; w++ {
			ids = append(ids, delivery.ID(cl, rcpt, w))
		}
	}
	slices.Sort(ids)
	later, err := n.Deliveries.GetMany(ctx, ids)
	if err != nil {
		return nil, err
	}
	reached := map[string]bool{}
	for _, l := range later {
		if l.Reached() {
			reached[l.ChangelistKey] = true
		}
	}
	return reached, nil
}
