package notify

import (
	"context"
	"strconv"

	"github.com/criticizer/criticizer/internal/critic"
	"github.com/criticizer/criticizer/internal/delivery"
	"github.com/criticizer/criticizer/internal/job"
	"github.com/criticizer/criticizer/internal/unsubscribe"
	"github.com/criticizer/criticizer/internal/vote"
)

// Dismissals reads readers' marks on a changelist's findings
// (store.Dismissals).
type Dismissals interface {
	Marks(ctx context.Context, changelistKey string, recipientIDs []string) (map[string]vote.Marks, error)
}

// dismissed is what notify knows of the recipients' marks on a version's
// findings (R-VOTE-3), read once per run before any row is rendered.
type dismissed map[string]vote.Marks // by unsubscribe.RecipientID

// readDismissed reads every recipient's marks on the changelist in one
// read (BatchGetItem), or nothing: no store, no finding to hide, or
// version 1, a changelist's first (versions start at 1): a mark comes
// from a vote on an email of the changelist, so a reader with one has
// their row of that version already, and only later versions' rows are
// rendered after it. A changelist's first review costs no read.
func (n *Notify) readDismissed(ctx context.Context, clKey string, version int, recipients []string, c critic.Critique) (dismissed, error) {
	if n.Dismissals == nil || version <= 1 || len(c.Findings) == 0 || len(recipients) == 0 {
		return nil, nil
	}
	ids := make([]string, len(recipients))
	for i, r := range recipients {
		ids[i] = unsubscribe.RecipientID(r)
	}
	m, err := n.Dismissals.Marks(ctx, clKey, ids)
	return dismissed(m), err
}

// forRecipient is the critique as recipient rcpt is mailed it: without
// the findings they marked wrong while the lines those flag, and the
// lines around them, are unchanged (critic.SameKey: a line with the same
// text elsewhere is another finding, and shows), and how many were
// hidden. A finding with no key (no line text or place) is never hidden.
func (d dismissed) forRecipient(rcpt string, c critic.Critique) (critic.Critique, int) {
	m := d[unsubscribe.RecipientID(rcpt)]
	if len(m) == 0 {
		return c, 0
	}
	return critic.Hide(c, func(f critic.Finding) bool {
		k := critic.SameKey(f)
		return k != "" && m.Dismissed(k)
	})
}

// nothingNewFor is the version a compared critique found news against
// (new findings, or resolved ones), when none of that news reaches the
// recipient and none was resolved for them, else 0: R-QUIET-2's "nothing
// new", as that recipient is mailed the version. mailed is c as they are
// mailed it: without the findings they marked wrong (forRecipient,
// R-VOTE-3) and those below their own minimum severity (R-PREF-3), whose
// resolved findings below it are not news to them either; a finding they
// doubted that was fixed still is. A version with no news at all is
// R-QUIET-2's for every recipient (the quiet gate). Off with the quiet
// rules, with R-QUIET-2 off, and for a version the quiet rules do not
// judge (an explicit version, a generic caller's or an operator's rerun,
// is mailed to everyone: R-RERUN-2).
func (n *Notify) nothingNewFor(j job.Job, c, mailed critic.Critique) int {
	if q, ok := n.Gates.Quiet(); !ok || q.mailUnchangedReruns || !j.Quiet() {
		return 0
	}
	ch, mch := c.Changes, mailed.Changes
	if ch == nil || mch == nil || ch.Since <= 0 || (ch.New == 0 && ch.ResolvedCount == 0) || mch.New != 0 || mch.ResolvedCount != 0 {
		return 0
	}
	return ch.Since
}

// settleNothingNewFor settles, as it creates them, the rows of recipients
// for whom the version holds nothing new (nothingNewFor: only findings
// they marked wrong or below their minimum are new), when they had the
// content of the version compared with (delivery.Row.Reached, as R-QUIET-2
// asks): skipped_nothing_new, never sent, standing on that version's row
// (Row.StandsOn: created in one transaction with it, R-QUIET-4). The
// decision is taken once, when the row is created with the message it was
// rendered from, so a vote or a preference saved later changes neither
// (R-OUTBOX-2). rows are the rows to be created, in place.
func (n *Notify) settleNothingNewFor(ctx context.Context, clKey string, rows []delivery.Row, since map[string]int) error {
	if len(since) == 0 {
		return nil
	}
	var ids []string
	for _, r := range rows {
		if v := since[r.Recipient]; v > 0 {
			ids = append(ids, delivery.ID(clKey, r.Recipient, v))
		}
	}
	earlier, err := n.Deliveries.GetMany(ctx, ids)
	if err != nil {
		return err
	}
	had := map[string]bool{}
	for _, e := range earlier {
		if e.Reached() && e.ReviewVersion == since[e.Recipient] {
			had[e.Recipient] = true
		}
	}
	for i, r := range rows {
		if had[r.Recipient] {
			rows[i].Status = delivery.StatusSkippedNothingNew
			rows[i].SkipReason = "nothing new since v" + strconv.Itoa(since[r.Recipient]) + " for this reader (marked wrong, or below their minimum)"
			rows[i].StandsOn = delivery.ID(clKey, r.Recipient, since[r.Recipient])
		}
	}
	return nil
}
