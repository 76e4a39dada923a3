package pipeline

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/criticizer/criticizer/internal/critic"
	"github.com/criticizer/criticizer/internal/delivery"
	"github.com/criticizer/criticizer/internal/job"
	"github.com/criticizer/criticizer/internal/obs"
	"github.com/criticizer/criticizer/internal/store"
)

// Quiet keeps the notifier from mailing a recipient nothing new
// (R-QUIET-1..3) on the versions Criticizer derives from a code host's
// events; an explicit version is mailed to everyone (R-RERUN-2). Nil on
// Notify: every version is mailed.
type Quiet struct {
	// Store reads the changelist's head and keeps the versions of each
	// diff content (store.Jobs; memstore.Jobs in tests).
	Store QuietStore
	// MailSameDiff mails a version whose diff content the recipient was
	// mailed before (R-QUIET-1 off).
	MailSameDiff bool
	// MailUnchangedReruns mails a rerun that found nothing new (R-QUIET-2
	// off).
	MailUnchangedReruns bool
}

// QuietStore is what the quiet rules read and record in the jobs table.
type QuietStore interface {
	LatestVersion(ctx context.Context, source, changelistID string) (int, job.ID, error)
	SameDiff(ctx context.Context, changelistKey, diffSHA string, version int) ([]int, error)
}

// sameDiffLookBack bounds how many earlier versions with the same diff
// content are read for a recipient: rows settled as skipped_same_diff
// count as having the content, so the latest few speak for the rest.
const sameDiffLookBack = 10

// quiet settles, before any claim, the rows of recipients this version
// has nothing new for: superseded by a newer version (R-QUIET-3), a diff
// the recipient was mailed already (R-QUIET-1), a rerun that found
// nothing new (R-QUIET-2). Like gate it touches only rows never sent
// (delivery.Row.Unsent), each with one conditional write that fails on a
// row claimed meanwhile; rows is updated in place.
//
// The diff's versions are recorded on every run, before any send and
// whatever the version, so a later version finds this one whatever
// happens to its rows. Only a quiet version's rows are settled quietly:
// an explicit one's recipients are all mailed (R-RERUN-2).
func (n *Notify) quiet(ctx context.Context, j job.Job, c critic.Critique, rows []delivery.Row) error {
	q := n.Quiet
	if q == nil {
		return nil
	}
	clKey := job.ChangelistKey(j.Source, j.ChangelistID)
	var same []int
	if j.DiffSHA256 != "" {
		vs, err := q.Store.SameDiff(ctx, clKey, j.DiffSHA256, j.ReviewVersion)
		if err != nil {
			return err
		}
		for _, v := range vs {
			if v < j.ReviewVersion {
				same = append(same, v)
			}
		}
		same = same[max(0, len(same)-sameDiffLookBack):]
	}
	if !j.Quiet() || !anyUnsent(rows) {
		return nil
	}
	if newer, err := n.newerVersion(ctx, j); err != nil {
		return err
	} else if newer > 0 {
		return n.settleQuietly(ctx, j, rows, func(delivery.Row) (delivery.Status, string) {
			return delivery.StatusSuperseded, "v" + strconv.Itoa(newer)
		})
	}
	if len(same) > 0 && !q.MailSameDiff {
		had, err := n.hadContent(ctx, clKey, rows, same)
		if err != nil {
			return err
		}
		if err := n.settleQuietly(ctx, j, rows, func(r delivery.Row) (delivery.Status, string) {
			if v, ok := had[r.Recipient]; ok {
				return delivery.StatusSkippedSameDiff, "same diff as v" + strconv.Itoa(v)
			}
			return "", ""
		}); err != nil {
			return err
		}
	}
	if q.MailUnchangedReruns || !anyUnsent(rows) {
		return nil
	}
	since := nothingNewSince(c)
	if since == 0 {
		return nil
	}
	had, err := n.hadContent(ctx, clKey, rows, []int{since})
	if err != nil {
		return err
	}
	return n.settleQuietly(ctx, j, rows, func(r delivery.Row) (delivery.Status, string) {
		if _, ok := had[r.Recipient]; ok {
			return delivery.StatusSkippedNothingNew, "nothing new since v" + strconv.Itoa(since)
		}
		return "", ""
	})
}

