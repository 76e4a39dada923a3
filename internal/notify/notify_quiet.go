package notify

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/criticizer/criticizer/internal/critic"
	"github.com/criticizer/criticizer/internal/delivery"
	"github.com/criticizer/criticizer/internal/job"
	"github.com/criticizer/criticizer/internal/obs"
	"github.com/criticizer/criticizer/internal/retry"
	"github.com/criticizer/criticizer/internal/store"
)

// Quiet keeps the notifier from mailing a recipient nothing new
// (R-QUIET-1..3) on the versions Criticizer derives from a code host's
// events; an explicit version is mailed to everyone (R-RERUN-2). Nil on
// Notify: every version is mailed.
type Quiet struct {
	// Versions reads the changelist's head and keeps the versions of each
	// diff content (store.Jobs; memstore.Jobs in tests).
	Versions Versions
	// MailSameDiff mails a version whose diff content the recipient was
	// mailed before (R-QUIET-1 off).
	MailSameDiff bool
	// MailUnchangedReruns mails a rerun that found nothing new (R-QUIET-2
	// off).
	MailUnchangedReruns bool
	// Judge says what a newer version is to a recipient of an older one
	// (delivery.Judge when nil). It is a field so that internal/explore
	// can put back the rule it replaced and show that the explorer
	// catches it; nothing else sets it.
	Judge func(newer job.Job, r delivery.Row, ok bool) delivery.Successor
}

// Versions is what the quiet rules read and record in the jobs table
// (store.Jobs). A role interface because the explorer interposes on
// these calls (its quietStore).
type Versions interface {
	LatestVersion(ctx context.Context, source, changelistID string) (int, job.ID, error)
	SameDiff(ctx context.Context, changelistKey, diffSHA string, version int) ([]int, error)
}

// sameDiffLookBack bounds how many earlier versions with the same diff
// content are read for a recipient: rows settled as skipped_same_diff
// count as having the content, so the latest few speak for the rest.
const sameDiffLookBack = 10

// newerLookBack bounds how many versions below the changelist's head an
// older version's rows are judged against (R-QUIET-3): a version further
// below is mailed unless one of those reached, or may still reach, its
// recipient.
const newerLookBack = 10

// quiet settles, before any claim, the rows of recipients this version
// has nothing new for: a diff the recipient was mailed already
// (R-QUIET-1), a rerun that found nothing new (R-QUIET-2), a newer
// version that reached them (R-QUIET-3). Like gate it touches only rows
// never sent (delivery.Row.Unsent), each with one conditional write that
// fails on a row claimed meanwhile; rows is updated in place. It returns
// the rows to leave unclaimed for now: a newer version may still reach
// their recipients.
//
// The diff's versions are recorded on every run, before any send and
// whatever the version, so a later version finds this one whatever
// happens to its rows. Only a quiet version's rows are settled quietly:
// an explicit one's recipients are all mailed (R-RERUN-2).
//
// Each quiet settlement stands on the row it rests on, in one
// transaction that fails when that row no longer carries it (a Reject or
// a bounce recorded on it since it was read, R-QUIET-4): the decision is
// then taken again from the rows as they are now.
func (n *Notify) quiet(ctx context.Context, j job.Job, c critic.Critique, rows []delivery.Row) (waiting, error) {
	if n.Quiet == nil {
		return waiting{}, nil
	}
	for range 3 {
		w, err := n.quietOnce(ctx, j, c, rows)
		if !errors.Is(err, store.ErrNotReached) {
			return w, err
		}
		n.Log.InfoContext(ctx, "a quiet settlement lost the row it stood on; deciding again", "job_id", j.ID, "error", err)
	}
	return waiting{}, retry.Transient(retry.Conflict, fmt.Errorf("job %s: the rows its quiet settlements stand on keep changing", j.ID))
}

