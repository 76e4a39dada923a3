package notify

import (
	"context"
	"errors"

	"github.com/criticizer/criticizer/internal/critic"
	"github.com/criticizer/criticizer/internal/delivery"
	"github.com/criticizer/criticizer/internal/job"
	"github.com/criticizer/criticizer/internal/mail"
	"github.com/criticizer/criticizer/internal/obs"
	"github.com/criticizer/criticizer/internal/prefs"
	"github.com/criticizer/criticizer/internal/retry"
	"github.com/criticizer/criticizer/internal/store"
	"github.com/criticizer/criticizer/internal/unsubscribe"
)

// ensureRows creates one delivery row per recipient before any send, each with
// its rendered message (R-OUTBOX-1). Existing rows are returned as stored.
//
// A reviewer the fetch stage found no address for gets a row too, keyed by
// its "<source>:<username>" identity, created terminal as skipped_no_email:
// it is never sent (no address is ever guessed), and it counts as settled
// when the job is finalized.
func (n *Notify) ensureRows(ctx context.Context, j job.Job, c critic.Critique, standings map[string]delivery.Standing) ([]delivery.Row, error) {
	clKey := job.ChangelistKey(j.Source, j.ChangelistID)
	repo := unsubscribe.Repository(j.Source, j.ChangelistID)
	data := mail.Data{Source: j.Source, ChangelistID: j.ChangelistID, Repository: j.Repository, ReviewVersion: j.ReviewVersion, Title: j.Title,
		URL: j.URL, Author: j.Author, Critique: c}
	data.ListID = n.ListID
	// The subject names the conversation's title, the body j's own
	// (R-THREAD-1).
	var err error
	if data.ThreadTitle, err = n.threadTitle(ctx, j); err != nil {
		return nil, err
	}
	var noEmail []string
	if j.Source != "generic" {
		if noEmail, err = n.Jobs.NoEmailReviewers(ctx, j.ID); err != nil {
			return nil, err
		}
	}
	now := n.Now().UTC()
	floor := n.minSeverity(j)
	recipients := j.AllRecipients()
	// Each recipient's marks, read before any row is rendered (R-VOTE-3).
	marks, err := n.readDismissed(ctx, clKey, j.ReviewVersion, recipients, c)
	if err != nil {
		return nil, err
	}
	fresh := make([]delivery.Row, 0, len(recipients))
	quietSince := map[string]int{}
	for _, rcpt := range recipients {
		// Rendered per recipient: the footer carries the recipient's own
		// unsubscribe link, and the findings they marked wrong are left
		// out. A row that exists keeps the bytes it was created with
		// (Ensure does not overwrite), whatever was voted since.
		rid := unsubscribe.RecipientID(rcpt)
		data.UnsubscribeURL = n.Signer.URL(n.PublicURL, rid, repo)
		data.PreferencesURL = n.Prefs.URL(n.PublicURL, rid, repo, now.Add(prefs.LinkLifetime))
		data.Votes = n.voteLinks(delivery.ID(clKey, rcpt, j.ReviewVersion), now)
		data.ReplyTo = n.replyTo(delivery.ID(clKey, rcpt, j.ReviewVersion), now)
		data.Thread, data.Reason = n.Threads.Root(clKey, rcpt), reason(j, rcpt)
		data.Critique, data.Hidden = marks.forRecipient(rcpt, c)
		// The reader's own minimum narrows what the floor lets through,
		// never widens it (R-PREF-3); the email says how many it left out.
		data.LeftOut, data.LeftOutBelow = 0, ""
		if own := ownMinimum(floor, standings[rid].Preferences); own != "" {
			data.Critique, data.LeftOut = critic.LeaveOutBelow(data.Critique, own)
			if data.LeftOut > 0 {
				data.LeftOutBelow = string(own)
			}
		}
		// Whether the version holds anything new for the reader is judged
		// on what they are mailed of it: not the findings they marked
		// wrong, nor those below their own minimum (R-QUIET-2).
		since := n.nothingNewFor(j, c, data.Critique)
		msg, err := n.Renderer.Render(data)
		if err != nil {
			return nil, retry.Permanent(retry.RuntimeBug, err)
		}
		r := delivery.NewVersionRow(j.ID, clKey, rcpt, j.ReviewVersion, msg, now).Row
		if since > 0 {
			quietSince[r.Recipient] = since
		}
		if data.LeftOut > 0 {
			n.Log.InfoContext(ctx, "findings left out by the recipient's minimum severity", "delivery_id", r.ID, "job_id", j.ID,
				"min_severity", data.LeftOutBelow, "left_out", data.LeftOut)
			obs.Metric(ctx, n.Log, nil, map[string]float64{"FindingsLeftOutByPreference": float64(data.LeftOut)})
		}
		fresh = append(fresh, r)
	}
	if err := n.settleNothingNewFor(ctx, clKey, fresh, quietSince); err != nil {
		return nil, err
	}
	rows := make([]delivery.Row, 0, len(recipients)+len(noEmail))
	for _, r := range fresh {
		got, created, err := n.Deliveries.Ensure(ctx, r)
		if errors.Is(err, store.ErrNotReached) {
			// The version it would stand on was undone since it was read
			// (a Reject, a bounce, R-QUIET-4): the reader does not have
			// it, and this version is news to them.
			r.Status, r.SkipReason, r.StandsOn = delivery.StatusPending, "", ""
			got, created, err = n.Deliveries.Ensure(ctx, r)
		}
		if err != nil {
			return nil, err
		}
		if created && got.Status == delivery.StatusSkippedNothingNew {
			n.Log.InfoContext(ctx, "delivery settled quietly", "delivery_id", r.ID, "job_id", j.ID, "status", got.Status, "reason", got.SkipReason)
			obs.Metric(ctx, n.Log, map[string]string{"Status": string(got.Status)}, map[string]float64{"QuietDeliveries": 1})
		}
		rows = append(rows, got)
	}
	for _, who := range noEmail {
		r := delivery.NoEmailRow(j.ID, clKey, who, j.ReviewVersion, now).Row
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

// readStandings reads every recipient's suppression and preference
// record in one read (BatchGetItem), before any row is rendered; nil
// without a store. A recipient absent from the answer has the defaults.
func (n *Notify) readStandings(ctx context.Context, j job.Job) (map[string]delivery.Standing, error) {
	if n.Recipients == nil {
		return nil, nil
	}
	var ids []string
	for _, r := range j.AllRecipients() {
		ids = append(ids, unsubscribe.RecipientID(r))
	}
	if len(ids) == 0 {
		return nil, nil
	}
	return n.Recipients.Standings(ctx, ids)
}