func anyUnsent(rows []delivery.Row) bool {
	for _, r := range rows {
		if r.Unsent() {
			return true
		}
	}
	return false
}

// newerVersion is the changelist's head version when it is newer than
// j's, else 0. A head that will mail no one supersedes nothing, so the
// older version's email goes out: a head dead-lettered (its email may
// never go out), refused by a budget or with nobody to read it
// (R-BUDGET-1, R-BUDGET-2), or skipped by its repository's settings
// (R-REPO-4); nor does an explicit head (R-RERUN-2).
func (n *Notify) newerVersion(ctx context.Context, j job.Job) (int, error) {
	latest, id, err := n.Quiet.Store.LatestVersion(ctx, j.Source, j.ChangelistID)
	if errors.Is(err, store.ErrNotFound) || (err == nil && latest <= j.ReviewVersion) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	head, err := n.Jobs.Get(ctx, id)
	if errors.Is(err, store.ErrNotFound) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("newer version of %s: %w", j.ID, err)
	}
	switch {
	case head.Status == job.StatusDeadLettered, head.Status == job.StatusBudgetExceeded,
		head.Status == job.StatusNoRecipients, head.Skipped != "", !head.Quiet():
		return 0, nil
	}
	return latest, nil
}

// hadContent reads the rows of the given earlier versions for every
// unsent row's recipient and returns, per recipient, the latest of those
// versions whose content the recipient has had (delivery.Row.HasContent).
func (n *Notify) hadContent(ctx context.Context, clKey string, rows []delivery.Row, versions []int) (map[string]int, error) {
	var ids []string
	for _, r := range rows {
		if r.Unsent() {
			for _, v := range versions {
				ids = append(ids, delivery.ID(clKey, r.Recipient, v))
			}
		}
	}
	earlier, err := n.Deliveries.GetMany(ctx, ids)
	if err != nil {
		return nil, err
	}
	had := map[string]int{}
	for _, e := range earlier {
		if e.HasContent() && e.ReviewVersion > had[e.Recipient] {
			had[e.Recipient] = e.ReviewVersion
		}
	}
	return had, nil
}

// nothingNewSince is the version whose review c found nothing new
// against, or 0: a versioned rerun compared with an earlier version
// (critique Changes, R-MAIL-3) with no new finding and none resolved. An
// operator's rerun is explicit, mailed to everyone (R-RERUN-2).
func nothingNewSince(c critic.Critique) int {
	if ch := c.Changes; ch != nil && ch.New == 0 && ch.ResolvedCount == 0 && ch.Since > 0 {
		return ch.Since
	}
	return 0
}

// settleQuietly settles each unsent row that decide gives a status as
// that status, without a send: one conditional write each (store Skip:
// only while the row is claimable and carries no sign of a send), so a
// row another notifier claimed meanwhile keeps its course and is taken
// as it is now.
func (n *Notify) settleQuietly(ctx context.Context, j job.Job, rows []delivery.Row, decide func(delivery.Row) (delivery.Status, string)) error {
	for i, r := range rows {
		if !r.Unsent() {
			continue
		}
		status, reason := decide(r)
		if status == "" {
			continue
		}
		got, err := n.Deliveries.Skip(ctx, r.ID, status, reason)
		got, _, err = n.current(ctx, r.ID, got, err)
		if err != nil {
			return err
		}
		rows[i] = got
		if got.Status == status {
			n.Log.InfoContext(ctx, "delivery settled quietly", "delivery_id", r.ID, "job_id", j.ID, "status", status, "reason", reason)
			obs.Metric(ctx, n.Log, map[string]string{"Status": string(status)}, map[string]float64{"QuietDeliveries": 1})
		}
	}
	return nil
}
