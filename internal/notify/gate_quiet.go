package notify

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"

	"github.com/criticizer/criticizer/internal/critic"
	"github.com/criticizer/criticizer/internal/delivery"
	"github.com/criticizer/criticizer/internal/job"
	"github.com/criticizer/criticizer/internal/obs"
	"github.com/criticizer/criticizer/internal/store"
)

// QuietConfig is what the quiet gate is built from (NewQuietGate).
type QuietConfig struct {
	// Versions reads the changelist's head and keeps the versions of each
	// diff content (store.Jobs; memstore.Jobs in tests). Required.
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

// QuietGate keeps the notifier from mailing a recipient nothing new
// (R-QUIET-1..3) on the versions Criticizer derives from a code host's
// events; an explicit version is mailed to everyone (R-RERUN-2). A
// deployment that mails every version lists no quiet gate.
type QuietGate struct {
	versions            Versions
	mailSameDiff        bool
	mailUnchangedReruns bool
	judge               func(newer job.Job, r delivery.Row, ok bool) delivery.Successor
}

// NewQuietGate builds the quiet gate.
func NewQuietGate(c QuietConfig) (*QuietGate, error) {
	if c.Versions == nil {
		return nil, errors.New("quiet gate: no versions to read")
	}
	g := &QuietGate{versions: c.Versions, mailSameDiff: c.MailSameDiff, mailUnchangedReruns: c.MailUnchangedReruns, judge: c.Judge}
	if g.judge == nil {
		g.judge = delivery.Judge
	}
	return g, nil
}

// SetJudge replaces the rule that says what a newer version is to a
// recipient of an older one: the explorer puts back the rules it
// replaced, to show that it catches them. Nothing else calls it.
func (g *QuietGate) SetJudge(judge func(newer job.Job, r delivery.Row, ok bool) delivery.Successor) {
	g.judge = judge
}

func (*QuietGate) rank() int    { return 3 }
func (*QuietGate) name() string { return "quiet" }

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

// decide takes the quiet rules' decisions, before any claim, on the rows
// of recipients this version has nothing new for: a diff the recipient
// was mailed already (R-QUIET-1), a rerun that found nothing new
// (R-QUIET-2), a newer version that reached them (R-QUIET-3); each rule
// judges the rows the one before left. It leaves in run.Wait the rows to
// leave unclaimed for now: a newer version may still reach their
// recipients.
//
// The diff's versions are recorded on every run, before any send and
// whatever the version, so a later version finds this one whatever
// happens to its rows. Only a quiet version's rows are settled quietly:
// an explicit one's recipients are all mailed (R-RERUN-2).
//
// Each quiet settlement stands on the row it rests on, in one
// transaction that fails when that row no longer carries it (a Reject or
// a bounce recorded on it since it was read, R-QUIET-4): the settle loop
// then asks again, from the rows as they are now.
func (g *QuietGate) decide(ctx context.Context, run *Run) (decider, error) {
	j := run.Job
	run.Wait = waiting{}
	clKey := job.ChangelistKey(j.Source, j.ChangelistID)
	var same []int
	if j.DiffSHA256 != "" {
		vs, err := g.versions.SameDiff(ctx, clKey, j.DiffSHA256, j.ReviewVersion)
		if err != nil {
			return nil, err
		}
		for _, v := range vs {
			if v < j.ReviewVersion {
				same = append(same, v)
			}
		}
		same = same[max(0, len(same)-sameDiffLookBack):]
	}
	if !j.Quiet() || !run.anyUnsent() {
		return nil, nil
	}
	decided := map[string]Decision{} // by row id
	left := func(r delivery.VersionRow) bool { return r.Unsent() && decided[r.ID].Status == "" }
	anyLeft := func() bool { return slices.ContainsFunc(run.Rows, left) }
	if len(same) > 0 && !g.mailSameDiff {
		had, err := hadContent(ctx, run, clKey, left, same)
		if err != nil {
			return nil, err
		}
		for _, r := range run.Rows {
			if v, ok := had[r.Recipient]; ok && left(r) {
				decided[r.ID] = quietly(run, delivery.StatusSkippedSameDiff, "same diff as v"+strconv.Itoa(v), delivery.ID(clKey, r.Recipient, v))
			}
		}
	}
	if !g.mailUnchangedReruns && anyLeft() {
		if since := nothingNewSince(run.Critique); since > 0 {
			had, err := hadContent(ctx, run, clKey, left, []int{since})
			if err != nil {
				return nil, err
			}
			for _, r := range run.Rows {
				if _, ok := had[r.Recipient]; ok && left(r) {
					decided[r.ID] = quietly(run, delivery.StatusSkippedNothingNew, "nothing new since v"+strconv.Itoa(since),
						delivery.ID(clKey, r.Recipient, since))
				}
			}
		}
	}
	if anyLeft() {
		if err := g.supersede(ctx, run, left, decided); err != nil {
			return nil, err
		}
	}
	if len(decided) == 0 {
		return nil, nil
	}
	return func(r delivery.VersionRow) Decision { return decided[r.ID] }, nil
}

// quietly is the decision to settle a row quietly as status, standing on
// the recipient's row standsOn (the version that reached them, or whose
// content they had).
func quietly(run *Run, status delivery.Status, reason, standsOn string) Decision {
	return Decision{Status: status, Reason: reason, StandsOn: standsOn,
		then: func(ctx context.Context, got delivery.VersionRow) (delivery.VersionRow, error) {
			run.log.InfoContext(ctx, "delivery settled quietly", "delivery_id", got.ID, "job_id", run.Job.ID, "status", status, "reason", reason)
			obs.Metric(ctx, run.log, map[string]string{"Status": string(status)}, map[string]float64{"QuietDeliveries": 1})
			return got, nil
		}}
}

// supersede applies R-QUIET-3 to the run's rows left: each is judged
// against the newer quiet versions of the changelist (the head and up to
// newerLookBack below it, newest first; an explicit version supersedes
// nothing) by what each is to the row's recipient (delivery.Judge). A row
// a newer version reached is settled superseded, naming the newest that
// did; a row that one may still reach is left unclaimed, in run.Wait,
// for it; a row no newer version can reach is left to be mailed — the
// newest version that can be, once. So a version is never settled
// superseded in favour of one that then fails (a budget refusal, a
// settings skip, a dead letter, a permanent rejection, the recipient
// skipped for it).
func (g *QuietGate) supersede(ctx context.Context, run *Run, left func(delivery.VersionRow) bool, decided map[string]Decision) error {
	j := run.Job
	head, _, err := g.versions.LatestVersion(ctx, j.Source, j.ChangelistID)
	if errors.Is(err, store.ErrNotFound) || (err == nil && head <= j.ReviewVersion) {
		return nil
	}
	if err != nil {
		return err
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
	for v := head; v > j.ReviewVersion && v > head-newerLookBack; v-- {
		var ids []string
		for _, r := range run.Rows {
			if left(r) && !reached[r.ID] {
				ids = append(ids, delivery.ID(clKey, r.Recipient, v))
			}
		}
		if len(ids) == 0 {
			break // every row has a newer version that reached its recipient
		}
		newer, err := run.jobs.Get(ctx, job.NewID(j.Source, j.ChangelistID, v))
		if errors.Is(err, store.ErrNotFound) {
			continue // no such version (a gap, or expired)
		}
		if err != nil {
			return fmt.Errorf("newer version %d of %s: %w", v, j.ID, err)
		}
		if !newer.Quiet() {
			continue // an explicit version supersedes nothing (R-RERUN-2)
		}
		got, err := run.deliveries.GetMany(ctx, ids)
		if err != nil {
			return err
		}
		byRcpt := make(map[string]delivery.Row, len(got))
		for _, r := range got {
			byRcpt[r.Recipient] = r
		}
		for _, r := range run.Rows {
			if !left(r) || reached[r.ID] {
				continue
			}
			nr, ok := byRcpt[r.Recipient]
			s := g.judge(newer, nr, ok)
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
				run.Wait.undecided(newer.CreatedAt)
			}
		}
	}
	for _, r := range run.Rows {
		if !left(r) {
			continue
		}
		switch d := delivery.Supersede(judged[r.ID]); {
		case d.By > 0:
			decided[r.ID] = quietly(run, delivery.StatusSuperseded, "v"+strconv.Itoa(d.By), delivery.ID(clKey, r.Recipient, d.By))
		case d.Wait:
			run.Wait.hold(r.ID)
		case gone[r.ID] > 0:
			// Nothing can reach the address: settled suppressed, as the
			// feedback function's revive of a row that stood on the
			// bounced one is (R-QUIET-4), never mailed.
			decided[r.ID] = Decision{Status: delivery.StatusSuppressed, Reason: fmt.Sprintf("v%d bounced for good", gone[r.ID])}
		}
	}
	return nil
}

// hadContent reads the rows of the given earlier versions for the
// recipient of every row left to judge and returns, per recipient, the
// latest of those versions whose content the recipient has
// (delivery.Row.Reached: sent and not undone since by a Reject or a
// bounce, R-QUIET-4).
func hadContent(ctx context.Context, run *Run, clKey string, left func(delivery.VersionRow) bool, versions []int) (map[string]int, error) {
	var ids []string
	for _, r := range run.Rows {
		if left(r) {
			for _, v := range versions {
				ids = append(ids, delivery.ID(clKey, r.Recipient, v))
			}
		}
	}
	earlier, err := run.deliveries.GetMany(ctx, ids)
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