// quietOnce takes quiet's decisions once, from the rows as read.
func (n *Notify) quietOnce(ctx context.Context, j job.Job, c critic.Critique, rows []delivery.Row) (waiting, error) {
	q := n.Quiet
	clKey := job.ChangelistKey(j.Source, j.ChangelistID)
	var same []int
	if j.DiffSHA256 != "" {
		vs, err := q.Versions.SameDiff(ctx, clKey, j.DiffSHA256, j.ReviewVersion)
		if err != nil {
			return waiting{}, err
		}
		for _, v := range vs {
			if v < j.ReviewVersion {
				same = append(same, v)
			}
		}
		same = same[max(0, len(same)-sameDiffLookBack):]
	}
	if !j.Quiet() || !anyUnsent(rows) {
		return waiting{}, nil
	}
	if len(same) > 0 && !q.MailSameDiff {
		had, err := n.hadContent(ctx, clKey, rows, same)
		if err != nil {
			return waiting{}, err
		}
		if err := n.settleQuietly(ctx, j, rows, func(r delivery.Row) (delivery.Status, string, int) {
			if v, ok := had[r.Recipient]; ok {
				return delivery.StatusSkippedSameDiff, "same diff as v" + strconv.Itoa(v), v
			}
			return "", "", 0
		}); err != nil {
			return waiting{}, err
		}
	}
	if !q.MailUnchangedReruns && anyUnsent(rows) {
		if since := nothingNewSince(c); since > 0 {
			had, err := n.hadContent(ctx, clKey, rows, []int{since})
			if err != nil {
				return waiting{}, err
			}
			if err := n.settleQuietly(ctx, j, rows, func(r delivery.Row) (delivery.Status, string, int) {
				if _, ok := had[r.Recipient]; ok {
					return delivery.StatusSkippedNothingNew, "nothing new since v" + strconv.Itoa(since), since
				}
				return "", "", 0
			}); err != nil {
				return waiting{}, err
			}
		}
	}
	if !anyUnsent(rows) {
		return waiting{}, nil
	}
	return n.supersede(ctx, j, rows)
}

func anyUnsent(rows []delivery.Row) bool {
	for _, r := range rows {
		if r.Unsent() {
			return true
		}
	}
	return false
}

