package pipeline

import (
	"context"
	"errors"
	"fmt"

	"github.com/criticizer/criticizer/internal/job"
	"github.com/criticizer/criticizer/internal/obs"
	"github.com/criticizer/criticizer/internal/source"
	"github.com/criticizer/criticizer/internal/store"
)

// maxOrderComparisons bounds the heads a pending head is compared with:
// the pending ones just below it, down to the first in order. Past it the
// head counts as placed (the newest), as it would before R-SOURCE-6.
const maxOrderComparisons = 8

// maxOrderReads bounds the head records read on the way (heads already
// found behind are passed over without a comparison).
const maxOrderReads = 4 * maxOrderComparisons

// order settles the place of a head intake placed pending — drawn as the
// newest version because its event did not say what it follows — before
// its version is reviewed (R-SOURCE-6). Intake holds no code host
// credentials and answers without waiting for the host; the fetch stage
// holds them, and its retries (R-STAGE-1, R-STAGE-2) carry a host that
// does not answer: the event is never lost, the version waits.
//
// The head is compared, through the source (source.Orderer: GitHub's
// compare status, GitLab's merge request versions), with the head
// versioned just before it (HeadRecord.After), and while that one is
// pending too, with the one before it, down to one in order; heads
// already settled behind are passed over. Behind (or the same commit as)
// any of them, the head is behind: it returns the reason the job is
// skipped for, and the job mails no one — a version that cannot reach its
// readers, so the older version is mailed in its stead (R-QUIET-3).
// Ahead of or diverged from each (a force-push that left them off the
// branch), it is in order and reviewed. The verdict is recorded with one
// write from pending, so a retry, or another fetch of the same head,
// reads the verdict rather than asking again.
//
// A head in order from the start, one placed before heads were ordered,
// and a rerun of a head (an explicit version of its own) are reviewed as
// they are. The comparisons together are bounded by one
// source.FileRequestTimeout.
func (f *Fetch) order(ctx context.Context, j job.Job, ref source.Ref) (string, error) {
	o, ok := f.Source.(source.Orderer)
	if f.Heads == nil || !ok || ref.HeadSHA == "" || (j.Source != "github" && j.Source != "gitlab") {
		return "", nil
	}
	h, err := f.Heads.Head(ctx, j.Source, j.ChangelistID, ref.HeadSHA)
	if errors.Is(err, store.ErrNotFound) || (err == nil && h.Version != j.ReviewVersion) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	switch h.Order {
	case store.HeadBehind:
		return behindReason(0), nil // settled by an earlier attempt
	case store.HeadPending:
	default:
		return "", nil
	}
	verdict, behind, err := f.compareBelow(ctx, o, j, ref, h)
	if err != nil {
		return "", err
	}
	got, err := f.Heads.SettleHead(ctx, j.Source, j.ChangelistID, ref.HeadSHA, verdict)
	if err != nil {
		return "", err
	}
	obs.Metric(ctx, f.Log, map[string]string{"Source": j.Source, "Outcome": string(got.Order)}, map[string]float64{"HeadOrderChecks": 1})
	if got.Order == store.HeadBehind {
		f.Log.InfoContext(ctx, "the code host places this head behind a versioned one; its version is skipped", "job_id", j.ID)
		return behindReason(behind), nil
	}
	return "", nil
}

// compareBelow is order's comparisons: the verdict, and the version the
// head is behind when it is.
func (f *Fetch) compareBelow(ctx context.Context, o source.Orderer, j job.Job, ref source.Ref, h store.HeadRecord) (store.HeadOrder, int, error) {
	ctx, cancel := context.WithTimeout(ctx, source.FileRequestTimeout)
	defer cancel()
	prev, compared := h.After, 0
	for reads := 0; prev != ""; reads++ {
		if compared >= maxOrderComparisons || reads >= maxOrderReads {
			f.Log.WarnContext(ctx, "a pending head compared with the most heads it may be; it is reviewed as placed", "job_id", j.ID)
			break
		}
		p, err := f.Heads.Head(ctx, j.Source, j.ChangelistID, prev)
		if errors.Is(err, store.ErrNotFound) {
			break
		}
		if err != nil {
			return "", 0, err
		}
		if p.Order == store.HeadBehind {
			prev = p.After // behind another head: that one is the rival
			continue
		}
		st, err := o.Standing(ctx, ref, prev)
		if err != nil {
			return "", 0, err
		}
		compared++
		if st == source.Behind || st == source.Identical {
			return store.HeadBehind, p.Version, nil
		}
		if p.Ordered() {
			break
		}
		prev = p.After
	}
	return store.HeadOrdered, 0, nil
}

// behindReason is a skipped job's reason (job.Job.Skipped).
func behindReason(behind int) string {
	if behind > 0 {
		return fmt.Sprintf("the code host places this head commit behind version %d's; a newer version is reviewed instead", behind)
	}
	return "the code host places this head commit behind a newer version's; that one is reviewed instead"
}