// supersede applies R-QUIET-3 to j's unsent rows: each is judged against
// the newer quiet versions of the changelist (the head and up to
// newerLookBack below it, newest first; an explicit version supersedes
// nothing) by what each is to the row's recipient (delivery.Judge). A row
// a newer version reached is settled superseded, naming the newest that
// did; a row that one may still reach is left unclaimed and returned to
// wait for it; a row no newer version can reach is left to be mailed —
// the newest version that can be, once. So a version is never settled
// superseded in favour of one that then fails (a budget refusal, a
// settings skip, a dead letter, a permanent rejection, the recipient
// skipped for it).
func (n *Notify) supersede(ctx context.Context, j job.Job, rows []delivery.Row) (waiting, error) {
	head, _, err := n.Quiet.Versions.LatestVersion(ctx, j.Source, j.ChangelistID)
	if errors.Is(err, store.ErrNotFound) || (err == nil && head <= j.ReviewVersion) {
		return waiting{}, nil
	}
	if err != nil {
		return waiting{}, err
	}
	judge := n.Quiet.Judge
	if judge == nil {
		judge = delivery.Judge
	}
	clKey := job.ChangelistKey(j.Source, j.ChangelistID)
	judged := map[string]map[int]delivery.Successor{} // by row id
	reached := map[string]bool{}
	// gone: a newer version's mail to the row's recipient bounced for
	// good, the version named. The address is gone (R-EVIDENCE-6), though
	// the feedback function may not have suppressed it yet: the bounce is
	// recorded on the row before the address is suppressed, and this
	// notifier read the recipients' standings before either.
	gone := map[string]int{}
	var w waiting
	for v := head; v > j.ReviewVersion && v > head-newerLookBack; v-- {
		var ids []string
		for _, r := range rows {
			if r.Unsent() && !reached[r.ID] {
				ids = append(ids, delivery.ID(clKey, r.Recipient, v))
			}
		}
		if len(ids) == 0 {
			break // every row has a newer version that reached its recipient
		}
		newer, err := n.Jobs.Get(ctx, job.NewID(j.Source, j.ChangelistID, v))
		if errors.Is(err, store.ErrNotFound) {
			continue // no such version (a gap, or expired)
		}
		if err != nil {
			return waiting{}, fmt.Errorf("newer version %d of %s: %w", v, j.ID, err)
		}
		if !newer.Quiet() {
			continue // an explicit version supersedes nothing (R-RERUN-2)
		}
		got, err := n.Deliveries.GetMany(ctx, ids)
		if err != nil {
			return waiting{}, err
		}
		byRcpt := make(map[string]delivery.Row, len(got))
		for _, r := range got {
			byRcpt[r.Recipient] = r
		}
		for _, r := range rows {
			if !r.Unsent() || reached[r.ID] {
				continue
			}
			nr, ok := byRcpt[r.Recipient]
			s := judge(newer, nr, ok)
			if ok && !nr.BouncedAt.IsZero() && nr.BounceType == "Permanent" && gone[r.ID] == 0 {
				gone[r.ID] = v
			}
			if judged[r.ID] == nil {
				judged[r.ID] = map[int]delivery.Successor{}
			}
			judged[r.ID][v] = s
			switch s {
			case delivery.Reached:
				reached[r.ID] = true
			case delivery.Undecided:
				w.undecided(newer.CreatedAt)
			}
		}
	}
	by := map[string]int{}
	for i, r := range rows {
		if !r.Unsent() {
			continue
		}
		switch d := delivery.Supersede(judged[r.ID]); {
		case d.By > 0:
			by[r.ID] = d.By
		case d.Wait:
			w.hold(r.ID)
		case gone[r.ID] > 0:
			// Nothing can reach the address: settled suppressed, as the
			// feedback function's revive of a row that stood on the
			// bounced one is (R-QUIET-4), never mailed.
			got, err := n.Deliveries.Skip(ctx, r.ID, delivery.StatusSuppressed, fmt.Sprintf("v%d bounced for good", gone[r.ID]))
			if rows[i], _, err = n.current(ctx, r.ID, got, err); err != nil {
				return waiting{}, err
			}
		}
	}
	if len(by) > 0 {
		if err := n.settleQuietly(ctx, j, rows, func(r delivery.Row) (delivery.Status, string, int) {
			if v, ok := by[r.ID]; ok {
				return delivery.StatusSuperseded, "v" + strconv.Itoa(v), v
			}
			return "", "", 0
		}); err != nil {
			return waiting{}, err
		}
	}
	return w, nil
}

// hadContent reads the rows of the given earlier versions for every
// unsent row's recipient and returns, per recipient, the latest of those
// versions whose content the recipient has (delivery.Row.Reached: sent
// and not undone since by a Reject or a bounce, R-QUIET-4).
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
		if e.Reached() && e.ReviewVersion > had[e.Recipient] {
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
// that status, without a send, standing on the recipient's row of the
// version decide names (the one that reached them, or whose content they
// had): one transaction each (store SettleQuiet: only while the row is
// claimable and carries no sign of a send, and the row it stands on still
// carries it), so a row another notifier claimed meanwhile keeps its
// course and is taken as it is now. store.ErrNotReached: a row stood on
// was undone since it was read; the caller decides again.
func (n *Notify) settleQuietly(ctx context.Context, j job.Job, rows []delivery.Row, decide func(delivery.Row) (delivery.Status, string, int)) error {
	for i, r := range rows {
		if !r.Unsent() {
			continue
		}
		status, reason, on := decide(r)
		if status == "" {
			continue
		}
		got, err := n.Deliveries.SettleQuiet(ctx, r.ID, status, reason, delivery.ID(r.ChangelistKey, r.Recipient, on))
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
